"""A hazard rests only on calls flagtrace is sure of: what running the code says.

``fixtures/flags/inferred_helper`` has three context managers that call into a
setter: ``flushed()`` and ``traced_by_hook()`` through ``run_hook(hook)``, whose
``hook`` value flow binds to both callers' arguments (an inferred hop), and
``traced()`` through a direct call. Running them (a subprocess of our own, on a copy
of the fixture: flagtrace never imports what it analyses) shows which leave the flag
set; flagtrace must not report FT103 on one that does not. The rule has a cost, and
this test states it too: ``traced_by_hook()`` is sticky when run and is not reported.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from flagtrace.api import analyze
from flagtrace.model import HazardKind

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "flags" / "inferred_helper"
MANAGERS = ("flushed", "traced_by_hook", "traced")

_RUN = """
import json
from pkg import state
left_set = {}
for name in %r:
    state._tracing = False
    with getattr(state, name)():
        pass
    left_set[name] = state._tracing
print(json.dumps(left_set))
"""


def _left_set_when_run(root: Path) -> dict[str, bool]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN % (MANAGERS,)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, bool] = json.loads(out.stdout)
    return answer


def test_no_sticky_hazard_that_a_run_does_not_show(tmp_path: Path) -> None:
    root = tmp_path / "case"
    shutil.copytree(FIXTURE, root)
    truth = _left_set_when_run(root)
    assert truth == {"flushed": False, "traced_by_hook": True, "traced": True}

    report = analyze([str(root)], ["_tracing"], ["pkg.app.step"], jobs=1)
    sticky = {
        h.function.rpartition(".")[2]
        for h in report.flags[0].hazards
        if h.kind is HazardKind.STICKY and h.function.rpartition(".")[2] in MANAGERS
    }
    # every sticky context manager reported leaves the flag set when run
    assert all(truth[name] for name in sticky)
    # the merged parameter alone would make ``flushed`` sticky: it is not reported
    assert "flushed" not in sticky
    # the direct call is proof
    assert "traced" in sticky
    # the cost: a real sticky manager whose only chain is inferred is not judged
    assert "traced_by_hook" not in sticky


def test_the_verdict_still_follows_the_inferred_hop_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "case"
    shutil.copytree(FIXTURE, root)
    report = analyze([str(root)], ["_tracing"], ["pkg.app.step"], jobs=1)
    (verdict,) = report.flags[0].entries
    assert verdict.observes_set
    assert verdict.evidence.value == "inferred"
    hop = [s for s in verdict.witness if s.callee == "pkg.state.start_tracing"]
    assert hop and hop[0].resolution is not None and hop[0].resolution.value == "inferred"
