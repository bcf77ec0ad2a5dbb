"""What a run says on stderr besides errors: a progress bar, then one summary line.

The bar appears only when stderr is a terminal, ``--quiet`` is off and the run
is still going after ``delay`` seconds (a warm run over a cached tree finishes
before it would show). It is transient: ``close()`` erases it before the
report is written. It counts files while indexing, then says ``analysing``
until ``close()``. The summary line is always printed unless ``--quiet``::

    flagtrace: 1403 files (1403 cached), 539,400 lines, 0 errors, 0.9s

``RunStatus`` plugs into ``load_project(on_start=..., on_result=...)``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from flagtrace.model import IndexResult


class RunStatus:
    """Progress bar while a run lasts, counts for its summary line."""

    def __init__(
        self,
        quiet: bool = False,
        *,
        delay: float = 1.0,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        console: Any = None,
    ) -> None:
        self.files = 0
        self.lines = 0
        self.errors = 0
        self.cached = 0
        self.total: int | None = None
        self._clock = clock
        self._started = clock()
        self._stream = stream if stream is not None else sys.stderr
        self._console = console
        self._show = not quiet and (console is not None or _is_tty(self._stream))
        self._delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._progress: Any = None
        self._task: Any = None
        self._closed = False
        self._closed_event = threading.Event()
        self._ticker: threading.Thread | None = None
        if self._show:
            import rich.progress  # noqa: F401  (here, not in the timer thread: workers may fork meanwhile)

            if delay <= 0:
                self._start_bar()
            else:
                self._timer = threading.Timer(delay, self._start_bar)
                self._timer.daemon = True
                self._timer.start()

    @property
    def seconds(self) -> float:
        return self._clock() - self._started

    @property
    def showing(self) -> bool:
        return self._progress is not None

    # ------------------------------------------------------------------
    # load_project callbacks

    def on_start(self, total: int) -> None:
        with self._lock:
            self.total = total
            self._refresh()

    def on_result(self, result: IndexResult) -> None:
        with self._lock:
            self.files += 1
            if result.summary is not None:
                self.lines += result.summary.lines
            if result.diagnostic is not None:
                self.errors += 1
            if result.cached:
                self.cached += 1
            self._refresh()

    __call__ = on_result

    def on_reused(self, files: int, lines: int) -> None:
        """Files a stored report made it unnecessary to index (counted as cached)."""
        with self._lock:
            self.files += files
            self.cached += files
            self.lines += lines
            self._refresh()

    # ------------------------------------------------------------------
    # The bar

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with self._lock:
            if self._closed or self._progress is not None:
                return
            console = self._console or Console(file=self._stream, stderr=self._stream is sys.stderr)
            self._progress = Progress(
                TextColumn("flagtrace: {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("files, {task.fields[cached]} cached, {task.fields[elapsed]}"),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task("indexing", total=self.total, cached=0, elapsed="")
            self._ticker = threading.Thread(
                target=self._tick, name="flagtrace-progress", daemon=True
            )
            self._ticker.start()
            self._refresh()
            self._progress.start()

    def _refresh(self) -> None:
        if self._progress is None:
            return
        done = self.total is not None and self.files >= self.total
        seconds = int(self.seconds)
        self._progress.update(
            self._task,
            total=self.total,
            completed=self.files,
            cached=self.cached,
            description="analysing" if done else "indexing",
            elapsed=f"{seconds // 60}:{seconds % 60:02d}",
        )

    def _tick(self) -> None:
        """Keep the elapsed time moving while no file comes in (and after the last)."""
        while not self._closed_event.wait(0.5):
            with self._lock:
                self._refresh()

    def close(self) -> None:
        """Erase the bar (if it showed); safe to call more than once."""
        with self._lock:
            self._closed = True
            self._closed_event.set()
            timer, self._timer = self._timer, None
            progress, self._progress = self._progress, None
        if timer is not None:
            timer.cancel()
        if progress is not None:
            progress.stop()

    def __enter__(self) -> RunStatus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------
    # The summary line

    def summary(self, errors: int | None = None, extra: str = "") -> str:
        """``flagtrace: N files (C cached), L lines, E errors, S.Ss``; ``errors``
        defaults to the files that could not be indexed."""
        errors = self.errors if errors is None else errors
        line = (
            f"flagtrace: {self.files} files ({self.cached} cached), {self.lines:,} lines, "
            f"{errors} error{'' if errors == 1 else 's'}, {self.seconds:.1f}s"
        )
        return f"{line}; {extra}" if extra else line


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
