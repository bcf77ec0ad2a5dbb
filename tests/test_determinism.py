"""The same input gives the same call graph in every process.

Resolution meets recursive lookups and cuts the cycle; which way it cuts used
to follow the iteration order of sets of names, that is Python's per-process
string-hash seed, and the CLI re-executed itself with ``PYTHONHASHSEED=0`` to
hide it. Now values are visited in a fixed order inside ``resolve``, so the
library API gives one answer whatever the seed. Checked here on every fixture
package (fast), and on SGLang in ``tests/test_sglang.py`` (slow).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.registry import REPO

#: every fixture tree's call graph (PyCG format) through the library API, as
#: one JSON document on stdout
_SCRIPT = """
import json, sys
from flagtrace.api import callgraph_pycg
print(json.dumps({root: callgraph_pycg([root]) for root in sys.argv[1:]}, sort_keys=True))
"""


def test_every_fixture_call_graph_is_the_same_under_different_hash_seeds() -> None:
    roots = sorted(str(p) for p in (REPO / "fixtures" / "flags").iterdir() if p.is_dir())
    roots += sorted(str(p) for p in (REPO / "fixtures" / "soundness").iterdir() if p.is_dir())
    outputs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, *roots],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        outputs.add(done.stdout)
    assert len(roots) > 20
    assert len(outputs) == 1, "the call graph depends on the hash seed"


#: which scopes a later round resolves again, when ``outer`` and the function it
#: nests both gained parameter values: printed as one line per seed
_AFFECTED = """
import sys
from flagtrace.api import load_project
from flagtrace.resolve import Program, Resolver
resolver = Resolver(Program(load_project([sys.argv[1]], jobs=1).summaries))
resolver.run()
print(sorted(resolver._affected_by({"pkg.a.outer", "pkg.a.outer.inner"})))
"""


def test_a_later_round_resolves_the_callers_of_every_changed_function_whatever_the_seed(
    tmp_path: Path,
) -> None:
    """``inner`` is nested in ``outer``, and both gained values: ``user`` calls
    ``inner`` (through ``HANDLER``) and not ``outer``, so it must be resolved
    again. The rounds used to skip the callers of a changed function that was
    nested in another changed one visited first, in the order of a set of
    names: under some hash seeds ``user`` was left out, and two runs of
    transformers resolved different call graphs."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "def outer(x=None):\n"
        "    def inner(y):\n"
        "        return y\n"
        "    return inner\n"
        "\n"
        "HANDLER = outer(1)\n"
    )
    (package / "b.py").write_text("from pkg.a import HANDLER\n\ndef user():\n    HANDLER(2)\n")
    outputs = set()
    for seed in map(str, range(8)):
        done = subprocess.run(
            [sys.executable, "-c", _AFFECTED, str(package)],
            env=dict(os.environ, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1, outputs
    assert "'pkg.b.user'" in outputs.pop()


#: every fixture file's summary digest (what the result cache keys on), one line
_DIGESTS = """
import sys
from pathlib import Path
from flagtrace.discover import discover
from flagtrace.index import index_file
for root in sys.argv[1:]:  # one at a time: every fixture has its own ``pkg``
    for source in discover([root], ()).files:
        print(source.path, index_file(source).digest)
"""


def test_a_summary_pickles_to_the_same_bytes_whatever_the_hash_seed() -> None:
    """A set in a summary would pickle in the seed's order: every run would then
    miss the result cache (a comment, answered from the stored report in a
    fraction of a second, cost a whole resolution on SGLang)."""
    roots = sorted(str(p) for p in (REPO / "fixtures" / "flags").iterdir() if p.is_dir())
    outputs = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", _DIGESTS, *roots],
            env=dict(os.environ, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        outputs.add(done.stdout)
    (digests,) = outputs
    assert digests.count("\n") > 200
    assert " None" not in digests
