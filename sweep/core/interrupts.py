"""Ctrl-C and SIGTERM: one path, stopping a sweep at a block boundary.

While a sweep writes blocks (:func:`deferred`), SIGINT and SIGTERM only record that
they arrived; the sweep checks after each block it has written, and before it
renames the finished cube (:func:`raise_if_requested`), and stops there with
:class:`Interrupted`. So a signal never lands inside an HDF5 write or a JAX
callback, and it is never swallowed. Outside a sweep, :func:`install` makes SIGTERM
raise :class:`Interrupted` as Ctrl-C raises KeyboardInterrupt; the CLI turns either
into one line and exit code 128 + the signal's number (130, 143).
"""

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_requested: list[int] = []


class Interrupted(BaseException):
    """The process was asked to stop (like KeyboardInterrupt, not an ``Exception``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(exc: BaseException) -> int:
    """128 + the signal's number for an Interrupted or a KeyboardInterrupt."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def install() -> None:
    """SIGTERM raises :class:`Interrupted` (call once, in the main thread, at start-up)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are recorded, not raised (main thread only).

    A signal the process ignores (a background job's SIGINT) stays ignored.
    """
    _requested.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, lambda signum, frame: _requested.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def request(signum: int) -> None:
    """Record a stop request as a signal would (any thread; the test hook uses it)."""
    _requested.append(signum)


def requested() -> bool:
    """Whether a stop has been requested inside :func:`deferred`."""
    return bool(_requested)


def raise_if_requested() -> None:
    """Raise :class:`Interrupted` if a signal arrived inside :func:`deferred`."""
    if _requested:
        raise Interrupted(_requested[0])
