"""Facts flagtrace derives itself (flagtrace.derived): constructor constants and attribute
nullness, and the conditions under which neither is derived (it must hold on every run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagtrace.api import analyze

_STATE = (
    "import contextlib\n_on = False\n\n@contextlib.contextmanager\ndef enabled():\n"
    "    global _on\n    prev = _on\n    _on = True\n    try:\n        yield\n"
    "    finally:\n        _on = prev\n\ndef read():\n    return _on\n"
)
_RUNNER = (
    "from pkg import state\n\n"
    "class Runner:\n"
    "    def __init__(self, name, is_draft=False):\n"
    "        self.name = name\n"
    "        self.is_draft = is_draft\n\n"
    "    def forward(self):\n"
    "        return self._run()\n\n"
    "    def _run(self):\n"
    "        if not self.is_draft:\n"
    "            with state.enabled():\n"
    "                return state.read()\n"
    "        return state.read()\n\n"
    "class Worker:\n"
    "    def __init__(self):\n"
    "        self.runner = Runner('d', is_draft=True)\n\n"
    "    def step(self):\n"
    "        return self.runner.forward()\n"
)
ENTRY = "pkg.work.Worker.step"


def _observes(tmp_path: Path, work: str, assume: tuple[str, ...] = ()) -> bool:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "state.py").write_text(_STATE)
    (pkg / "work.py").write_text(work)
    report = analyze([str(tmp_path)], ["_on"], [ENTRY], jobs=1, assume=list(assume))
    (entry,) = [e for e in report.flags[0].entries if e.entry == ENTRY]
    return entry.observes_set


def test_a_constant_every_construction_passes_decides_the_guards_of_the_methods(
    tmp_path: Path,
) -> None:
    assert not _observes(tmp_path, _RUNNER)


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ("\ndef other():\n    return Runner('t', is_draft=False)\n", "a construction disagrees"),
        ("\ndef other():\n    return Runner('t')\n", "the default disagrees"),
        ("\ndef other(flag):\n    return Runner('t', flag)\n", "a construction passes no constant"),
        ("\ndef other(kw):\n    return Runner('t', **kw)\n", "a construction unpacks arguments"),
        ("\ndef other(obj):\n    obj.is_draft = False\n", "a store on an unknown receiver"),
        ("\ndef other(obj, name):\n    setattr(obj, name, 0)\n", "a setattr of any name"),
        ("\ndef other(obj):\n    setattr(obj, 'is_draft', 0)\n", "a setattr of the name"),
        ("\nREGISTRY = {'runner': Runner}\n", "the class escapes as a value"),
        ("\nclass Sub(Runner):\n    pass\n", "a subclass"),
        ("\nclass Other:\n    is_draft = False\n", "a class body binds the name"),
        (
            "\nfrom pkg.work import Runner as R\n\n"
            "def other():\n    return R('t', is_draft=False)\n",
            "a construction under another name",
        ),
    ],
)
def test_no_constant_is_derived_when_another_write_or_construction_may_exist(
    tmp_path: Path, extra: str, why: str
) -> None:
    assert _observes(tmp_path, _RUNNER + extra), why


def test_a_rebound_parameter_derives_nothing(tmp_path: Path) -> None:
    work = _RUNNER.replace(
        "        self.is_draft = is_draft\n",
        "        is_draft = not is_draft\n        self.is_draft = is_draft\n",
    )
    assert _observes(tmp_path, work)


_NULL = (
    "from pkg import state\n\n"
    "class Graph:\n"
    "    pass\n\n"
    "class Worker:\n"
    "    def __init__(self, cfg):\n"
    "        self.cfg = cfg\n"
    "        self.graph = None\n"
    "        self.init_graph()\n\n"
    "    def init_graph(self):\n"
    "        if not self.cfg.use_graph:\n"
    "            return\n"
    "        self.graph = Graph()\n\n"
    "    def step(self):\n"
    "        if self.graph is not None:\n"
    "            with state.enabled():\n"
    "                return state.read()\n"
    "        return state.read()\n"
)


def test_an_attribute_stored_only_behind_a_false_guard_is_none(tmp_path: Path) -> None:
    assert _observes(tmp_path, _NULL)  # no assumption: the store may run
    off = tmp_path / "off"
    off.mkdir()
    assert not _observes(off, _NULL, ("cfg.use_graph=False",))


@pytest.mark.parametrize(
    "extra",
    [
        "\ndef other(obj):\n    obj.graph = Graph()\n",
        "\ndef other(obj):\n    setattr(obj, 'graph', Graph())\n",
    ],
)
def test_nullness_needs_every_other_store_to_be_none(tmp_path: Path, extra: str) -> None:
    assert _observes(tmp_path, _NULL + extra, ("cfg.use_graph=False",))
