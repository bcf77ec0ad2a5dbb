"""``model.record``: the frozen, slotted records every stage passes on, built by
an ``__init__`` of our own (slot setters, for speed) that must accept and refuse
exactly what the dataclass's would."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from flagtrace import model
from flagtrace.model import record


@record
class _Point:
    x: int
    y: int = 0
    label: str | None = None


def _records() -> list[type]:
    return [
        value
        for value in vars(model).values()
        if isinstance(value, type)
        and value.__module__ == "flagtrace.model"
        and dataclasses.is_dataclass(value)
    ]


def test_a_record_takes_positional_keyword_and_default_arguments() -> None:
    assert _Point(1) == _Point(x=1, y=0, label=None)
    assert _Point(1, 2, "a") == _Point(label="a", y=2, x=1)
    assert (_Point(3).x, _Point(3).y, _Point(3).label) == (3, 0, None)
    assert repr(_Point(1, 2)) == "_Point(x=1, y=2, label=None)"


def test_a_record_refuses_what_a_dataclass_refuses() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        _Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments"):
        _Point(1, 2, "a", 4)  # type: ignore[call-arg]
    point = _Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]


def test_a_record_pickles_and_hashes_as_before() -> None:
    point = _Point(1, 2, "a")
    assert pickle.loads(pickle.dumps(point)) == point
    assert hash(_Point(1, 2, "a")) == hash(point)
    assert _Point.__init__.__qualname__ == "_Point.__init__"


@pytest.mark.parametrize("cls", _records(), ids=lambda t: t.__qualname__)
def test_every_model_record_has_the_signature_of_its_fields(cls: type) -> None:
    """The generated ``__init__`` names and defaults each field as the dataclass
    would, so a call that suits one suits the other."""
    expected = [
        (f.name, inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(cls)
    ]
    signature = inspect.signature(cls)
    assert [(p.name, p.default) for p in signature.parameters.values()] == expected
    assert all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in signature.parameters.values()
    )
