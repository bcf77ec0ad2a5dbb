"""SARIF 2.1.0, shared by ``check --format sarif`` and ``review --format sarif``.

SARIF is what code-scanning services read (GitHub's ``github/codeql-action/upload-sarif``,
Azure DevOps, SonarQube, IDE viewers). What goes where, and why:

* one **rule** per code of ``rules.BY_CODE`` (FT001 and each hazard), with the summary as
  ``shortDescription``, the explanation as ``fullDescription`` and ``help``, and the bad and
  fixed examples in ``help.markdown``: a reader of an alert learns the fix where they are;
* one **result** per finding, at the read (FT001) or the hazard's line; ``relatedLocations``
  name the entry, the set site and the read (the setter and the flag for a hazard);
  ``partialFingerprints`` carry the fingerprint (``flagtrace.fingerprint``), so a service
  tracks an alert across unrelated line shifts as the baseline and the review do;
* each **witness** as a ``codeFlow`` with one ``threadFlow``: one location per hop with a
  message naming what the hop does and its guards, nested one level per call;
* **URIs** relative to ``%SRCROOT%`` (``originalUriBaseIds``), which has no ``uri`` of its
  own: the paths are as flagtrace was given them (run it from the repository root), and an
  absolute path of the machine that ran it would only leak into an uploaded file. Absolute
  paths (given on the command line) become ``file:`` URIs;
* a review's NEW results have ``baselineState: "new"``, its FIXED ones ``"absent"``;
* input errors become ``toolExecutionNotifications`` of the one invocation.

The log is written only through ``json.dumps``, which escapes every control character of the
analysed code's text; the guards and call texts quoted are capped (``report.text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from flagtrace import __version__
from flagtrace.model import Change, Diagnostic, Location, RelatedLocation, StepKind, WitnessStep
from flagtrace.report import json_pieces
from flagtrace.report.findings import Item, level, step_message
from flagtrace.rules import BY_CODE, Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
#: the project's home: its name on PyPI, where a published flagtrace lives
INFORMATION_URI = "https://pypi.org/project/flagtrace/"
SRCROOT = "%SRCROOT%"
#: the ``partialFingerprints`` key: the fingerprint scheme, versioned as the baseline's is
FINGERPRINT_KEY = "flagtrace/v1"
#: GitHub code scanning's limits on one run of a SARIF upload: it keeps this many
#: results, and rejects an upload with more than ``RESULTS_ACCEPTED``
RESULTS_KEPT = 5_000
RESULTS_ACCEPTED = 25_000

#: SARIF's ``threadFlowLocation.kinds`` (SARIF 3.38.8) for each step of a witness
_KINDS: dict[StepKind, list[str]] = {
    StepKind.CALL: ["call"],
    StepKind.ENTER: ["enter", "acquire"],
    StepKind.SET: ["call", "acquire"],
    StepKind.READ: ["danger"],
}
_BASELINE_STATE = {Change.NEW: "new", Change.FIXED: "absent"}


def _rule_name(rule: Rule) -> str:
    """``ExceptionLeak``, ``ObservesSet``: SARIF wants an identifier-like name."""
    words = rule.kind.value if rule.kind is not None else "observes-set"
    return "".join(w.capitalize() for w in words.split("-"))


def _rule(rule: Rule) -> dict[str, Any]:
    markdown = (
        f"{rule.explanation}\n\nReported:\n\n```python\n{rule.bad}```\n\n"
        f"Fixed:\n\n```python\n{rule.fixed}```\n"
    )
    return {
        "id": rule.code,
        "name": _rule_name(rule),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.explanation},
        "help": {"text": rule.explanation, "markdown": markdown},
        "helpUri": INFORMATION_URI,
        "defaultConfiguration": {"level": level(rule.code)},
        "properties": {"tags": ["global-state", "correctness"]},
    }


def artifact(path: str) -> dict[str, Any]:
    """An ``artifactLocation``: a relative reference under ``%SRCROOT%``, percent-encoded
    (a space, ``#`` or ``%`` in a file name would otherwise change the URI's meaning)."""
    if PureWindowsPath(path).is_absolute() and not PurePosixPath(path).is_absolute():
        return {"uri": PureWindowsPath(path).as_uri()}
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute():
        return {"uri": posix.as_uri()}
    return {"uri": quote(posix.as_posix(), safe="/"), "uriBaseId": SRCROOT}


def physical(loc: Location) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": artifact(loc.path),
            "region": {"startLine": loc.line, "startColumn": max(loc.column, 1)},
        }
    }


def _related(n: int, r: RelatedLocation) -> dict[str, Any]:
    return {"id": n, **physical(r.location), "message": {"text": r.message}}


def _code_flow(item: Item) -> dict[str, Any]:
    """The witness as one thread of execution: a location per hop, one level deeper per call."""
    locations = []
    depth = 0
    for i, step in enumerate(item.witness):
        locations.append(_hop(i, step, depth, item.flag))
        if step.step is StepKind.CALL:
            depth += 1
    name = item.flag.rpartition(".")[2]
    return {
        "message": {
            "text": f"how {item.function} reaches a read of {name} while it is set "
            f"({len(item.witness)} steps)"
        },
        "threadFlows": [{"locations": locations}],
    }


def _hop(i: int, step: WitnessStep, depth: int, flag: str) -> dict[str, Any]:
    return {
        "location": {**physical(step.location), "message": {"text": step_message(step, flag)}},
        "kinds": _KINDS[step.step],
        "nestingLevel": depth,
        "executionOrder": i + 1,
    }


def result(item: Item, rule_index: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": item.code,
        "ruleIndex": rule_index[item.code],
        "level": level(item.code),
        "message": {"text": item.message},
        "locations": [physical(item.location)],
    }
    if item.snippet:
        region = out["locations"][0]["physicalLocation"]["region"]
        region["snippet"] = {"text": item.snippet}
    if item.related:
        out["relatedLocations"] = [_related(n, r) for n, r in enumerate(item.related, 1)]
    out["partialFingerprints"] = {FINGERPRINT_KEY: item.fingerprint}
    if item.witness:
        out["codeFlows"] = [_code_flow(item)]
    if item.change is not None and item.change in _BASELINE_STATE:
        out["baselineState"] = _BASELINE_STATE[item.change]
    out["properties"] = {"flag": item.flag, "function": item.function}
    return out


def _notification(d: Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {"level": "error", "message": {"text": d.message}}
    if d.line is not None and not d.path.startswith("<"):
        out["locations"] = [physical(Location(d.path, d.line))]
    elif not d.path.startswith("<"):
        out["locations"] = [{"physicalLocation": {"artifactLocation": artifact(d.path)}}]
    return out


def log(
    items: Iterable[Item], errors: Iterable[Diagnostic], properties: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole SARIF log: one run of flagtrace with every rule, ``items`` as results and
    ``errors`` as notifications of its one invocation."""
    rules = list(BY_CODE.values())
    index = {r.code: i for i, r in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "flagtrace",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(r) for r in rules],
            }
        },
        "originalUriBaseIds": {
            SRCROOT: {"description": {"text": "The directory flagtrace was run from."}}
        },
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [_notification(d) for d in errors],
            }
        ],
        "columnKind": "unicodeCodePoints",
        # made as they are written (``dumps``): 28k results for SGLang's 144 flags
        "results": (result(item, index) for item in items),
    }
    if properties:
        run["properties"] = properties
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def upload_warnings(results: int) -> list[str]:
    """What to tell before a log of ``results`` results is uploaded to GitHub code
    scanning: past its limits, an upload is cut or refused with a message that does not
    say which flag made it so large."""
    if results > RESULTS_ACCEPTED:
        what = f"rejects a run of more than {RESULTS_ACCEPTED:,}"
    elif results > RESULTS_KEPT:
        what = f"keeps {RESULTS_KEPT:,} results of a run"
    else:
        return []
    return [
        f"the SARIF log has {results:,} results: GitHub code scanning {what} "
        "(name the flags to check, or the entries)"
    ]


def dumps(document: dict[str, Any]) -> Iterator[str]:
    """The log as text, a result at a time (``report.json_pieces``): JSON only, every
    control character of the analysed code escaped."""
    return json_pieces.dumps(document)
