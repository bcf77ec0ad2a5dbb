"""Which hazards a change to flagtrace's rules changed on real packages.

Why: a hazard is what the pre-commit hook and the review bot fail a commit on,
so a change to the hazard rules must say, package by package, which findings it
added and which it dropped (issue 19). This script runs ``flagtrace scan
--format json`` (every flag of a package, with its hazards) twice per package,
once with the flagtrace sources of an older checkout (``--old``, e.g. a
``git worktree add --detach /tmp/old REV``) and once with this checkout, and
prints the hazards only one of them reports, matched by (flag, code, function)
-- not by line or message, which the change may rephrase. Hazards whose message
changed are listed apart.

Each run is a child process with its own empty cache directory (the two
versions' summaries differ), so both runs are cold; the times are printed for
orientation only (the machine is noisy).

From the repository root::

    git worktree add --detach /tmp/old fe1e300
    python benchmarks/hazard_diff.py --old /tmp/old --packages sglang==0.5.9 vllm transformers

Packages are registry specs, downloaded once into ``.cache/`` (``tests.registry``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.registry import Registry  # noqa: E402

Key = tuple[str, str, str]


def package_roots(unpacked: Path) -> list[str]:
    """The top-level packages of an unpacked wheel (no ``*.dist-info``/``*.data``)."""
    return sorted(
        p.name
        for p in unpacked.iterdir()
        if p.is_dir() and not p.name.endswith((".dist-info", ".data")) and p.name != "__pycache__"
    )


def scan(tree: Path, unpacked: Path, timeout: float) -> tuple[dict[Key, dict[str, Any]], float]:
    """``flagtrace scan`` of the package with the sources under ``tree``: its hazards by key."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(tree), "FLAGTRACE_CACHE_DIR": cache}
        target = Path(out) / "scan.json"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "flagtrace", "scan", *package_roots(unpacked)]
            + ["--format", "json", "-o", str(target), "--quiet"],
            cwd=unpacked,
            env=env,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        if proc.returncode not in (0, 1, 2) or not target.exists():
            why = proc.stderr[-2000:]
            raise RuntimeError(f"scan with {tree} failed ({proc.returncode}): {why}")
        data = json.loads(target.read_text())
    hazards: dict[Key, dict[str, Any]] = {}
    for flag in data["flags"]:
        for h in flag["hazards"]:
            hazards[(flag["qualname"], h["code"], h["function"])] = h
    return hazards, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout with the old sources")
    parser.add_argument("--packages", nargs="+", default=["sglang==0.5.9"])
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json", type=Path, help="write the differences here too")
    args = parser.parse_args()
    registry = Registry(REPO / ".cache")
    results: dict[str, Any] = {}
    for spec in args.packages:
        unpacked = registry.download(spec)
        old, old_s = scan(args.old.resolve(), unpacked, args.timeout)
        new, new_s = scan(REPO, unpacked, args.timeout)
        added = sorted(set(new) - set(old))
        dropped = sorted(set(old) - set(new))
        reworded = sorted(k for k in set(old) & set(new) if old[k]["message"] != new[k]["message"])
        print(f"\n## {spec}: {len(old)} hazards before ({old_s:.0f} s), ", end="")
        print(f"{len(new)} after ({new_s:.0f} s)")
        for title, keys, side in (("added", added, new), ("dropped", dropped, old)):
            print(f"{title}: {len(keys)}")
            for k in keys:
                h = side[k]
                print(f"  {k[1]} {k[2]}  ({h['file']}:{h['line']})\n      {h['message']}")
        print(f"reworded: {len(reworded)}")
        for k in reworded:
            print(f"  {k[1]} {k[2]}\n      was: {old[k]['message']}")
            print(f"      now: {new[k]['message']}")
        results[spec] = {
            "before": len(old),
            "after": len(new),
            "added": [new[k] | {"flag": k[0]} for k in added],
            "dropped": [old[k] | {"flag": k[0]} for k in dropped],
            "reworded": [{"key": list(k), "was": old[k], "now": new[k]} for k in reworded],
        }
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
