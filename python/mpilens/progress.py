"""Progress display for analyses that take a while: a rich status line on stderr, shown only on a
terminal and not with --quiet."""

from __future__ import annotations

import sys
from types import TracebackType


class Steps:
    """Context manager returning a callable that announces the current step."""

    def __init__(self, quiet: bool = False) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self._status = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console

            self._status = Console(stderr=True).status("mpilens")
            self._status.__enter__()
        return self.step

    def step(self, what: str) -> None:
        """Show what is being done now."""
        if self._status is not None:
            self._status.update(f"mpilens: {what}")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.__exit__(exc_type, exc, tb)
