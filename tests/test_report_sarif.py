"""``--format sarif`` for check and review: the log's content, and Microsoft's validator.

The logs are of real fixtures (``tests/report_samples.py``): witnesses through calls, enters,
sticky sets and guards, every hazard code, and the hostile fixture. Each is checked against
what the check found (rules, fingerprints, one thread-flow location per hop), then all of
them, with a review log, go through the SARIF multitool's ``validate`` (the JSON schema and
the SARIF rules) and the SARIF 2.1.0 JSON schema the multitool ships, with ``jsonschema``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flagtrace import __version__
from flagtrace.cli import main
from flagtrace.fingerprint import SourceLines, findings
from flagtrace.model import EntryVerdict
from flagtrace.report import CHECK, REVIEW, RenderOptions
from flagtrace.report.sarif import FINGERPRINT_KEY, SRCROOT
from flagtrace.rules import BY_CODE, OBSERVES_SET
from tests.npm_tools import SARIF_MULTITOOL, package_dir, sarif_multitool
from tests.report_samples import SARIF_CASES, case, chdir, check_args, check_report, review_report

HOSTILE = "markup_and_escapes"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``flagtrace check . ARGS --format sarif -o FILE`` of every case, and a review log."""
    out = tmp_path_factory.mktemp("sarif")
    mp = pytest.MonkeyPatch()
    mp.setenv("FLAGTRACE_CACHE_DIR", str(out / "cache"))
    written = {}
    try:
        for name in (*SARIF_CASES, HOSTILE):
            target = out / f"{name}.sarif"
            with chdir(case(name).root):
                assert main([*check_args(name), "--format", "sarif", "-o", str(target)]) == 1
            written[name] = target
    finally:
        mp.undo()
    review = out / "review.sarif"
    text = "".join(REVIEW["sarif"].render(review_report("sglang_story", "cm_no_finally"), _OPTS))
    review.write_text(text, encoding="utf-8")
    written["review"] = review
    return written


_OPTS = RenderOptions()


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_sarif_is_in_the_registries() -> None:
    assert "sarif" in CHECK.names() and "sarif" in REVIEW.names()


def test_the_driver_names_flagtrace_and_has_a_rule_per_code(logs: dict[str, Path]) -> None:
    doc = _load(logs["sglang_story"])
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("flagtrace", __version__)
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == list(BY_CODE)
    for rule in driver["rules"]:
        source = BY_CODE[rule["id"]]
        assert rule["shortDescription"]["text"] == source.summary
        assert rule["fullDescription"]["text"] == source.explanation
        assert source.bad in rule["help"]["markdown"] and source.fixed in rule["help"]["markdown"]
    assert run["originalUriBaseIds"] == {
        SRCROOT: {"description": {"text": "The directory flagtrace was run from."}}
    }


@pytest.mark.parametrize("name", SARIF_CASES)
def test_results_are_the_findings_with_their_fingerprints_and_witnesses(
    name: str, logs: dict[str, Path]
) -> None:
    run = _load(logs[name])["runs"][0]
    report = check_report(name)
    expected = list(findings(report, SourceLines(case(name).root)))
    results = run["results"]
    assert [r["ruleId"] for r in results] == [f.code for f in expected]
    rules = run["tool"]["driver"]["rules"]
    for result, found in zip(results, expected, strict=True):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == ("warning" if found.code == OBSERVES_SET else "error")
        assert result["partialFingerprints"] == {FINGERPRINT_KEY: found.fingerprint.digest}
        place = result["locations"][0]["physicalLocation"]
        assert place["artifactLocation"] == {"uri": found.location.path, "uriBaseId": SRCROOT}
        assert place["region"]["startLine"] == found.location.line
        assert place["region"]["snippet"]["text"]  # the line, read from the case's files
        if isinstance(found.subject, EntryVerdict):
            witness = found.subject.witness
            hops = result["codeFlows"][0]["threadFlows"][0]["locations"]
            assert len(hops) == len(witness)
            for hop, step in zip(hops, witness, strict=True):
                region = hop["location"]["physicalLocation"]["region"]
                assert region["startLine"] == step.location.line
                assert hop["location"]["message"]["text"].startswith(step.function)
                if step.guard:
                    assert "if " in hop["location"]["message"]["text"]
            related = [r["message"]["text"] for r in result["relatedLocations"]]
            assert related[0].startswith(f"entry point {found.subject.entry}")
            assert any("is set" in m for m in related[1:])
            assert related[-1].startswith(witness[-1].function)
        else:
            assert "codeFlows" not in result
            assert result["relatedLocations"][-1]["message"]["text"].startswith("flag ")


def test_hazard_codes_are_all_covered(logs: dict[str, Path]) -> None:
    """The cases together raise every hazard code and FT001, so every rule is validated."""
    codes = {r["ruleId"] for name in SARIF_CASES for r in _load(logs[name])["runs"][0]["results"]}
    assert codes == set(BY_CODE)


def test_review_results_have_their_baseline_state(logs: dict[str, Path]) -> None:
    report = review_report("sglang_story", "cm_no_finally")
    run = _load(logs["review"])["runs"][0]
    assert [r["baselineState"] for r in run["results"]] == [
        "new" if f.change.value == "new" else "absent" for f in report.findings
    ]
    assert [r["partialFingerprints"][FINGERPRINT_KEY] for r in run["results"]] == [
        f.fingerprint for f in report.findings
    ]
    assert run["properties"]["baseCommit"] == report.base_commit
    with_flows = [r for r in run["results"] if "codeFlows" in r]
    assert with_flows and all(r["ruleId"] == OBSERVES_SET for r in with_flows)


def test_paths_become_relative_references_or_file_uris() -> None:
    from flagtrace.report.sarif import artifact

    assert artifact("pkg/a b#c%.py") == {"uri": "pkg/a%20b%23c%25.py", "uriBaseId": SRCROOT}
    assert artifact("/abs/x.py") == {"uri": "file:///abs/x.py"}


def _multitool_problems(exe: Path, files: list[Path], out: Path) -> list[str]:
    done = subprocess.run(
        [str(exe), "validate", *map(str, files), "--output", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and out.is_file(), done.stdout + done.stderr
    results = _load(out)["runs"][0].get("results", [])
    return [
        f"{r.get('level')} {r['ruleId']}: {json.dumps(r['message'])} at "
        f"{json.dumps(r.get('locations', []))[:300]}"
        for r in results
        if r.get("level", "warning") in ("error", "warning")
    ]


def test_the_sarif_multitool_finds_no_error_or_warning(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    exe = sarif_multitool()
    files = list(logs.values())
    problems = _multitool_problems(exe, files, tmp_path / "validation.sarif")
    assert problems == []


def test_the_multitool_does_report_a_broken_log(logs: dict[str, Path], tmp_path: Path) -> None:
    """The validation above can fail: the same validator on one of the logs, broken the way a
    careless writer would (a line 0, an absolute path under %SRCROOT%), reports errors."""
    doc = _load(logs["cm_no_finally"])
    place = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    place["region"]["startLine"] = 0
    place["artifactLocation"]["uri"] = "/abs/pkg/flags.py"
    broken = tmp_path / "broken.sarif"
    broken.write_text(json.dumps(doc), encoding="utf-8")
    problems = _multitool_problems(sarif_multitool(), [broken], tmp_path / "validation.sarif")
    assert any("JSON1008" in p for p in problems) and any("SARIF1004" in p for p in problems)


def test_the_logs_match_the_sarif_schema(logs: dict[str, Path]) -> None:
    """The OASIS SARIF 2.1.0 schema (the copy in the multitool's package), with jsonschema:
    it checks enumerations (levels, baseline states, kinds) that the multitool lets pass."""
    package_dir(SARIF_MULTITOOL)
    schema_file = package_dir("@microsoft/sarif-multitool-linux@5.7.0") / "sarif-2.1.0.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8-sig"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    for name, path in logs.items():
        errors = [
            f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(_load(path))
        ]
        assert errors == [], name
