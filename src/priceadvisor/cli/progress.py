"""Live progress of a fetch cycle on stderr: one line per provider, gone when done.

While the display is live, log records go through its console (printed above it, never into
it), and the per-request retry lines are left out: each provider's line shows its current retry
and the fetch summary counts them.
"""

from __future__ import annotations

import logging
from types import TracebackType

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from priceadvisor.cli.output import clean

RETRY_LOGGER = "priceadvisor.collect.http"


class FetchProgress:
    def __init__(self, console: Console, providers: list[str]) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[provider]}"),
            # Messages carry provider text (errors, names): shown as text, never as markup.
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {
            p: self._progress.add_task("waiting", provider=p, total=None) for p in providers
        }
        self._saved_handlers: list[logging.Handler] = []
        self._saved_retry_level = logging.NOTSET

    def __enter__(self) -> FetchProgress:
        self._route_logs()
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()
        self._restore_logs()

    def update(self, provider: str, message: str) -> None:
        task = self._tasks.get(provider)
        if task is not None:
            self._progress.update(task, description=clean(message))

    def _route_logs(self) -> None:
        root, retries = logging.getLogger(), logging.getLogger(RETRY_LOGGER)
        self._saved_handlers, self._saved_retry_level = root.handlers[:], retries.level
        handler = RichHandler(console=self._progress.console, show_time=False, show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        root.handlers[:] = [handler]
        retries.setLevel(logging.WARNING)

    def _restore_logs(self) -> None:
        logging.getLogger().handlers[:] = self._saved_handlers
        logging.getLogger(RETRY_LOGGER).setLevel(self._saved_retry_level)
