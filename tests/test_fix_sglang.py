"""``flagtrace fix`` on the real SGLang 0.5.9 (slow: it analyses the whole package).

SGLang 0.5.9's ``enable_piecewise_cuda_graph`` and
``enable_piecewise_cuda_graph_compile`` set their flag, ``yield`` and reset it
to ``False`` outside any ``finally`` (FT101, FT102); SGLang fixed this by hand
one release later. The fix must repair both, compile, change no other line of
the file (the diff below is the whole change), and leave no FT101/FT102 there.

The package is copied first: the download cache under ``.cache`` is never
edited. The check after the write analyses only ``sglang/srt/compilation``:
FT101 and FT102 are judged inside the setter itself, and modules are named
from their topmost package, so the qualnames are the same as in a whole run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import analyze
from flagtrace.cache import SummaryCache
from flagtrace.fix import plan_fixes, write_changes
from tests.registry import REPO

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

pytestmark = pytest.mark.slow

PCM = "sglang.srt.compilation.piecewise_context_manager"
FILE = "sglang/srt/compilation/piecewise_context_manager.py"
FLAGS = ["_in_piecewise_cuda_graph", "_in_pcg_torch_compile"]

#: The whole change, as ``flagtrace fix`` prints it from the directory holding ``sglang/``.
EXPECTED_DIFF = REPO / "fixtures" / "fix" / "sglang_0_5_9.diff"


def test_fix_repairs_the_piecewise_setters_and_nothing_else(
    registry: PytestRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = registry.download("sglang==0.5.9")
    shutil.copytree(root / "sglang", tmp_path / "sglang")
    monkeypatch.chdir(tmp_path)
    original = (tmp_path / FILE).read_bytes()

    plan = plan_fixes(["sglang"], FLAGS, cache=SummaryCache(None))
    assert plan.errors == ()
    assert plan.not_fixed == ()
    (change,) = plan.changes
    assert change.path == FILE
    assert sorted(change.functions) == [
        f"{PCM}.enable_piecewise_cuda_graph",
        f"{PCM}.enable_piecewise_cuda_graph_compile",
    ]
    assert change.diff() == EXPECTED_DIFF.read_text(encoding="utf-8")
    compile(change.after, FILE, "exec", dont_inherit=True)

    assert write_changes(plan) == []
    assert (tmp_path / FILE).read_bytes() == change.after != original
    assert (root / FILE).read_bytes() == original  # the cached download is untouched

    report = analyze(["sglang/srt/compilation"], FLAGS)
    assert report.errors == ()
    left = [
        (h.code, h.function)
        for f in report.flags
        for h in f.hazards
        if h.code in ("FT101", "FT102") and h.function in change.functions
    ]
    assert left == []
