"""The framework idioms resolution approximates (issue 15 item 3), at the call-graph
level: which edges each idiom adds, which ``Approximation`` it labels them with,
and that the edges without one keep no label.

The flag-level behaviour (witnesses that show the label) is in the fixtures
``fixtures/flags/{factory_classmethod,cm_container,dict_registry,call_wrapper}``.
"""

from __future__ import annotations

import textwrap

import pytest

from flagtrace.api import build_callgraph, load_project
from flagtrace.callgraph import CallGraph
from flagtrace.model import Approximation, Resolution
from flagtrace.resolve.calls import approximated_resolution

SOURCE = """
from contextlib import ExitStack, contextmanager


class Base:
    def __init__(self, config):
        self.config = config

    @classmethod
    def from_config(cls, config):
        return cls(config)

    @classmethod
    def create(cls, config):
        return cls.prepare(config)

    @classmethod
    def prepare(cls, config):
        return None

    def clone(self):
        return type(self)(self.config)

    def copy(self):
        return self.__class__(self.config)


class Sub(Base):
    def __init__(self, config):
        super().__init__(config)

    @classmethod
    def prepare(cls, config):
        return None


MODELS = {}


def register(name):
    def wrap(cls):
        MODELS[name] = cls
        return cls

    return wrap


@register("a")
class ModelA:
    def __init__(self, config):
        pass


@register("b")
class ModelB:
    def __init__(self, config):
        pass


FIXED = {"a": Base, "b": Sub}


def by_name(name):
    return MODELS[name]({})


def by_get(name):
    cls = MODELS.get(name)
    return cls({})


def by_literal():
    return FIXED["a"]({})


class LinearA:
    def forward(self, x):
        return x


class LinearB(LinearA):
    def forward(self, x):
        return x


class LinearC:
    def forward(self, x):
        return x


def make_linear(style):
    linear_cls = {"a": LinearA, "b": LinearB}.get(style, LinearC)

    class Compatible(linear_cls):
        def forward(self, x):
            return super().forward(x)

    return Compatible()


class Wrapper:
    def __init__(self, inner):
        self.inner = inner

    def __call__(self, x):
        return x


class Runner:
    def __init__(self):
        self.model = ModelA({})

    def wrap(self):
        self.model = Wrapper(self.model)

    def step(self, x):
        return self.model(x)


def local_call(x):
    w = Wrapper(None)
    return w(x)


@contextmanager
def cm():
    yield


def enter_all():
    cms = [cm(), cm()]
    with ExitStack() as stack:
        for c in cms:
            stack.enter_context(c)


def enter_one():
    with ExitStack() as stack:
        stack.enter_context(cm())
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> CallGraph:
    root = tmp_path_factory.mktemp("approx")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(textwrap.dedent(SOURCE))
    return build_callgraph(load_project([root / "pkg"], jobs=1))


def labels(graph: CallGraph, caller: str) -> dict[str, Approximation | None]:
    """The analysed callees of ``caller`` with the approximation of their edge."""
    out: dict[str, Approximation | None] = {}
    for edge in graph.edges():
        if edge.caller == f"pkg.mod.{caller}" and edge.callee.startswith("pkg."):
            out[edge.callee.removeprefix("pkg.mod.")] = edge.approximation
    return out


def test_cls_in_a_classmethod_builds_the_class_and_its_subclasses(graph: CallGraph) -> None:
    assert labels(graph, "Base.from_config") == {
        "Base.__init__": None,
        "Sub.__init__": Approximation.CLASSMETHOD_FACTORY,
    }


def test_cls_method_dispatches_to_the_subclass_override(graph: CallGraph) -> None:
    assert labels(graph, "Base.create") == {
        "Base.prepare": None,
        "Sub.prepare": Approximation.CLASSMETHOD_FACTORY,
    }


@pytest.mark.parametrize("method", ["Base.clone", "Base.copy"])
def test_type_of_self_and_dunder_class_build_subclasses(graph: CallGraph, method: str) -> None:
    assert labels(graph, method) == {
        "Base.__init__": None,
        "Sub.__init__": Approximation.CLASSMETHOD_FACTORY,
    }


@pytest.mark.parametrize("caller", ["by_name", "by_get"])
def test_a_registry_filled_by_a_decorator_dispatches_to_its_values(
    graph: CallGraph, caller: str
) -> None:
    assert labels(graph, caller) == {
        "ModelA.__init__": Approximation.DICT_REGISTRY,
        "ModelB.__init__": Approximation.DICT_REGISTRY,
    }


def test_a_literal_key_picks_its_own_value_with_no_approximation(graph: CallGraph) -> None:
    assert labels(graph, "by_literal") == {"Base.__init__": None}


def test_super_reaches_every_class_a_base_expression_may_name(graph: CallGraph) -> None:
    # ``dict.get(key, default)``: every value and the default; ``super()`` in a class whose
    # base is one of them reaches each one's method, not only the first in the MRO
    assert set(labels(graph, "make_linear.Compatible.forward")) == {
        "LinearA.forward",
        "LinearB.forward",
        "LinearC.forward",
    }


def test_a_wrapper_assigned_over_an_attribute_is_called(graph: CallGraph) -> None:
    assert labels(graph, "Runner.step")["Wrapper.__call__"] is Approximation.CALL_WRAPPER


def test_a_local_built_by_a_constructor_is_typed_by_it(graph: CallGraph) -> None:
    assert labels(graph, "local_call")["Wrapper.__call__"] is None


def test_a_context_manager_taken_from_a_list_is_entered(graph: CallGraph) -> None:
    assert labels(graph, "enter_all")["cm"] is Approximation.CONTAINER_CONTEXT
    assert labels(graph, "enter_one")["cm"] is None


def test_stats_count_the_approximated_call_sites(graph: CallGraph) -> None:
    counts = dict(graph.stats().by_approximation)
    assert set(counts) == {a.value for a in Approximation}
    assert counts[Approximation.DICT_REGISTRY.value] == 4


@pytest.mark.parametrize("layer", list(Resolution))
def test_an_approximated_edge_is_never_stronger_than_inferred(layer: Resolution) -> None:
    graded = approximated_resolution(layer, Approximation.DICT_REGISTRY)
    stronger = (Resolution.DIRECT, Resolution.TYPED)
    assert graded is (Resolution.INFERRED if layer in stronger else layer)
    assert approximated_resolution(layer, None) is layer


def test_reporters_name_the_approximation_of_a_hop() -> None:
    from flagtrace.model import EntryVerdict, Evidence, Location, StepKind, WitnessStep
    from flagtrace.report.check_json import entry_dict
    from flagtrace.report.findings import step_message

    where = Location("pkg/models.py", 12)
    call = WitnessStep(
        StepKind.CALL,
        "pkg.models.Base.from_config",
        where,
        "pkg.models.Llama.__init__",
        Resolution.TYPED,
        text="cls(config)",
        approximation=Approximation.CLASSMETHOD_FACTORY,
    )
    enter = WitnessStep(
        StepKind.ENTER,
        "pkg.model.build",
        where,
        "pkg.contexts.ContextManagers",
        text="ContextManagers(contexts)",
        approximation=Approximation.CONTAINER_CONTEXT,
    )
    assert step_message(call, "pkg.state._flag").endswith("[typed] (classmethod-factory)")
    assert "ContextManagers() (container-context): _flag is set" in step_message(
        enter, "pkg.state._flag"
    )
    verdict = EntryVerdict("pkg.e", True, Evidence.RESOLVED, "", (enter, call))
    steps = entry_dict(verdict)["witness"]
    assert [s["approximation"] for s in steps] == ["container-context", "classmethod-factory"]
