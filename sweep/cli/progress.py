"""Progress of long sweeps on stderr: a bar (rich) on a terminal, else a line every few seconds."""

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

Advance = Callable[[int], None]
ProgressFactory = Callable[[int, int], contextlib.AbstractContextManager[Advance]]

# Without a terminal (a log file, a pipe, a batch job): a line this often, the first once this long has passed,
# so that a run of a few seconds prints none.
LINE_EVERY_S = 5.0


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

        # The rate in at most 7 characters (96.4M/s): at 80 columns "96,427,377 configs/s" cut the total short
        # ("82880000/5120000…" of 512,000,000, read as 16x past the end, a hunt).
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
                bar.update(task, rate=f"{rate_text(speed)}/s" if speed else "")

            yield advance

    return progress


def rate_text(per_second: float) -> str:
    """A rate in at most 5 characters from 0.01 up: 3 significant digits and an SI prefix (``96.4M``, ``512``,
    ``1.23k``)."""
    for prefix in ("", "k", "M", "G", "T", "P"):
        if per_second < 999.5:
            return f"{per_second:.3g}{prefix}"
        per_second /= 1000
    return f"{per_second:.0f}E"


def progress(
    quiet: bool, label: str, counted: str, clock: Callable[[], float] = time.monotonic
) -> ProgressFactory | None:
    """The progress a command shows: a bar where stderr is a terminal, else :func:`progress_lines`; none
    with ``--quiet``."""
    if quiet:
        return None
    return progress_bar(True) if sys.stderr.isatty() else progress_lines(label, counted, clock=clock)


def progress_lines(
    label: str, counted: str, clock: Callable[[], float] = time.monotonic, every: float | None = None
) -> ProgressFactory:
    """A ``progress(total, done)`` factory that writes, at most every ``every`` seconds of ``clock``, one line
    to stderr: ``plan: 2,032,128 of 6,096,384 layouts searched (33%) in 10 s; about 20 s left`` (``label``:
    ``plan``; ``counted``: what is counted, ``layouts searched``); nothing for a run shorter than ``every`` (default :data:`LINE_EVERY_S`).
    The time left is the rate since the first step's end, not since the start: the first step holds the
    compile (16 s of a 25 s plan), so a rate over it said "about 36 s left" a second before a plan ended.
    No line is written before the second step, when there is a rate to tell."""
    every = LINE_EVERY_S if every is None else every

    @contextlib.contextmanager
    def progress(total: int, done: int) -> Iterator[Advance]:
        start = clock()
        state = {"done": done, "said": start}
        first: dict[str, float] = {}  # the clock and the count at the first step's end

        def advance(n: int) -> None:
            state["done"] += n
            now = clock()
            if not first:
                first.update(at=now, count=state["done"])
                return
            if now - state["said"] < every:
                return
            state["said"] = now
            count, seconds = state["done"], now - start
            left = (total - count) * (now - first["at"]) / max(count - first["count"], 1)
            # under half a second is said so, not as "about 0 s left" (a hunt)
            remaining = f"about {left:.0f} s left" if left >= 0.5 else "under a second left"
            print(
                f"{label}: {count:,} of {total:,} {counted} ({count / max(total, 1):.0%}) in {seconds:.0f} s; "
                f"{remaining}",
                file=sys.stderr,
                flush=True,
            )

        yield advance

    return progress
