"""The indexer: its cache key covers its own code.

The cache key tests guard a split of the indexer into modules: were a module of
the summary walk left out of ``index.INDEXER_SOURCES``, an edited walk would
read the summaries an older one wrote, and nothing else would notice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import flagtrace
from flagtrace.index import INDEXER_SOURCES

PACKAGE = Path(flagtrace.__file__).resolve().parent


def _run(code: str, *args: str, pythonpath: Path | None = None) -> str:
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=pythonpath,  # ``python -c`` imports from the working directory first
    )
    return done.stdout


def test_every_module_that_indexing_a_file_runs_is_part_of_the_cache_key(tmp_path: Path) -> None:
    """Index one file in a fresh interpreter and list the flagtrace modules it loaded."""
    source = tmp_path / "m.py"
    source.write_text("import os\n\nX = 1\n\n\ndef f():\n    return os.getcwd()\n")
    loaded = _run(
        """
        import sys
        from flagtrace.index import index_file
        from flagtrace.model import SourceFile
        result = index_file(SourceFile(sys.argv[1], "m", sys.argv[2]))
        assert result.summary is not None, result.diagnostic
        print(" ".join(m for m in sys.modules if m.startswith("flagtrace.")))
        """,
        str(source),
        str(tmp_path),
    ).split()
    files = {name.split(".", 1)[1].replace(".", "/") + ".py" for name in loaded}
    assert "summarize.py" in files
    assert files <= set(INDEXER_SOURCES), sorted(files - set(INDEXER_SOURCES))


def test_an_edit_to_any_module_of_the_walk_changes_the_cache_schema(tmp_path: Path) -> None:
    """Edit each indexer source in a copy of the package: each edit changes ``schema()``
    (and with it every summary key), the untouched copy does not."""
    shutil.copytree(PACKAGE, tmp_path / "flagtrace", ignore=shutil.ignore_patterns("__pycache__"))
    out = _run(
        """
        import sys
        from pathlib import Path
        from flagtrace.cache import schema
        from flagtrace.index import INDEXER_SOURCES
        package = Path(sys.argv[1]) / "flagtrace"
        print("-", schema())
        for name in INDEXER_SOURCES:
            path = package / name
            original = path.read_bytes()
            path.write_bytes(original + b"# an edit\\n")
            schema.cache_clear()
            print(name, schema())
            path.write_bytes(original)
        schema.cache_clear()
        print("-", schema())
        """,
        str(tmp_path),
        pythonpath=tmp_path,
    )
    rows = [line.split(" ", 1) for line in out.splitlines()]
    before, after = rows[0][1], rows[-1][1]
    assert before == after
    edited = {name: key for name, key in rows[1:-1]}
    assert set(edited) == set(INDEXER_SOURCES) and "summarize.py" in edited
    assert all(key != before for key in edited.values()), edited
