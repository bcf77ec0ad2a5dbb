"""transformers' ``from_pretrained`` on the real code (issue 15 item 3).

``PreTrainedModel.from_pretrained`` collects its init contexts in the classmethod
``get_init_context`` (``set_quantized_state()`` among them), enters them through
the helper class ``ContextManagers`` (whose ``__enter__`` loops over them with
``ExitStack.enter_context``), and builds ``cls(config)``: whatever subclass it was
called on. A composite model's constructor then builds its parts with
``Part._from_config(...)``, which reads ``_is_quantized``. Before the
classmethod-factory and container-context approximations, flagtrace answered
*never* here.

The whole of transformers takes about 13 minutes to resolve on a 2-core machine,
so the test analyses the four files the path runs through, copied from the
registry's wheel with their package layout (nothing is imported or executed).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flagtrace.api import analyze
from flagtrace.model import Approximation, StepKind

if TYPE_CHECKING:
    from tests.conftest import PytestRegistry

pytestmark = pytest.mark.slow

FILES = (
    "__init__.py",
    "modeling_utils.py",
    "utils/__init__.py",
    "utils/generic.py",
    "models/__init__.py",
    "models/glm4v/__init__.py",
    "models/glm4v/modeling_glm4v.py",
)


def test_from_pretrained_builds_the_subclass_inside_the_collected_contexts(
    registry: PytestRegistry, tmp_path: Path
) -> None:
    wheel = registry.download("transformers==5.25.0")
    for name in FILES:
        target = tmp_path / "transformers" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel / "transformers" / name, target)
    report = analyze(
        [tmp_path / "transformers"],
        ["_is_quantized"],
        ["transformers.modeling_utils.PreTrainedModel.from_pretrained"],
        jobs=1,
    )
    (verdict,) = report.flags[0].entries
    assert verdict.observes_set, verdict.reason
    enter = next(s for s in verdict.witness if s.step is StepKind.ENTER)
    assert enter.callee == "transformers.utils.generic.ContextManagers"
    assert enter.approximation is Approximation.CONTAINER_CONTEXT
    after = verdict.witness[verdict.witness.index(enter) + 1 :]
    built = next(s for s in after if not s.setting)  # past the hops inside the manager
    assert built.text.startswith("cls(config")
    assert built.approximation is Approximation.CLASSMETHOD_FACTORY
    assert verdict.witness[-1].function.endswith("PreTrainedModel._from_config")
