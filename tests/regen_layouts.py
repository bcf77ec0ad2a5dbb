"""Write, or check, the golden *layouts* of a few flag fixtures: what a person reads.

``tests/regen_goldens.py`` pins what flagtrace finds (the JSON report); this script pins how
the human formats lay it out, so a change of wording, order, wrapping or shortening shows as
a diff to review. For each case in ``LAYOUT_CASES`` it writes, beside the case's
``expected.json``:

* ``layout/rich-80.txt`` and ``layout/rich-120.txt``: ``flagtrace . ARGS`` at 80 and 120
  columns, written to a pipe (not a terminal, so no colour: as in a pre-commit or CI log);
* ``layout/concise.txt``: ``flagtrace . ARGS --format concise``.

The one value that changes from run to run, the seconds in the rich report's last line, is
set to 0.0. Usage (from the repository root)::

    python tests/regen_layouts.py            # rewrite the layouts
    python tests/regen_layouts.py --check    # compare only; exit 1 and print diffs

Only the standard library and ``tests.regen_goldens`` are imported: flagtrace runs as a
subprocess, as a user runs it.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.regen_goldens import CASES, Case  # noqa: E402

#: Cases whose layout is pinned: the SGLang story (named entries, a 12-step witness, both
#: hazards), discovery (witnesses chosen), ties (several read/setter groups) and a sticky setter.
LAYOUT_CASES = (
    "sglang_story",
    "entry_discovery",
    "witness_ties",
    "sticky_setter",
    "assume_prunes_guard",
    "evidence_grades",  # every grade, and a setter's setting hops indented under its step
)
#: file name -> (format, columns)
LAYOUTS = {
    "rich-80.txt": ("rich", 80),
    "rich-120.txt": ("rich", 120),
    "concise.txt": ("concise", 80),
}
_SECONDS = re.compile(r"analysed in \d+\.\ds$", re.MULTILINE)


def render(case: Case, fmt: str, columns: int, cache_dir: Path) -> str:
    """The text ``flagtrace . ARGS --format FMT`` writes to a pipe ``columns`` wide."""
    env = dict(os.environ, FLAGTRACE_CACHE_DIR=str(cache_dir), COLUMNS=str(columns))
    for name in ("FORCE_COLOR", "TERM", "CLICOLOR_FORCE"):
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    command = [sys.executable, "-m", "flagtrace", ".", *case.args, "--format", fmt, "-q"]
    done = subprocess.run(
        command, cwd=case.root, env=env, capture_output=True, text=True, encoding="utf-8"
    )
    if done.returncode != case.exit_code:
        raise SystemExit(
            f"{case.name}: exit {done.returncode}, expected {case.exit_code}\n{done.stderr}"
        )
    return _SECONDS.sub("analysed in 0.0s", done.stdout)


def differences(cases: Sequence[str] = LAYOUT_CASES, write: bool = False) -> list[str]:
    """A unified diff for every layout that differs from its golden (written when ``write``)."""
    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="flagtrace-layouts-") as cache:
        for name in cases:
            case = Case.load(CASES / name)
            for file_name, (fmt, columns) in LAYOUTS.items():
                golden_path = case.root / "layout" / file_name
                got = render(case, fmt, columns, Path(cache))
                golden = golden_path.read_text(encoding="utf-8") if golden_path.is_file() else ""
                if got == golden:
                    continue
                if write:
                    golden_path.parent.mkdir(exist_ok=True)
                    golden_path.write_text(got, encoding="utf-8")
                    print(f"wrote {golden_path}")
                    continue
                diff = difflib.unified_diff(
                    golden.splitlines(keepends=True),
                    got.splitlines(keepends=True),
                    f"{name}/layout/{file_name} (golden)",
                    f"{name}: flagtrace . {' '.join(case.args)} --format {fmt}, {columns} columns",
                )
                found.append("".join(diff))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a diff")
    args = parser.parse_args(argv)
    found = differences(write=not args.check)
    for diff in found:
        print(diff)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
