"""Live progress of a fetch cycle on stderr: one line per provider, gone when done."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from priceadvisor.cli.output import clean


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

    def __enter__(self) -> FetchProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def update(self, provider: str, message: str) -> None:
        task = self._tasks.get(provider)
        if task is not None:
            self._progress.update(task, description=clean(message))
