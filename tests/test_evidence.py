"""Typed or inferred: a call edge is ``typed`` only when a declaration says what
its callee is, ``inferred`` when only value flow does (``resolve.declared``).

Each case below is one call in a small module, with the grade its edge must get.
The fixture ``fixtures/flags/evidence_grades`` shows the same grades in witnesses
and verdicts.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flagtrace.api import build_callgraph, load_project
from flagtrace.model import Evidence, Location, Resolution, StepKind, WitnessStep
from flagtrace.setting import evidence_of

SOURCE = """
class A:
    def run(self):
        return 1

    @classmethod
    def make(cls):
        return cls.build()

    @classmethod
    def build(cls):
        return cls()

    @property
    def helper(self):
        return self.kernel

    def __init__(self):
        self.kernel = K()


class B(A):
    def run(self):
        return super().run()


class K:
    def go(self):
        return 2


class Holder:
    def __init__(self, given, typed: K):
        self.given = given
        self.typed = typed
        self.built = K()

    def use_given(self):
        return self.given.go()

    def use_typed(self):
        return self.typed.go()

    def use_built(self):
        return self.built.go()


def factory(fn):
    return fn()


def make_k():
    return K()


def make_k_typed() -> K:
    return K()


def local_constructor():
    a = A()
    return a.run()


def self_call(a: A):
    return a.helper.go()


def annotated(k: K):
    return k.go()


def unannotated(k):
    return k.go()


def container():
    ks = [K()]
    return ks[0].go()


def lambda_factory():
    return factory(lambda: 3)


def factory_result():
    return make_k().go()


def factory_result_typed():
    return make_k_typed().go()


def callers():
    unannotated(K())
    Holder(K(), K())
"""

CASES = [
    ("local_constructor", "pkg.mod.A.run", Resolution.TYPED),
    ("self_call", "pkg.mod.K.go", Resolution.TYPED),  # a property returning a declared field
    ("annotated", "pkg.mod.K.go", Resolution.TYPED),
    ("unannotated", "pkg.mod.K.go", Resolution.INFERRED),
    ("container", "pkg.mod.K.go", Resolution.INFERRED),
    ("factory", "pkg.mod.lambda_factory.<lambda1>", Resolution.INFERRED),
    ("factory_result", "pkg.mod.K.go", Resolution.INFERRED),
    ("factory_result_typed", "pkg.mod.K.go", Resolution.TYPED),
    ("Holder.use_given", "pkg.mod.K.go", Resolution.INFERRED),
    ("Holder.use_typed", "pkg.mod.K.go", Resolution.TYPED),
    ("Holder.use_built", "pkg.mod.K.go", Resolution.TYPED),
    ("B.run", "pkg.mod.A.run", Resolution.TYPED),  # super()
    ("A.make", "pkg.mod.A.build", Resolution.TYPED),  # cls in a classmethod
    ("lambda_factory", "pkg.mod.factory", Resolution.DIRECT),
]


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Resolution]:
    root: Path = tmp_path_factory.mktemp("evidence")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(textwrap.dedent(SOURCE))
    graph = build_callgraph(load_project([root / "pkg"], jobs=1))
    return {(e.caller, e.callee): e.resolution for e in graph.edges()}


@pytest.mark.parametrize(("caller", "callee", "grade"), CASES, ids=[c[0] for c in CASES])
def test_an_edge_is_typed_only_when_a_declaration_says_so(
    edges: dict[tuple[str, str], Resolution], caller: str, callee: str, grade: Resolution
) -> None:
    assert edges[(f"pkg.mod.{caller}", callee)] is grade


def test_inferred_sits_between_typed_and_by_name() -> None:
    order = list(Resolution)
    assert order.index(Resolution.TYPED) < order.index(Resolution.INFERRED)
    assert order.index(Resolution.INFERRED) < order.index(Resolution.BY_NAME)
    assert not Resolution.INFERRED.weak


def _step(resolution: Resolution | None, kind: StepKind = StepKind.CALL) -> WitnessStep:
    return WitnessStep(kind, "pkg.f", Location("pkg/f.py", 1), "pkg.g", resolution)


@pytest.mark.parametrize(
    ("grades", "evidence"),
    [
        ([Resolution.DIRECT, Resolution.TYPED, None], Evidence.RESOLVED),
        ([Resolution.TYPED, Resolution.INFERRED], Evidence.INFERRED),
        ([Resolution.INFERRED, Resolution.BY_NAME], Evidence.BY_NAME),
        ([Resolution.JEDI], Evidence.BY_NAME),
    ],
)
def test_the_verdict_takes_its_weakest_step(
    grades: list[Resolution | None], evidence: Evidence
) -> None:
    assert evidence_of([_step(g) for g in grades]) is evidence


def test_a_setting_hop_counts_towards_the_grade() -> None:
    enter = _step(Resolution.DIRECT, StepKind.ENTER)
    hop = WitnessStep(
        StepKind.CALL, "pkg.g", Location("pkg/g.py", 2), "pkg.h", Resolution.BY_NAME, setting=True
    )
    assert evidence_of([enter, hop, _step(Resolution.DIRECT)]) is Evidence.BY_NAME
