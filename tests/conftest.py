"""Shared fixtures: the committed fixture trees and the registry download cache.

The download helper lives in ``tests/registry.py`` without any pytest
dependency so benchmarks can use it too; here it only gains pytest's way of
failing. A download that cannot happen fails the test loudly, because a
silently skipped real-codebase test looks exactly like a passing one. Set
``FLAGTRACE_OFFLINE=1`` to skip such tests on purpose instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.registry import REPO, Registry, RegistryError

OFFLINE_VARIABLE = "FLAGTRACE_OFFLINE"


@dataclass(frozen=True, slots=True)
class PytestRegistry:
    """:class:`~tests.registry.Registry` whose failures end the test, not the session."""

    registry: Registry

    def download(self, spec: str, *, no_binary: bool = False) -> Path:
        try:
            return self.registry.download(spec, no_binary=no_binary)
        except RegistryError as error:
            if os.environ.get(OFFLINE_VARIABLE) == "1":
                pytest.skip(f"{OFFLINE_VARIABLE}=1 and {spec!r} is not cached: {error}")
            pytest.fail(
                f"{error}\n(set {OFFLINE_VARIABLE}=1 to skip tests that need downloads)",
                pytrace=False,
            )


@pytest.fixture(scope="session", autouse=True)
def _isolated_summary_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test (and every subprocess it starts) caches summaries in one
    session-wide temporary directory, never in the user's cache dir."""
    directory = tmp_path_factory.mktemp("flagtrace-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGTRACE_CACHE_DIR", str(directory))
        yield directory


@pytest.fixture(scope="session")
def registry() -> PytestRegistry:
    """Download registry packages once per machine, cached under ``<repo>/.cache``."""
    return PytestRegistry(Registry(REPO / ".cache"))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``<repo>/fixtures``: the committed mini projects with expected output beside them."""
    return REPO / "fixtures"
