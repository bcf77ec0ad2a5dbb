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
