"""Write, or check, the golden report of every flag fixture.

Each ``fixtures/flags/<case>/`` is a mini project (``pkg/...``) with two files beside it:

* ``case.json``, written by hand: ``{"description": ..., "args": [...], "exit_code": N}``, the
  question the case asks (``--flag``, ``--entry``...) and the exit code it must end with;
* ``expected.json``, written by this script: the whole report that
  ``cd fixtures/flags/<case> && flagtrace . ARGS --format json`` prints, with ``stats.seconds``
  set to 0.0 (the one value that changes from run to run). Running from the case directory makes
  every path in it relative to the case, so the golden does not depend on the checkout.

Why whole reports: a hand-written partial expectation only checks what its author thought of;
a golden shows every change of any finding, witness step, guard or message as a diff, and the
reviewer of that diff decides whether it is a fix or a regression.

Usage (from the repository root)::

    python tests/regen_goldens.py            # rewrite every expected.json
    python tests/regen_goldens.py --check    # compare only; exit 1 and print diffs on a difference
    python tests/regen_goldens.py CASE...    # only these cases

The same for the `flagtrace scan` cases under ``fixtures/scan/<case>`` (same files; the command
is ``flagtrace scan . ARGS --format json``), and for the `check` cases under
``fixtures/hostile/<case>``, whose code carries markup, escapes and long lines.

flagtrace runs as a subprocess (``python -m flagtrace``), so the code that produces the goldens
is whichever ``flagtrace`` the environment imports (``PYTHONPATH`` chooses a checkout), and the
run gets the fixed hash seed of a real command line. Only the standard library is imported here:
``tests/test_flag_fixtures.py`` uses the same functions.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "fixtures" / "flags"
#: ``flagtrace scan`` cases, laid out the same way; their command is ``flagtrace scan . ARGS``.
SCAN_CASES = REPO / "fixtures" / "scan"
#: ``flagtrace check`` cases whose code is hostile to the reporters (markup, escapes, long
#: lines; issue 13): the same layout, and ``tests/test_hostile.py`` renders them in every format.
HOSTILE_CASES = REPO / "fixtures" / "hostile"
CASE_FILE = "case.json"
GOLDEN_FILE = "expected.json"
#: The keys of a case.json, all required: a typo fails loudly instead of asking less.
CASE_KEYS = frozenset({"description", "args", "exit_code"})
ERROR_PREFIX = "flagtrace: error: "


@dataclass(frozen=True, slots=True)
class Case:
    """One ``fixtures/flags/<name>`` directory: its hand-written question and its golden."""

    name: str
    root: Path
    description: str
    args: tuple[str, ...]
    exit_code: int

    @classmethod
    def load(cls, root: Path) -> Case:
        """Read ``root/case.json``; a missing, extra or mistyped key is a ``ValueError``."""
        spec = json.loads((root / CASE_FILE).read_text(encoding="utf-8"))
        if not isinstance(spec, dict) or set(spec) != CASE_KEYS:
            keys = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
            raise ValueError(f"{root / CASE_FILE}: keys must be {sorted(CASE_KEYS)}, got {keys}")
        description, args, exit_code = spec["description"], spec["args"], spec["exit_code"]
        if not (
            isinstance(description, str)
            and isinstance(args, list)
            and all(isinstance(a, str) for a in args)
            and isinstance(exit_code, int)
        ):
            raise ValueError(
                f"{root / CASE_FILE}: description must be a string, args a list of strings, "
                "exit_code an integer"
            )
        return cls(root.name, root, description, tuple(args), exit_code)

    @property
    def golden(self) -> Path:
        return self.root / GOLDEN_FILE

    @property
    def subcommand(self) -> str:
        """``scan`` for the cases under ``fixtures/scan``, else ``check``."""
        return "scan" if self.root.parent.name == SCAN_CASES.name else "check"

    @property
    def command(self) -> str:
        """The command line the golden records, for messages."""
        return (
            f"cd {self.root} && flagtrace {self.subcommand} . {' '.join(self.args)} --format json"
        )


@dataclass(frozen=True, slots=True)
class Run:
    """What one run of the CLI on a case printed and returned."""

    exit_code: int
    report: str | None  # the normalised pretty JSON; None when stdout held no JSON document
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        """The ``flagtrace: error: ...`` lines on stderr (``-q`` leaves nothing else there)."""
        return [line for line in self.stderr.splitlines() if line.startswith(ERROR_PREFIX)]


def case_roots(cases_dir: Path = CASES, names: Sequence[str] = ()) -> list[Path]:
    """Every case directory (one with a case.json), or the named ones, sorted by name."""
    roots = sorted(path.parent for path in cases_dir.glob(f"*/{CASE_FILE}"))
    if names:
        unknown = sorted(set(names) - {root.name for root in roots})
        if unknown:
            raise SystemExit(f"regen_goldens: no case named {', '.join(unknown)} in {cases_dir}")
        roots = [root for root in roots if root.name in names]
    return roots


def normalise(report_text: str) -> str:
    """The report as the golden stores it: ``stats.seconds`` zeroed, printed as flagtrace does
    (``json.dumps(..., indent=2)`` and a newline), so that an unchanged report is unchanged text.
    """
    report: dict[str, Any] = json.loads(report_text)
    report["stats"]["seconds"] = 0.0
    return json.dumps(report, indent=2) + "\n"


def run_case(case: Case, cache_dir: Path) -> Run:
    """``flagtrace . ARGS --format json -q --no-cache`` in the case directory.

    ``--no-cache`` makes every run analyse afresh instead of answering from a stored report;
    ``cache_dir`` only keeps the summary cache away from the user's.
    """
    env = dict(os.environ, FLAGTRACE_CACHE_DIR=str(cache_dir))
    command = [sys.executable, "-m", "flagtrace", case.subcommand, ".", *case.args]
    command += ["--format", "json", "-q", "--no-cache"]
    done = subprocess.run(
        command, cwd=case.root, env=env, capture_output=True, text=True, encoding="utf-8"
    )
    try:
        report: str | None = normalise(done.stdout)
    except (ValueError, KeyError, TypeError):
        report = None
    return Run(done.returncode, report, done.stdout, done.stderr)


def problems(case: Case, run: Run, golden: str | None) -> list[str]:
    """Every way ``run`` differs from what ``case`` and its golden say, as readable text."""
    found: list[str] = []
    if run.exit_code != case.exit_code:
        found.append(f"exit code: expected {case.exit_code} (case.json), got {run.exit_code}")
    if run.report is None:
        found.append(f"stdout is not a JSON report:\n{run.stdout[-2000:]}")
    elif golden is None:
        found.append(f"{case.golden} does not exist (run tests/regen_goldens.py)")
    elif run.report != golden:
        diff = difflib.unified_diff(
            golden.splitlines(keepends=True),
            run.report.splitlines(keepends=True),
            f"{case.name}/{GOLDEN_FILE} (golden)",
            f"{case.name}: {case.command}",
        )
        found.append("report differs from the golden:\n" + "".join(diff))
    if run.report is not None:
        # the JSON report lists the input errors, and so does stderr, one line each
        wanted = [_error_line(error) for error in json.loads(run.report)["errors"]]
        if run.error_lines() != wanted:
            found.append(f"stderr errors: expected {wanted}, got {run.error_lines()}")
    if found and run.stderr.strip():
        found.append(f"stderr:\n{run.stderr[-3000:]}")
    return found


def _error_line(error: dict[str, Any]) -> str:
    """How the CLI prints a report's error on stderr (``Diagnostic.__str__``)."""
    where = error["file"] if error["line"] is None else f"{error['file']}:{error['line']}"
    return f"{ERROR_PREFIX}{where}: {error['message']}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help="only these cases")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a golden differs"
    )
    parser.add_argument(
        "--cases-dir",
        type=Path,
        action="append",
        help=f"where the cases are (default: {CASES}, {SCAN_CASES} and {HOSTILE_CASES})",
    )
    args = parser.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="flagtrace-goldens-") as cache:
        dirs = args.cases_dir or [CASES, SCAN_CASES, HOSTILE_CASES]
        roots = [r for d in dirs for r in case_roots(d)]
        if args.cases:
            unknown = sorted(set(args.cases) - {r.name for r in roots})
            if unknown:
                raise SystemExit(f"regen_goldens: no case named {', '.join(unknown)}")
            roots = [r for r in roots if r.name in args.cases]
        for root in roots:
            case = Case.load(root)
            run = run_case(case, Path(cache))
            golden = case.golden.read_text(encoding="utf-8") if case.golden.is_file() else None
            if not args.check and run.report is not None:
                if run.report != golden:
                    case.golden.write_text(run.report, encoding="utf-8")
                    print(f"wrote {case.golden}")
                golden = run.report
            found = problems(case, run, golden)
            if found:
                failed += 1
                print(f"FAIL {case.name}: {case.description}\n" + "\n".join(found) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
