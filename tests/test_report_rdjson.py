"""``--format rdjson`` for check and review, validated against a JSON schema of reviewdog's
``DiagnosticResult``.

The schema is the one ``@umbrelladocs/rdformat-validator`` (npm) builds from reviewdog's
``proto/rdf`` definitions, stricter than reviewdog's generated ``DiagnosticResult.jsonschema``
(which requires nothing and allows any extra key): it requires ``message`` and ``location``,
a ``start`` with a ``line`` >= 1, severities from the enum, and no unknown keys. It is taken
from the installed package with node (nothing of it is committed) and applied with
``jsonschema``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flagtrace.fingerprint import SourceLines
from flagtrace.model import Location
from flagtrace.report import CHECK, REVIEW, RenderOptions
from flagtrace.report.rdjson import location
from tests.npm_tools import RDFORMAT_VALIDATOR, package_dir
from tests.report_samples import SARIF_CASES, case, chdir, check_report, review_report

HOSTILE = "markup_and_escapes"


@pytest.fixture(scope="module")
def schema() -> Any:
    where = package_dir(RDFORMAT_VALIDATOR)
    node = shutil.which("node")
    assert node is not None
    script = "process.stdout.write(JSON.stringify(require(process.argv[1]).rdformatSchema))"
    done = subprocess.run(
        [node, "-e", script, str(where / "dist" / "types" / "schema.js")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _check(name: str) -> Any:
    report = check_report(name)
    with chdir(case(name).root):
        return json.loads("".join(CHECK["rdjson"].render(report, RenderOptions())))


def _errors(schema: Any, doc: Any) -> list[str]:
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("name", (*SARIF_CASES, HOSTILE))
def test_check_rdjson_matches_the_schema(name: str, schema: Any) -> None:
    doc = _check(name)
    assert _errors(schema, doc) == []
    assert doc["source"]["name"] == "flagtrace" and doc["diagnostics"]


def test_the_schema_rejects_what_reviewdog_cannot_read(schema: Any) -> None:
    doc = _check("cm_no_finally")
    doc["diagnostics"][0]["severity"] = "FATAL"
    del doc["diagnostics"][1]["location"]
    assert len(_errors(schema, doc)) >= 1


def test_witness_hops_are_related_locations() -> None:
    doc = _check("sglang_story")
    observing = [d for d in doc["diagnostics"] if d["code"]["value"] == "FT001"]
    assert observing
    for d in observing:
        hops = [r for r in d["related_locations"] if r["message"].startswith("step ")]
        n = len(hops)
        assert n >= 3 and hops[0]["message"].startswith(f"step 1/{n} (call)")
        assert hops[-1]["message"].startswith(f"step {n}/{n} (read)")
        assert d["related_locations"][0]["message"].startswith("entry point ")
        assert d["severity"] == "WARNING"


def test_columns_count_utf8_bytes(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 'é数'; y = flag\n", encoding="utf-8")
    lines = SourceLines(tmp_path)
    # "y" is the 12th character and the 15th byte ("é" is 2 bytes, "数" 3)
    assert location(Location("m.py", 1, 12), lines)["range"]["start"] == {"line": 1, "column": 15}
    # a line that cannot be read keeps the character column
    assert location(Location("gone.py", 3, 7), lines)["range"]["start"]["column"] == 7


def test_review_rdjson_has_only_new_findings(schema: Any) -> None:
    report = review_report("sglang_story", "cm_no_finally")
    with chdir(case("sglang_story").root):
        doc = json.loads("".join(REVIEW["rdjson"].render(report, RenderOptions())))
    assert _errors(schema, doc) == []
    assert [d["message"] for d in doc["diagnostics"]] == [f.message for f in report.new]
