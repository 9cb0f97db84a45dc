"""The progress bar of long sweeps (rich), on stderr."""

import contextlib
from collections.abc import Callable, Iterator

Advance = Callable[[int], None]
ProgressFactory = Callable[[int, int], contextlib.AbstractContextManager[Advance]]


def progress_bar(enabled: bool) -> ProgressFactory | None:
    """A ``progress(total, done)`` context-manager factory for :func:`sweep.io.job.run_grid`, or None."""
    if not enabled:
        return None

    @contextlib.contextmanager
    def progress(total: int, done: int) -> Iterator[Advance]:
        # rich is imported only when a bar is drawn: it keeps `sweep --help` and quiet runs fast
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        columns = [
            TextColumn("sweep"),
            BarColumn(),
            TaskProgressColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task("sweep", total=total, completed=done, rate="")

            def advance(n: int) -> None:
                bar.advance(task, n)
                speed = bar.tasks[0].speed
                bar.update(task, rate=f"{speed:,.0f} configs/s" if speed else "")

            yield advance

    return progress
