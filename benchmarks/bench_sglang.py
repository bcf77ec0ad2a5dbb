"""Time and memory of flagtrace on SGLang, as ratios to parsing the same files.

Why: issues 4 and 16 ask flagtrace to be fast enough for a pre-commit hook on a codebase
the size of SGLang (0.5.9: ~1,400 files, ~540k lines).  Absolute times on the
shared 2-core machine are noise, so this script measures the yardsticks *in the
same run* and reports ratios to them:

* reference A: ``libcst.parse_module`` of every ``.py`` file, one process;
* reference B: ``ast.parse`` of every ``.py`` file, one process;
* reference A∥ (not a yardstick of any target): A in a pool of ``--jobs`` (default:
  all CPUs) processes, the floor under any cold run that parses every file with
  libcst, as flagtrace does;
* flagtrace end to end (a fresh interpreter, as a user would run it)::

      flagtrace check TREE --flag _in_piecewise_cuda_graph \\
          --entry sglang.srt.speculative.eagle_worker.EAGLEWorker.verify --format json -o OUT

  (on 0.5.23, where both were renamed: ``--flag _in_tc_piecewise_cuda_graph --entry
  sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.verify``, see ``QUERIES``)

  *cold* (an empty ``--cache-dir``), *warm* (the same cache, nothing changed) and
  *touched* (one file got a new comment line since the last run: its summary
  is unchanged, so the stored report applies); between touched and edited, *new
  question* (``--flag`` another flag of the same tree, after the stored reports
  were removed: the resolved program the cold run stored is loaded and only the
  flag analysis runs, ``flagtrace.program_store``; the touched file's comment
  changes no summary, so the program still applies); then the two edits of issue
  16: *edited* (a new function appended to the flag's module) and *edited body*
  (a statement added at the top of ``ModelRunner.forward`` in
  ``model_runner.py``, which moves every line below it): one file re-parsed
  each time, the whole-program stages run again.

Targets from issue 16 (which replaced issue 4's), printed next to the measured
ratios: cold <= 1.0 x A, warm and touched <= 0.4 x B, new question <= 0.6 x B,
both edits <= 1.0 x B, peak RSS <= 1 GiB cold; for 0.5.23 (with ``--also-0523``):
it completes, its cold time per line is within 1.1x of 0.5.9's, and its edited
run <= 1.0 x its own B. Nothing here fails on a missed target: the exit status
is 1 only when a run did not complete (no report, an internal error, a signal).

How, from the repository root::

    python benchmarks/bench_sglang.py                     # SGLang 0.5.9, once
    python benchmarks/bench_sglang.py --repeat 3          # min time of 3 of each
    python benchmarks/bench_sglang.py --also-0523 --json results.json

On first use SGLang's wheel is downloaded with pip into ``.cache/`` (git-ignored,
``tests.registry``).  That download is never modified: the ``sglang/`` package
is copied to a temporary directory and every flagtrace run analyses the copy (the
touched run appends to a file of the copy).

Measuring: every measured thing runs in a child process started from here, so
none of them shares memory or warm-up with another.  Wall time is taken around
the child (interpreter start-up and imports included for flagtrace; the
references report their parse loop only, so the ratios are conservative).  Peak
RSS is ``ru_maxrss`` from ``os.wait4`` on that child: the largest single process
among the child and its (reaped) worker processes.  flagtrace indexes in a process
pool, so the table also shows the sum of the RSS of the whole process tree, sampled
every 0.2 s from ``/proc`` (it can miss short peaks).  flagtrace runs without
``--quiet`` (stderr is a file, so no progress bar is drawn) to capture its
one-line summary, which says how many files came from the cache; ``--quiet``
passes ``--quiet`` instead.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from flagtrace.api import default_jobs  # noqa: E402
from tests.registry import RegistryError, download  # noqa: E402

BASE_VERSION = "0.5.9"
NEW_VERSION = "0.5.23"


@dataclass(frozen=True, slots=True)
class Query:
    """What the flagtrace runs ask of one SGLang version, and the file they edit."""

    flag: str
    entry: str
    #: relative to the ``sglang`` package: the flag's own module, what a developer
    #: working on the flag would change
    touch: str
    #: the *new question*: another flag of the same tree, asked after ``flag``
    #: (None: not measured on this version)
    second_flag: str | None = None
    #: the *edited body* run: (file relative to the package, ``Class.method`` in
    #: it) whose body gains a statement before each run (None: not measured)
    body_edit: tuple[str, str] | None = None


#: SGLang renamed both between the versions: 0.5.23's flag is the "tc" piecewise
#: one, and EAGLE's verify step lives in ``EAGLEWorkerV2``.
QUERIES = {
    "0.5.9": Query(
        "_in_piecewise_cuda_graph",
        "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify",
        "srt/compilation/piecewise_context_manager.py",
        # qualified: ``sglang.multimodal_gen`` has a ``_forward_context`` of its own
        "sglang.srt.compilation.piecewise_context_manager._forward_context",
        # issue 16: "a function body changed in model_runner.py"
        ("srt/model_executor/model_runner.py", "ModelRunner.forward"),
    ),
    "0.5.23": Query(
        "_in_tc_piecewise_cuda_graph",
        "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.verify",
        "srt/model_executor/runner_backend_utils/tc_piecewise_cuda_graph/context_manager.py",
        body_edit=("srt/model_executor/model_runner.py", "ModelRunner.forward"),
    ),
}
GIB = 1024**3

# Issue 16's targets (which replaced issue 4's: cold 0.75 x A, touched 0.6 x B,
# 1.5 GiB, 1.3 x per line), as (measured quantity, limit).
TARGET_COLD_OVER_A = 1.0
TARGET_WARM_OVER_B = 0.4
TARGET_TOUCHED_OVER_B = 0.4
TARGET_NEW_QUESTION_OVER_B = 0.6
TARGET_EDITED_OVER_B = 1.0  # both edits, and 0.5.23's appended function
TARGET_COLD_RSS = 1.0 * GIB
TARGET_PER_LINE_GROWTH = 1.1

# Runs in a child: parse every file listed in argv[2] with libcst or ast, in
# argv[4] processes (default 1); write {"seconds", "files", "errors": [[path,
# message], ...]} to argv[3].  Only the parse loop (reading and the process pool
# included) is timed, not the interpreter or the import.
PARSE_DRIVER = r"""
import json, sys, time
mode, listing, out = sys.argv[1:4]
processes = int(sys.argv[4]) if len(sys.argv) > 4 else 1
with open(listing, encoding="utf-8") as f:
    paths = f.read().splitlines()
if mode == "libcst":
    import libcst
    parse = libcst.parse_module
else:
    import ast
    parse = ast.parse
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

def parse_one(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        parse(data)
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0]
        return [path, "%s: %s" % (type(exc).__name__, first)]
    return None

start = time.perf_counter()
if processes > 1:
    import os
    from concurrent.futures import ProcessPoolExecutor
    # largest files first, so no worker is left with a big one at the end
    ordered = sorted(paths, key=lambda p: -os.path.getsize(p))
    with ProcessPoolExecutor(processes) as pool:
        results = list(pool.map(parse_one, ordered, chunksize=4))
else:
    results = [parse_one(path) for path in paths]
errors = sorted(r for r in results if r is not None)
seconds = time.perf_counter() - start
with open(out, "w", encoding="utf-8") as f:
    json.dump({"seconds": seconds, "files": len(paths), "errors": errors}, f)
"""


# ------------------------------------------------------------- child processes


@dataclass(slots=True)
class ChildRun:
    """One child process: how long it took, how much memory, what it said."""

    argv: list[str]
    seconds: float
    returncode: int | None  # None: killed at the timeout
    maxrss: int  # bytes: largest single process of the tree (os.wait4)
    tree_rss: int | None  # bytes: sampled peak of the sum over the tree (None: no /proc)
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode is not None and self.returncode >= 0


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux ``/proc``; [] where unavailable)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process and its descendants until stopped."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.available = os.path.exists(f"/proc/{pid}/task/{pid}/children")
        self._halt = threading.Event()

    def run(self) -> None:
        while self.available and not self._halt.is_set():
            total, todo, seen = 0, [self.pid], set()
            while todo:
                pid = todo.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                total += _rss(pid)
                todo.extend(_children(pid))
            self.peak = max(self.peak, total)
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_child(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> ChildRun:
    """Run ``argv`` to completion, measuring wall time and peak RSS.

    The child gets its own session (process group), so a timeout kills it and any
    worker processes it started, and nothing else.  Output goes to temporary
    files (no pipe can fill up and stall the child).
    """
    args = [os.fspath(a) for a in argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        sampler = TreeSampler(proc.pid)
        sampler.start()
        fired = threading.Event()

        def expire() -> None:
            fired.set()
            _kill_group(proc.pid)

        timer = threading.Timer(timeout, expire) if timeout else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # Ctrl-C here: take the whole tree down with us
            _kill_group(proc.pid)
            proc.wait()
            raise
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        if timer is not None:
            timer.cancel()
        sampler.stop()
        sampler.join()
        if fired.is_set():
            _kill_group(proc.pid)  # orphaned workers, if any
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is KiB on Linux
    return ChildRun(
        argv=args,
        seconds=seconds,
        returncode=None if fired.is_set() else proc.returncode,
        maxrss=usage.ru_maxrss * scale,
        tree_rss=sampler.peak if sampler.available else None,
        stdout=stdout,
        stderr=stderr,
        timed_out=fired.is_set(),
    )


#: where flagtrace's own bytecode is kept for the children (outside the checkout)
PYCACHE = Path(tempfile.gettempdir()) / "flagtrace-bench-pycache"


def child_env() -> dict[str, str]:
    """The environment for flagtrace children: this checkout first on the path,
    no inherited cache directory (every run names its own), and flagtrace's
    bytecode kept as an installed copy has it: with ``PYTHONDONTWRITEBYTECODE``
    (set on the machines these figures come from) every run compiled its 85
    modules again, 0.13 s that no user's run spends (``compile_flagtrace``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("FLAGTRACE_CACHE_DIR", None)
    env.pop("FLAGTRACE_DEBUG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def compile_flagtrace() -> None:
    """Compile this checkout's flagtrace before any run is timed, as ``pip
    install`` does: the first measured run does not pay for it."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "flagtrace")],
        env=child_env(),
        check=True,
    )


def flagtrace_cmd(*args: str | os.PathLike[str]) -> list[str]:
    """``python -m flagtrace ARGS``: this interpreter and checkout, no shim."""
    return [sys.executable, "-m", "flagtrace", *(os.fspath(a) for a in args)]


def flagtrace_help(command: str) -> str:
    proc = subprocess.run(
        flagtrace_cmd(command, "--help"),
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    return proc.stdout + proc.stderr


def summary_line(stderr: str) -> str | None:
    """flagtrace's own one-line summary (``flagtrace: N files ...``), if printed."""
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if re.match(r"flagtrace: [\d,]+ files", line):
            return line
    return None


def cached_files(summary: str | None) -> tuple[int, int] | None:
    """(files, cached) from a summary line ``flagtrace: 1403 files (1400 cached), ...``."""
    match = re.search(r"([\d,]+) files \(([\d,]+) cached\)", summary or "")
    if match is None:
        return None
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def source_digest() -> str:
    """A digest of flagtrace's own source.  The cache keys on the indexer's source,
    so a checkout edited during the benchmark makes warm and touched runs miss."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "flagtrace").rglob("*.py")):
        digest.update(path.relative_to(REPO).as_posix().encode())
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def error_lines(stderr: str) -> list[str]:
    return [
        line.strip() for line in stderr.splitlines() if line.strip().startswith("flagtrace: error")
    ]


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / 1024**2:.0f} MiB"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# ------------------------------------------------------------------ the corpus


@dataclass(slots=True)
class Corpus:
    version: str
    package: Path  # the downloaded ``sglang/`` directory (never written to)
    files: list[Path]
    lines: int


def load_corpus(version: str) -> Corpus:
    try:
        root = download(f"sglang=={version}")
    except RegistryError as exc:
        raise SystemExit(f"bench_sglang: {exc}") from None
    package = root / "sglang"
    if not package.is_dir():
        raise SystemExit(f"bench_sglang: no sglang/ package in {root}")
    files = sorted(p for p in package.rglob("*.py") if p.is_file())
    lines = 0
    for path in files:
        data = path.read_bytes()
        lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return Corpus(version, package, files, lines)


@contextlib.contextmanager
def tree_copy(corpus: Corpus) -> Iterator[Path]:
    """A private copy of the ``sglang/`` package (``<tmp>/sglang``), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"bench-sglang-{corpus.version}-") as tmp:
        target = Path(tmp) / "sglang"
        shutil.copytree(corpus.package, target, symlinks=True)
        yield target


# ------------------------------------------------------------------ measuring


@dataclass(slots=True)
class Measurement:
    """The best of ``repeat`` runs of one thing."""

    name: str
    seconds: float | None = None  # min over the runs that completed
    wall_seconds: float | None = None  # the child's wall time of that run
    maxrss: int | None = None  # max over runs
    tree_rss: int | None = None  # max over runs
    runs: int = 0
    returncodes: list[int | None] = field(default_factory=list)
    summary: str | None = None
    errors: list[str] = field(default_factory=list)
    failure: str | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, run: ChildRun, seconds: float | None) -> None:
        self.runs += 1
        self.returncodes.append(run.returncode)
        self.maxrss = max(self.maxrss or 0, run.maxrss)
        if run.tree_rss is not None:
            self.tree_rss = max(self.tree_rss or 0, run.tree_rss)
        if seconds is not None and (self.seconds is None or seconds < self.seconds):
            self.seconds = seconds
            self.wall_seconds = run.seconds


def measure_parse(
    mode: str, corpus: Corpus, repeat: int, tmp: Path, processes: int = 1
) -> Measurement:
    """Reference A (``libcst``) or B (``ast``): parse every file in one child;
    with ``processes`` > 1, reference A∥: libcst in a pool of that many processes."""
    if processes > 1:
        name = f"A∥: libcst, {processes} processes"
    else:
        name = "A: libcst.parse_module" if mode == "libcst" else "B: ast.parse"
    m = Measurement(name)
    listing = tmp / "files.txt"
    listing.write_text("\n".join(str(p) for p in corpus.files) + "\n", encoding="utf-8")
    for i in range(repeat):
        out = tmp / f"parse-{mode}-{processes}-{i}.json"
        argv = [sys.executable, "-c", PARSE_DRIVER, mode, listing, out, str(processes)]
        run = run_child(argv, cwd=tmp)
        if run.returncode != 0 or not out.is_file():
            m.add(run, None)
            m.failure = f"exit {run.returncode}: {last_line(run.stderr)}"
            continue
        result = json.loads(out.read_text(encoding="utf-8"))
        m.add(run, float(result["seconds"]))
        m.errors = [
            f"{Path(p).relative_to(corpus.package.parent)}: {msg}" for p, msg in result["errors"]
        ]
    return m


def flag_verdicts(report: Path) -> Any:
    """The part of a JSON report that must not depend on the cache: the flags."""
    try:
        return json.loads(report.read_text(encoding="utf-8")).get("flags")
    except (OSError, ValueError, AttributeError):
        return None


def entry_observes(flags: Any, wanted: str) -> bool | None:
    for flag in flags or ():
        for entry in flag.get("entries", ()):
            if entry.get("entry") == wanted:
                return bool(entry.get("observes_set"))
    return None


class FlagtraceRunner:
    """Runs ``flagtrace check`` on one tree copy and records each run."""

    def __init__(
        self,
        tree: Path,
        tmp: Path,
        query: Query,
        *,
        quiet: bool,
        jobs: int | None,
        extra: Sequence[str],
    ) -> None:
        self.tree = tree
        self.query = query
        self.tmp = tmp
        self.quiet = quiet
        self.jobs = jobs
        self.extra = list(extra)
        self.count = 0
        self.reference_flags: Any = None  # the cold run's flags, to compare later runs with

    def run(
        self,
        m: Measurement,
        cache_args: Sequence[str | Path],
        flag: str | None = None,
        *,
        compare: bool = True,
    ) -> ChildRun:
        """One ``flagtrace check``; ``flag`` asks about another flag than the query's
        (its report is then not compared with the cold run's), as does
        ``compare=False`` (an edit that moved lines the report quotes)."""
        self.count += 1
        out = self.tmp / f"report-{self.count}.json"
        args: list[str | Path] = [
            "check",
            self.tree,
            "--flag",
            flag or self.query.flag,
            "--entry",
            self.query.entry,
            "--format",
            "json",
            "-o",
            out,
            *cache_args,
        ]
        if self.quiet:
            args.append("--quiet")
        if self.jobs is not None:
            args += ["--jobs", str(self.jobs)]
        m.extra.setdefault("flagtrace_source", []).append(source_digest())
        run = run_child(flagtrace_cmd(*args, *self.extra), cwd=self.tmp, env=child_env())
        counts = cached_files(summary_line(run.stderr))
        if counts is not None:
            m.extra.setdefault("files_cached", []).append(list(counts))
        # 0 clean, 1 findings, 2 input errors (report still written); 3 or a signal is a failure
        completed = run.returncode in (0, 1, 2) and out.is_file()
        m.add(run, run.seconds if completed else None)
        m.summary = summary_line(run.stderr) or m.summary
        m.errors = error_lines(run.stderr)
        if not completed:
            m.failure = f"exit {run.returncode}: {last_line(run.stderr) or '(no output)'}"
            return run
        flags = flag_verdicts(out)
        m.extra["verify_observes_set"] = entry_observes(flags, self.query.entry)
        if m.extra["verify_observes_set"] is None:
            # the run answered a different question (the flag or the entry was not
            # found): its time is not the time of the query; say so, loudly
            m.note = f"no verdict for {self.query.entry} in the report: the query did not run"
        if flag is not None or not compare:
            pass  # another question, or lines moved: another report
        elif self.reference_flags is None:
            self.reference_flags = flags
        elif flags != self.reference_flags:
            m.note = "report differs from the cold run's"
        return run


def touch(path: Path, n: int) -> None:
    """Append a comment line that makes the file's bytes new (content-hash caches miss)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(f"\n# touched by bench_sglang ({n}, {time.time_ns()})\n")


def edit(path: Path, n: int) -> None:
    """Append a new function: the file's summary changes, so no stored report
    applies and the whole-program stages run again (one file re-parsed)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(f"\n\ndef _edited_by_bench_sglang_{n}_{time.time_ns()}():\n    return {n}\n")


def edit_body(path: Path, qualname: str, n: int) -> None:
    """Give function ``qualname`` (``Class.method``) of ``path`` a new first
    statement (after its docstring): its summary changes, and every line below
    moves, as in a real edit of one function. Raises ValueError if the function
    is not there or its body starts on its ``def`` line."""
    source = path.read_text(encoding="utf-8")
    found = _function(ast.parse(source), qualname.split("."))
    if found is None:
        raise ValueError(f"no function {qualname} in {path.name}")
    body = found.body
    first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
    if first.lineno <= found.lineno:
        raise ValueError(f"{qualname} in {path.name}: its body starts on its def line")
    lines = source.splitlines(keepends=True)
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, f"{indent}_edited_by_bench_sglang = {n}\n")
    path.write_text("".join(lines), encoding="utf-8")


def move_down(path: Path, qualname: str, n: int) -> None:
    """Put comment lines above function ``qualname`` (``Class.method``) of
    ``path``: every line below moves, and no summary changes shape (the stored
    resolved program still applies). Raises ValueError if it is not there."""
    source = path.read_text(encoding="utf-8")
    found = _function(ast.parse(source), qualname.split("."))
    if found is None:
        raise ValueError(f"no function {qualname} in {path.name}")
    row = min([found.lineno, *(d.lineno for d in found.decorator_list)]) - 1
    lines = source.splitlines(keepends=True)
    indent = " " * found.col_offset
    lines[row:row] = [f"{indent}# moved by bench_sglang ({n})\n", f"{indent}#\n"]
    path.write_text("".join(lines), encoding="utf-8")


def _function(
    node: ast.Module | ast.ClassDef, names: list[str]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for child in node.body:
        if getattr(child, "name", None) != names[0]:
            continue
        if len(names) == 1 and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            return child
        if len(names) > 1 and isinstance(child, ast.ClassDef):
            return _function(child, names[1:])
    return None


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


@dataclass(slots=True)
class VersionResult:
    version: str
    files: int
    lines: int
    refs: dict[str, Measurement]
    runs: dict[str, Measurement]
    notes: list[str]

    def ratio(self, run: str, ref: str) -> float | None:
        """Time of flagtrace run ``run`` (or reference ``run``) over reference ``ref``."""
        r, b = self.runs.get(run) or self.refs.get(run), self.refs.get(ref)
        if r is None or b is None or r.seconds is None or not b.seconds:
            return None
        return r.seconds / b.seconds

    @property
    def cold_per_line(self) -> float | None:
        cold = self.runs.get("cold")
        return (
            cold.seconds / self.lines if cold and cold.seconds is not None and self.lines else None
        )


def bench_version(version: str, args: argparse.Namespace, cache_supported: bool) -> VersionResult:
    print(f"== SGLang {version}", file=sys.stderr, flush=True)
    corpus = load_corpus(version)
    print(
        f"   {len(corpus.files)} files, {corpus.lines:,} lines in {corpus.package}", file=sys.stderr
    )
    query = QUERIES[version]
    changed_file = args.touch or query.touch
    notes: list[str] = [f"flagtrace check --flag {query.flag} --entry {query.entry}"]
    compile_flagtrace()
    with tempfile.TemporaryDirectory(prefix="bench-sglang-work-") as tmp_name:
        tmp = Path(tmp_name)
        refs: dict[str, Measurement] = {}
        for key, mode in (("A", "libcst"), ("B", "ast")):
            print(f"   reference {key} ({mode}) ...", file=sys.stderr, flush=True)
            refs[key] = measure_parse(mode, corpus, args.repeat, tmp)
        processes = args.jobs or default_jobs()
        if processes > 1:
            print(
                f"   reference A∥ (libcst, {processes} processes) ...", file=sys.stderr, flush=True
            )
            refs["A∥"] = measure_parse("libcst", corpus, args.repeat, tmp, processes)
        runs: dict[str, Measurement] = {}
        with tree_copy(corpus) as tree:
            runner = FlagtraceRunner(
                tree, tmp, query, quiet=args.quiet, jobs=args.jobs, extra=args.flagtrace_arg
            )
            cold = runs["cold"] = Measurement("flagtrace cold")
            if not cache_supported:
                print("   flagtrace (no cache options) ...", file=sys.stderr, flush=True)
                for _ in range(args.repeat):
                    runner.run(cold, [])
                notes.append(
                    "flagtrace check has no --cache-dir: measured only a plain run (as 'cold'); "
                    "warm and touched skipped"
                )
                return VersionResult(version, len(corpus.files), corpus.lines, refs, runs, notes)
            cache = tmp / "cache"
            print("   flagtrace cold ...", file=sys.stderr, flush=True)
            for i in range(args.repeat):
                fresh = tmp / f"cache-cold-{i}"
                runner.run(cold, ["--cache-dir", fresh])
                if i == args.repeat - 1:
                    fresh.rename(cache)  # the warm runs start from the last cold run's cache
                else:
                    shutil.rmtree(fresh, ignore_errors=True)
            if not cache.is_dir():
                notes.append(
                    "the cold run left no cache directory: warm and touched measure a cold cache"
                )
                cache.mkdir()
            print("   flagtrace warm ...", file=sys.stderr, flush=True)
            warm = runs["warm"] = Measurement("flagtrace warm")
            for _ in range(args.repeat):
                runner.run(warm, ["--cache-dir", cache])
            print("   flagtrace touched ...", file=sys.stderr, flush=True)
            touched = runs["touched"] = Measurement("flagtrace touched")
            target = tree / changed_file
            if not target.is_file():
                touched.failure = f"no file {changed_file} in sglang {version}"
            else:
                touched.note = f"appended a comment line to sglang/{changed_file} before each run"
                for i in range(args.repeat):
                    touch(target, i)
                    runner.run(touched, ["--cache-dir", cache])
                if query.second_flag is not None:
                    print("   flagtrace new question ...", file=sys.stderr, flush=True)
                    question = runs["new question"] = Measurement("flagtrace new question")
                    question.note = (
                        f"--flag {query.second_flag} on the same summaries, after the runs of "
                        f"--flag {query.flag} and touched; stored reports removed before each run"
                    )
                    for _ in range(args.repeat):
                        # each repeat is a question the report cache has not seen (touched
                        # has run: its stored report is not needed again)
                        shutil.rmtree(cache / "results", ignore_errors=True)
                        runner.run(question, ["--cache-dir", cache], flag=query.second_flag)
                print("   flagtrace edited ...", file=sys.stderr, flush=True)
                edited = runs["edited"] = Measurement("flagtrace edited")
                edited.note = f"appended a new function to sglang/{changed_file} before each run"
                for i in range(args.repeat):
                    edit(target, i)
                    runner.run(edited, ["--cache-dir", cache])
                # after *edited*, whose report is compared with the cold run's: these move lines
                for key in ("moved", "edited body") if query.body_edit is not None else ():
                    measure_method_edit(
                        runner, runs, tree, query.body_edit, cache, args.repeat, key
                    )
    notes += cache_notes(runs)
    return VersionResult(version, len(corpus.files), corpus.lines, refs, runs, notes)


def measure_method_edit(
    runner: FlagtraceRunner,
    runs: dict[str, Measurement],
    tree: Path,
    body_edit: tuple[str, str],
    cache: Path,
    repeat: int,
    key: str,
) -> None:
    """The *moved* run (``key``; comment lines put above one method before each
    run: the code below moves and no summary changes shape) or the *edited
    body* run (one statement added to that method's body)."""
    relative, qualname = body_edit
    change, what = {
        "moved": (move_down, f"two comment lines put above {qualname}"),
        "edited body": (edit_body, f"a statement added to {qualname}"),
    }[key]
    print(f"   flagtrace {key} ...", file=sys.stderr, flush=True)
    m = runs[key] = Measurement(f"flagtrace {key}")
    m.note = (
        f"{what} in sglang/{relative} before each run (the lines below move, so the report"
        " is not compared with the cold run's)"
    )
    for i in range(repeat):
        try:
            change(tree / relative, qualname, i)
        except (OSError, SyntaxError, ValueError) as exc:
            m.failure = f"could not edit sglang/{relative}: {exc}"
            return
        runner.run(m, ["--cache-dir", cache], compare=False)


def cache_notes(runs: dict[str, Measurement]) -> list[str]:
    """Say so when the warm and touched runs did not read what they should have
    from the cache (by flagtrace's own summary line), and when flagtrace's source
    changed during the benchmark, which explains such misses."""
    notes = []
    expected_misses = {
        "warm": 0,
        "new question": 0,
        "touched": 1,
        "moved": 1,
        "edited": 1,
        "edited body": 1,
    }
    for key, misses in expected_misses.items():
        m = runs.get(key)
        for files, cached in m.extra.get("files_cached", []) if m else []:
            if files - cached > misses:
                notes.append(
                    f"{key} run: only {cached} of {files} files came from the cache "
                    f"(expected {files - misses})"
                )
    digests = [d for m in runs.values() for d in m.extra.get("flagtrace_source", [])]
    if len(set(digests)) > 1:
        changed = "flagtrace's source changed during the benchmark (digests " + " -> ".join(
            dict.fromkeys(digests)
        )
        if notes:  # the likely cause of the misses above: the cache keys on the indexer's source
            notes.append(changed + "): entries an older indexer wrote are not reused")
        else:
            notes.append(changed + "): the runs did not all measure the same code")
    return notes


# -------------------------------------------------------------------- reporting


@dataclass(frozen=True, slots=True)
class Target:
    """One of the targets next to what this run measured."""

    label: str
    measured: float | None  # None: not measured (a run failed or was skipped)
    limit: float
    met: bool | None
    shown: str
    limit_shown: str

    def row(self) -> list[str]:
        verdict = {True: "met", False: "MISSED", None: "-"}[self.met]
        return [self.label, self.shown, self.limit_shown, verdict]


def at_most(
    label: str, measured: float | None, limit: float, fmt: Callable[[float | None], str] = fmt_ratio
) -> Target:
    met = None if measured is None else measured <= limit
    return Target(label, measured, limit, met, fmt(measured), f"<= {fmt(limit)}")


def targets(results: Sequence[VersionResult]) -> list[Target]:
    base = next((r for r in results if r.version == BASE_VERSION), None)
    out: list[Target] = []
    if base is not None:
        cold = base.runs.get("cold")
        rss = (
            float(cold.maxrss)
            if cold and cold.maxrss is not None and cold.seconds is not None
            else None
        )
        out += [
            at_most(f"{BASE_VERSION} cold / A", base.ratio("cold", "A"), TARGET_COLD_OVER_A),
            at_most(f"{BASE_VERSION} warm / B", base.ratio("warm", "B"), TARGET_WARM_OVER_B),
            at_most(
                f"{BASE_VERSION} touched / B", base.ratio("touched", "B"), TARGET_TOUCHED_OVER_B
            ),
            at_most(
                f"{BASE_VERSION} new question / B",
                base.ratio("new question", "B"),
                TARGET_NEW_QUESTION_OVER_B,
            ),
            at_most(f"{BASE_VERSION} edited / B", base.ratio("edited", "B"), TARGET_EDITED_OVER_B),
            at_most(
                f"{BASE_VERSION} edited body / B",
                base.ratio("edited body", "B"),
                TARGET_EDITED_OVER_B,
            ),
            at_most(
                f"{BASE_VERSION} cold peak RSS (wait4)",
                rss,
                TARGET_COLD_RSS,
                lambda v: fmt_bytes(None if v is None else int(v)),
            ),
        ]
    new = next((r for r in results if r.version == NEW_VERSION), None)
    if new is not None:
        cold_new = new.runs.get("cold")
        completed = cold_new is not None and cold_new.seconds is not None
        out.append(
            Target(
                f"{NEW_VERSION} cold completes",
                float(completed),
                1.0,
                completed,
                "yes" if completed else "no",
                "yes",
            )
        )
        growth = None
        if base is not None and base.cold_per_line and new.cold_per_line:
            growth = new.cold_per_line / base.cold_per_line
        out.append(
            at_most(
                f"{NEW_VERSION} / {BASE_VERSION} cold time per line", growth, TARGET_PER_LINE_GROWTH
            )
        )
        out.append(
            at_most(f"{NEW_VERSION} edited / B", new.ratio("edited", "B"), TARGET_EDITED_OVER_B)
        )
    return out


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    from rich.console import Console  # a dependency of flagtrace itself
    from rich.table import Table

    table = Table(title=title)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    # Not a terminal (logs, pipes): rich would assume 80 columns and squeeze.
    Console(width=None if sys.stdout.isatty() else 140).print(table)


def _row(r: VersionResult, key: str, m: Measurement, verify: str) -> list[str]:
    """One table row: time, ratios to the references, memory, exit codes, verdict."""
    return [
        m.name,
        f"{m.seconds:.2f}" if m.seconds is not None else "FAILED",
        fmt_ratio(r.ratio(key, "A")),
        fmt_ratio(r.ratio(key, "B")),
        fmt_bytes(m.maxrss),
        fmt_bytes(m.tree_rss),
        ",".join(str(c) for c in m.returncodes),
        verify,
    ]


def report(results: Sequence[VersionResult], repeat: int) -> None:
    header = ["run", "time s", "/ A", "/ B", "peak RSS", "tree RSS", "exit", "verify"]
    for r in results:
        rows = [_row(r, key, m, "-") for key, m in r.refs.items()]
        for key, m in r.runs.items():
            observes = m.extra.get("verify_observes_set")
            verify = "-" if observes is None else ("observes set" if observes else "never")
            rows.append(_row(r, key, m, verify))
        title = f"SGLang {r.version}: {r.files:,} files, {r.lines:,} lines"
        title += f" (min time of {repeat} run(s) each)"
        print_table(title, header, rows)
        for m in [*r.refs.values(), *r.runs.values()]:
            if m.summary:
                print(f"  {m.name}: {m.summary}")
        for m in [*r.refs.values(), *r.runs.values()]:
            if m.failure:
                print(f"  {m.name} FAILED: {m.failure}")
            if m.note:
                print(f"  {m.name}: {m.note}")
            if m.errors:
                shown = m.errors[:5] + (
                    [f"... {len(m.errors) - 5} more"] if len(m.errors) > 5 else []
                )
                print(f"  {m.name}: {len(m.errors)} file error(s):")
                for e in shown:
                    print(f"    {e}")
        if r.cold_per_line:
            print(f"  cold time per 1,000 lines: {r.cold_per_line * 1000 * 1000:.1f} ms")
        question, edited = r.runs.get("new question"), r.runs.get("edited")
        if question and edited and question.seconds is not None and edited.seconds:
            reused = question.seconds / edited.seconds
            print(
                f"  new question / edited: {reused:.2f} (the stored program loaded, against"
                " resolving one edited file's program again)"
            )
        floor = r.ratio("A∥", "A")
        if floor is not None:
            print(
                f"  libcst parsing alone, in parallel, is {floor:.2f} x A: the floor under a cold"
                " run that parses every file with libcst"
            )
        for note in r.notes:
            print(f"  note: {note}")
        print()
    print_table(
        "Issue 16 targets (ratios from this run)",
        ["target", "measured", "limit", ""],
        [t.row() for t in targets(results)],
    )
    print("peak RSS: largest single process (os.wait4)")
    print("tree RSS: sum over the child's process tree, sampled every 0.2 s")


def to_json(results: Sequence[VersionResult], args: argparse.Namespace) -> dict[str, Any]:
    return {
        "benchmark": "bench_sglang",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": sys.platform,
        },
        "repeat": args.repeat,
        "versions": [
            {
                "version": r.version,
                "flag": QUERIES[r.version].flag,
                "entry": QUERIES[r.version].entry,
                "files": r.files,
                "lines": r.lines,
                "references": {k: asdict(m) for k, m in r.refs.items()},
                "flagtrace": {k: asdict(m) for k, m in r.runs.items()},
                "ratios": {
                    f"{run}/{ref}": r.ratio(run, ref) for run in r.runs for ref in ("A", "B")
                },
                "cold_seconds_per_line": r.cold_per_line,
                "notes": r.notes,
            }
            for r in results
        ],
        "targets": [
            {
                "target": t.label,
                "measured": t.measured,
                "limit": t.limit,
                "met": t.met,
                "shown": t.shown,
            }
            for t in targets(results)
        ],
    }


# ---------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--also-0523", action="store_true", help=f"also measure SGLang {NEW_VERSION}"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="runs of each measurement; min time"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON")
    parser.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="pass --jobs N to flagtrace"
    )
    parser.add_argument(
        "--quiet", action="store_true", help="pass --quiet to flagtrace (no summary line)"
    )
    parser.add_argument(
        "--touch",
        default=None,
        metavar="RELPATH",
        help="file the touched and edited runs change, relative to sglang/ (default: the flag's "
        f"module, sglang/{QUERIES[BASE_VERSION].touch} in {BASE_VERSION})",
    )
    parser.add_argument(
        "--flagtrace-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for every flagtrace run (repeatable): --flagtrace-arg=--jedi-budget=0",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    help_text = flagtrace_help("check")
    if "--flag" not in help_text:
        print(f"bench_sglang: `flagtrace check --help` failed:\n{help_text}", file=sys.stderr)
        return 1
    cache_supported = "--cache-dir" in help_text
    versions = [BASE_VERSION, *([NEW_VERSION] if args.also_0523 else [])]
    results = [bench_version(v, args, cache_supported) for v in versions]
    report(results, args.repeat)
    if args.json:
        args.json.write_text(json.dumps(to_json(results, args), indent=2) + "\n", encoding="utf-8")
    failed = any(m.failure for r in results for m in [*r.refs.values(), *r.runs.values()])
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
