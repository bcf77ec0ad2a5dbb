"""Build a git repository whose first commit holds SGLang 0.5.8 and whose second holds
0.5.9, both as published (wheels from the registry, ``pip download --no-deps`` through
``tests.registry``), for ``flagtrace review sglang --base HEAD~1`` on a real change.

Only the ``sglang/`` package of each wheel is committed (the ``.dist-info`` differs in
name between versions and holds no Python). Nothing is imported or run; the wheels are
only unpacked. Checked before this was written: 0.5.8's
``sglang/srt/distributed/parallel_state.py`` has no ``is_in_piecewise_cuda_graph``,
0.5.9's calls it in ``GroupCoordinator.all_reduce`` (line 616).

Usage, from the repository root::

    python benchmarks/sglang_review_repo.py DEST            # builds DEST (must not exist)
    cd DEST && flagtrace review sglang --base HEAD~1 --flag _in_piecewise_cuda_graph \\
        --entry sglang.srt.speculative.eagle_worker.EAGLEWorker.verify
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.registry import REPO, Registry  # noqa: E402
from tests.reviewrepo import sglang_repo  # noqa: E402


def build(dest: Path, registry: Registry | None = None) -> Path:
    """``dest`` as a new repository: commit 1 is sglang 0.5.8, commit 2 sglang 0.5.9."""
    return sglang_repo(dest, (registry or Registry(REPO / ".cache")).download)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="where to create the repository (must not exist)")
    args = parser.parse_args()
    if args.dest.exists():
        parser.error(f"{args.dest} exists")
    print(build(args.dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
