"""Progress of analyses that take a while: a rich progress bar on stderr, shown only on a terminal
and not with --quiet."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any


class Steps:
    """Context manager returning a callable that announces the next step of `total`."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = total
        self.enabled = not quiet and sys.stderr.isatty()
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("mpilens: {task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task("starting", total=self.total)
        return self.step

    def step(self, what: str) -> None:
        """Mark the previous step done and show what is being done now."""
        if self._progress is not None:
            task = self._progress.tasks[0]
            self._progress.update(self._task, description=what, completed=min(task.completed + 1, self.total))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, tb)
