"""Paths no run can take, decided without ``--assume`` (issue 14's false positives on the
soundness oracle): constant guards and locals assigned once, ``if FLAG:`` while the flag holds
its initial value, calls of functions that never return (``flagtrace.noreturn``), setter
arguments made of constants, and a class manager's restore of what its ``__enter__`` saved.
Each rule also has the case where it must not decide (the verdict stays *observes set*).
The fixture ``fixtures/flags/decided_without_assumptions`` shows the reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.api import analyze

_STATE = (
    "import contextlib\n_on = False\n\n"
    "@contextlib.contextmanager\ndef enabled():\n"
    "    global _on\n    prev = _on\n    _on = True\n    try:\n        yield\n"
    "    finally:\n        _on = prev\n\n"
    "@contextlib.contextmanager\ndef leaky():\n"  # no ``finally``: an exception skips the reset
    "    global _on\n    _on = True\n    yield\n    _on = False\n\n"
    "class Mode:\n"
    "    def __enter__(self):\n        global _on\n        self.prev = _on\n"
    "        _on = True\n        return self\n\n"
    "    def __exit__(self, *exc):\n        global _on\n        _on = self.prev\n"
    "        return False\n\n"
    "def set_on(v):\n    global _on\n    _on = v\n\n"
    "def read():\n    return _on\n"
)
ENTRY = "pkg.work.entry"


def _observes(tmp_path: Path, work: str) -> bool:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(_STATE)
    # a program root that runs the entry: sticky writes outside it do not count
    (pkg / "work.py").write_text(
        "from pkg import state\n\n" + work + '\n\nif __name__ == "__main__":\n    entry()\n'
    )
    report = analyze([str(tmp_path)], ["_on"], [ENTRY], jobs=1)
    (verdict,) = [e for e in report.flags[0].entries if e.entry == ENTRY]
    return verdict.observes_set


NEVER = {
    "if False": "def entry():\n    if False:\n        with state.enabled():\n"
    "            state.read()\n",
    "a local assigned once": "def entry():\n    n = 2\n    if n % 2 == 1:\n"
    "        with state.enabled():\n            state.read()\n",
    "the else of a true constant": "def entry():\n    if True:\n        pass\n    else:\n"
    "        with state.enabled():\n            state.read()\n",
    "if FLAG before any set": "def entry():\n    if state._on:\n"
    "        with state.enabled():\n            state.read()\n",
    "a call that always raises": "def fail():\n    raise ValueError('x')\n\n"
    "def entry():\n    with state.enabled():\n        fail()\n        state.read()\n",
    "a chain of calls that always raise": "def fail():\n    raise ValueError('x')\n\n"
    "def check():\n    if True:\n        fail()\n    else:\n        raise KeyError()\n\n"
    "def entry():\n    with state.enabled():\n        check()\n        state.read()\n",
    "a setter called with a false constant expression": "def entry():\n    level = 0\n"
    "    state.set_on(level > 1)\n    state.read()\n",
    "a class manager made for the with restores on an exception": "def fail():\n"
    "    raise ValueError('x')\n\n"
    "def entry():\n    try:\n        with state.Mode():\n            fail()\n"
    "    except ValueError:\n        pass\n    state.read()\n",
}

OBSERVES = {
    "a local assigned twice": "def entry():\n    n = 0\n    n = 1\n    if n == 1:\n"
    "        with state.enabled():\n            state.read()\n",
    "a parameter": "def entry(n=0):\n    if n == 1:\n        with state.enabled():\n"
    "            state.read()\n",
    "if FLAG after a sticky set": "def entry():\n    state.set_on(True)\n    if state._on:\n"
    "        state.read()\n",
    "a raise that an except may catch": "def fail():\n    try:\n        raise ValueError('x')\n"
    "    except ValueError:\n        pass\n\n"
    "def entry():\n    with state.enabled():\n        fail()\n        state.read()\n",
    "a raise a with may suppress": "import contextlib\n\ndef fail():\n"
    "    with contextlib.suppress(ValueError):\n        raise ValueError('x')\n\n"
    "def entry():\n    with state.enabled():\n        fail()\n        state.read()\n",
    "a finally that returns": "def fail():\n    try:\n        raise ValueError('x')\n"
    "    finally:\n        return 1\n\n"
    "def entry():\n    with state.enabled():\n        fail()\n        state.read()\n",
    "a raise behind an unknown test": "def fail(x):\n    if x:\n        raise ValueError('x')\n\n"
    "def entry():\n    with state.enabled():\n        fail(1)\n        state.read()\n",
    "the exception of a call that always raises skips a reset": "def fail():\n"
    "    raise ValueError('x')\n\n"
    "def step():\n    with state.leaky():\n        fail()\n\n"
    "def entry():\n    try:\n        step()\n    except ValueError:\n        pass\n"
    "    state.read()\n",
    "a setter called with a true constant expression": "def entry():\n    level = 2\n"
    "    state.set_on(level > 1)\n    state.read()\n",
    "a method that raises (a subclass elsewhere may override it)": "class Base:\n"
    "    def hook(self):\n        raise NotImplementedError\n\n"
    "    def run(self):\n        with state.enabled():\n            self.hook()\n"
    "            state.read()\n\n"
    "def entry():\n    Base().run()\n",
    "a shared class manager entered twice": "MODE = state.Mode()\n\n"
    "def entry():\n    with MODE:\n        with MODE:\n            pass\n    state.read()\n",
}


@pytest.mark.parametrize("case", sorted(NEVER))
def test_a_path_no_run_can_take_is_never(tmp_path: Path, case: str) -> None:
    assert not _observes(tmp_path, NEVER[case])


@pytest.mark.parametrize("case", sorted(OBSERVES))
def test_what_the_rules_must_not_decide_still_observes_set(tmp_path: Path, case: str) -> None:
    assert _observes(tmp_path, OBSERVES[case])


def test_flags_judged_in_one_run_share_only_what_no_flag_changes(tmp_path: Path) -> None:
    """Which functions never return is computed once for all the flags of a run
    (``interpret.FlagIndependent``): each flag's report is the one it gets alone,
    on a program where that set decides a *never* for one flag and not the other."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(_STATE)
    (pkg / "other.py").write_text(_STATE.replace("_on", "_other"))
    (pkg / "work.py").write_text(
        "from pkg import other, state\n\n" + NEVER["a call that always raises"] + "\n\n"
        "def entry2():\n    try:\n        with other.leaky():\n            fail()\n"
        "    except ValueError:\n        pass\n    other.read()\n\n"
        'if __name__ == "__main__":\n    entry()\n    entry2()\n'
    )
    flags, entries = ["pkg.state._on", "pkg.other._other"], [ENTRY, "pkg.work.entry2"]
    together = analyze([str(tmp_path)], flags, entries, jobs=1)
    alone = [analyze([str(tmp_path)], [f], entries, jobs=1).flags[0] for f in flags]
    assert list(together.flags) == alone
    verdicts = {(r.qualname, e.entry): e.observes_set for r in alone for e in r.entries}
    assert verdicts[("pkg.state._on", ENTRY)] is False  # fail() never returns
    assert verdicts[("pkg.other._other", "pkg.work.entry2")] is True  # its exception leaks
