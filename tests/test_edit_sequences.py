"""After every edit, a run that reuses the cache answers exactly what a cold run answers.

Random sequences of edits (``tests/edits.py``: functions, imports, classes, modules,
setters and reads added, removed and changed, code moved down, files broken and
reverted) are applied to copies of the flag fixtures. After each edit the same question
(sometimes another one: another flag of the fixture, or discovered entries instead of
its ``--entry``) is asked twice: with the cache directory the whole sequence shares, so
that whatever flagtrace stored from earlier trees (summaries, resolved programs,
reports, manifests) is offered to it, and with ``--no-cache``. The two reports must be
the same bytes (``stats.seconds`` aside) and the exit codes equal.

What this guards: every layer that answers from an earlier run. A summary or a
program keyed by too little, a manifest trusted for a moved file, a report reused
across options, state kept in the process between questions: each shows up as a
difference after some edit. The sequences are seeded; a failure names the seed,
the fixture and the edits that led to it.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from flagtrace.cli import main
from tests.edits import EditedTree, random_edit
from tests.flag_cases import CASES, flags_of
from tests.regen_goldens import Case, normalise
from tests.registry import REPO

#: edits per fixture in the quick run; a few fixtures get a long sequence
STEPS = 4
LONG_STEPS = 30
LONG = ("sglang_story", "cross_module_writes", "dict_registry", "by_name_fanout")
_GOLDENS = ("case.json", "expected.json", "layout")


def _copy_case(case: Case, into: Path) -> Path:
    tree = into / case.name
    shutil.copytree(case.root, tree, ignore=shutil.ignore_patterns(*_GOLDENS))
    return tree


def run(tree: Path, args: Sequence[str], cache: Path | None, out: Path) -> tuple[int, str]:
    """``flagtrace check . ARGS --format json`` in ``tree``: exit code and report."""
    out.unlink(missing_ok=True)
    here = os.getcwd()
    os.chdir(tree)
    try:
        cache_args = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
        command = ["check", ".", *args, "--format", "json", "-q", "-o", str(out), "-j", "1"]
        code = main([*command, "--jedi-budget", "0", *cache_args])
    finally:
        os.chdir(here)
    return code, normalise(out.read_text(encoding="utf-8")) if out.exists() else ""


def questions(case: Case) -> list[list[str]]:
    """The case's own question, each of its flags alone, and its flags with entries
    discovered: a sequence moves between them (a new question on a stored program)."""
    args = list(case.args)
    flags = flags_of(case.root / "case.json")
    without_entries: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--entry":
            skip = True
        else:
            without_entries.append(a)
    asked = [args, without_entries]
    if len(flags) > 1:
        asked += [["--flag", f] for f in flags]
    return asked


def bare_flag(case: Case) -> str | None:
    flags = flags_of(case.root / "case.json")
    return flags[0].rpartition(".")[2] if flags else None


def check_sequence(case: Case, tmp_path: Path, seed: int, steps: int) -> None:
    rng = random.Random(f"{case.name}:{seed}")
    tree = _copy_case(case, tmp_path)
    edited = EditedTree(tree, bare_flag(case))
    cache, out = tmp_path / "cache", tmp_path / "out.json"
    asked = questions(case)
    done: list[str] = []
    for step in range(steps + 1):
        if step:
            done.append(random_edit(edited, rng))
        args = asked[0] if step == 0 else rng.choice(asked)
        reused = run(tree, args, cache, out)
        cold = run(tree, args, None, tmp_path / "cold.json")
        if reused != cold:
            history = "\n".join(f"  {i + 1}. {d}" for i, d in enumerate(done))
            pytest.fail(
                f"{case.name}, seed {seed}, after {len(done)} edits, flagtrace check . "
                f"{' '.join(args)}: the cached run differs from a cold one\n"
                f"edits:\n{history}\n"
                f"exit codes {reused[0]} (cached), {cold[0]} (cold)\n"
                + _first_difference(reused[1], cold[1])
            )


def _first_difference(a: str, b: str) -> str:
    import difflib

    diff = difflib.unified_diff(
        b.splitlines(keepends=True), a.splitlines(keepends=True), "cold", "cached", n=2
    )
    return "".join(list(diff)[:60])


FLAG_CASES = [Case.load(c.parent) for c in CASES if flags_of(c)]


@pytest.mark.parametrize("case", FLAG_CASES, ids=lambda c: c.name)
def test_a_few_edits_of_every_fixture(case: Case, tmp_path: Path) -> None:
    check_sequence(case, tmp_path, seed=0, steps=STEPS)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", LONG)
def test_long_edit_sequences(name: str, seed: int, tmp_path: Path) -> None:
    case = Case.load(REPO / "fixtures" / "flags" / name)
    check_sequence(case, tmp_path, seed=seed, steps=LONG_STEPS)


# --------------------------------------------------------------------------
# SGLang 0.5.9: real edits, each answered from the cache and cold


SGLANG_FLAG = "_in_piecewise_cuda_graph"
SGLANG_ENTRY = "sglang.srt.speculative.eagle_worker.EAGLEWorker.verify"
FLAG_MODULE = "srt/compilation/piecewise_context_manager.py"
RUNNER = "srt/model_executor/model_runner.py"
#: the hop of the seed answer: forward_extend replays the piecewise CUDA graph
REPLAY = """        if can_run_graph:
            return (
                self.piecewise_cuda_graph_runner.replay(forward_batch, **kwargs),
                can_run_graph,
            )
"""
DECODE_BODY = """        # FIXME: add pp_proxy_tensors arg to all models
        kwargs = {}
"""
DECODE_ENTERS = """        from sglang.srt.compilation.piecewise_context_manager import (
            enable_piecewise_cuda_graph,
        )

        with enable_piecewise_cuda_graph():
            pass
"""


#: where the edit that only moves code puts its comment lines
RUNNER_CLASS = "\nclass ModelRunner("
#: the one edit that changes no summary's shape: the stored program serves it
MOVED = "model_runner.py's code moved down"


def _sglang_edits(root: Path) -> list[tuple[str, Path, str]]:
    """(what, file, new text): the benchmark's edit, comment lines above the
    runner's class, the seed hop removed, a ``with`` of the setter added to
    another method, and the runner put back (the tree of the first edit again,
    whose stored program and report the cache holds)."""
    flag_module, runner = root / FLAG_MODULE, root / RUNNER
    flag_text, runner_text = (p.read_text(encoding="utf-8") for p in (flag_module, runner))
    assert REPLAY in runner_text and DECODE_BODY in runner_text
    assert runner_text.count(RUNNER_CLASS) == 1
    added = flag_text + "\n\ndef _added_by_the_test():\n    return 1\n"
    moved = runner_text.replace(RUNNER_CLASS, "\n# moved by the test\n#" + RUNNER_CLASS)
    without_replay = runner_text.replace(REPLAY, "")
    entering = without_replay.replace(DECODE_BODY, DECODE_ENTERS + DECODE_BODY)
    return [
        ("a function appended to the flag's module", flag_module, added),
        (MOVED, runner, moved),
        ("forward_extend no longer replays the graph", runner, without_replay),
        ("forward_decode enters the setter", runner, entering),
        ("model_runner.py as it was", runner, runner_text),
    ]


@pytest.mark.slow
def test_sglang_edits_answered_from_the_cache_match_cold_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.registry import download

    shutil.copytree(download("sglang==0.5.9") / "sglang", tmp_path / "src" / "sglang")
    root = tmp_path / "src" / "sglang"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cache = tmp_path / "cache"

    def check(*cache_args: str) -> tuple[int, str]:
        out = tmp_path / "out.json"
        out.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "flagtrace", "check", str(root), "--flag", SGLANG_FLAG]
            + ["--entry", SGLANG_ENTRY, "--format", "json", "-q", "-o", str(out)]
            + ["--jedi-budget", "0", *cache_args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.exists(), done.stderr[-2000:]
        return done.returncode, normalise(out.read_text(encoding="utf-8"))

    def programs() -> int:
        return len(list(cache.glob("programs/v*/??/*.pkl")))

    first = check("--cache-dir", str(cache))
    answers = [first]
    for what, path, text in _sglang_edits(root):
        path.write_text(text, encoding="utf-8")
        stored = programs()
        reused = check("--cache-dir", str(cache))
        assert reused == check("--no-cache"), what
        # code that only moved is answered from the stored program: none is added
        # (the last edit, back to an earlier tree, also finds its program stored)
        if what == MOVED:
            assert programs() == stored, what
        elif len(answers) < 4:
            assert programs() == stored + 1, what
        answers.append(reused)
    # the edits changed the answer, and putting the runner back restored it
    assert len({report for _, report in answers}) >= 3
    assert answers[-1] == answers[1]
