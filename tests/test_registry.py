"""The download cache works offline once filled, and fails loudly when it cannot fill.

These tests never touch the network: archives are built in ``tmp_path`` and
``subprocess.run`` (pip) is replaced where a test must prove it is not called.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OFFLINE_VARIABLE, PytestRegistry
from tests.registry import Registry, RegistryError


def make_wheel(directory: Path, name: str = "demo", version: str = "1.0") -> Path:
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as bundle:
        bundle.writestr(f"{name}/__init__.py", "X = 1\n")
        bundle.writestr(f"{name}-{version}.dist-info/METADATA", "Name: demo\n")
    return path


def make_sdist(directory: Path, name: str = "demo", version: str = "1.0") -> Path:
    path = directory / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as bundle:
        data = b"X = 1\n"
        info = tarfile.TarInfo(f"{name}-{version}/{name}/__init__.py")
        info.size = len(data)
        bundle.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Registry:
    registry = Registry(tmp_path / "cache")
    registry.downloads.mkdir(parents=True)
    return registry


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pip must not run when the archive is cached")

    monkeypatch.setattr(subprocess, "run", refuse)


@pytest.fixture
def failing_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", "ERROR: network is unreachable")

    monkeypatch.setattr(subprocess, "run", fail)


@pytest.mark.usefixtures("no_pip")
def test_a_cached_wheel_is_unpacked_once_without_running_pip(cache: Registry) -> None:
    make_wheel(cache.downloads)
    unpacked = cache.download("demo==1.0")
    assert unpacked == cache.unpacked / "demo-1.0-py3-none-any"
    assert (unpacked / "demo" / "__init__.py").read_text() == "X = 1\n"
    (unpacked / "marker").write_text("kept")
    assert (cache.download("demo==1.0") / "marker").is_file()  # not unpacked again


@pytest.mark.usefixtures("no_pip")
def test_an_sdist_loses_its_single_top_level_directory(cache: Registry) -> None:
    make_sdist(cache.downloads)
    unpacked = cache.download("demo==1.0", no_binary=True)
    assert unpacked == cache.unpacked / "demo-1.0"
    assert (unpacked / "demo" / "__init__.py").is_file()


@pytest.mark.usefixtures("no_pip")
def test_no_binary_never_settles_for_a_cached_wheel(cache: Registry) -> None:
    make_wheel(cache.downloads)
    make_sdist(cache.downloads)
    assert cache.download("demo==1.0", no_binary=True).name == "demo-1.0"
    assert cache.download("Demo==1.0").name == "demo-1.0-py3-none-any"


def test_a_fetched_archive_is_recorded_so_unpinned_specs_are_cached_too(
    cache: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def fake_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        make_wheel(Path(command[command.index("-d") + 1]))
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    first = cache.download("demo")
    second = cache.download("demo")
    assert first == second == cache.unpacked / "demo-1.0-py3-none-any"
    assert len(calls) == 1
    assert calls[0][-1] == "demo" and "--no-deps" in calls[0]


@pytest.mark.usefixtures("failing_pip")
def test_a_failed_download_raises_with_pips_own_words(cache: Registry) -> None:
    with pytest.raises(RegistryError, match="network is unreachable"):
        cache.download("demo==2.0")


@pytest.mark.usefixtures("failing_pip")
def test_the_fixture_fails_the_test_when_a_download_fails(
    cache: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(OFFLINE_VARIABLE, raising=False)
    with pytest.raises(pytest.fail.Exception, match="FLAGTRACE_OFFLINE=1"):
        PytestRegistry(cache).download("demo==2.0")


@pytest.mark.usefixtures("failing_pip")
def test_the_fixture_skips_instead_when_offline_is_declared(
    cache: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OFFLINE_VARIABLE, "1")
    with pytest.raises(pytest.skip.Exception):
        PytestRegistry(cache).download("demo==2.0")
