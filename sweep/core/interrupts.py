"""Ctrl-C and SIGTERM: one path, stopping a sweep at a block boundary.

In the CLI, :func:`install` (the first thing ``sweep`` does) makes SIGINT and SIGTERM
raise :class:`Interrupted` and remembers every signal it sees (:func:`received`): a
signal that lands inside a library's import may come out as an ``ImportError``, or be
swallowed by a library that catches it, and the CLI still ends in one line and exit
code 128 + the signal's number (130, 143), never 0. While a sweep writes blocks
(:func:`deferred`), SIGINT and SIGTERM only record that they arrived; the sweep checks
after each block it has written, and before it renames the finished cube
(:func:`raise_if_requested`), and stops there with :class:`Interrupted`. So a signal
never lands inside an HDF5 write or a JAX callback, and it is never swallowed.
"""

import contextlib
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_requested: list[int] = []  # signals recorded inside the current deferred() block
_open: list[int] = [0]  # deferred() blocks open now (any thread): a request stops work only inside one
_received: list[int] = []  # every signal seen since install(), wherever it landed


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
    """The CLI's handler: remember the signal, and raise :class:`Interrupted` where that is safe."""
    _received.append(signum)
    _raise_where_safe(signum, frame)


RETRY_S = 0.005  # a signal that lands in an import or a gc callback is raised again this much later


def _raise_where_safe(signum: int, frame: FrameType | None) -> None:
    if not _unsafe(frame):
        raise Interrupted(signum)
    # Inside an import an exception turns into an ImportError, is swallowed by a library trying
    # an optional module, or crashes an extension module half initialised; a gc callback drops
    # it. So try again a moment later (SIGALRM), once the import or the callback is over.
    signal.signal(signal.SIGALRM, lambda alarm, later: _raise_where_safe(signum, later))
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)


def _unsafe(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside an import (the import system's frames are below it) or a
    gc callback."""
    callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib") or frame.f_code in callbacks:
            return True
        frame = frame.f_back
    return False


def _record(signum: int, frame: FrameType | None) -> None:
    _requested.append(signum)
    _received.append(signum)


def install() -> None:
    """SIGINT and SIGTERM raise :class:`Interrupted` and are remembered by :func:`received`
    (call once, in the main thread, at start-up). A signal the process ignores (a background
    job's SIGINT) stays ignored."""
    _received.clear()
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:
                signal.signal(s, _raise)
        if sys.unraisablehook is not _unraisable:
            _hooks.append(sys.unraisablehook)
            sys.unraisablehook = _unraisable


_hooks: list[Callable[[Any], object]] = []


def _unraisable(unraisable: Any) -> None:
    """Python drops (and prints) an exception raised where it cannot propagate (a ``__del__``, a
    weakref callback): our :class:`Interrupted` is not printed but raised again a moment later."""
    if not isinstance(unraisable.exc_value, Interrupted):
        _hooks[0](unraisable)
    elif threading.current_thread() is threading.main_thread():
        signal.signal(
            signal.SIGALRM, lambda alarm, later: _raise_where_safe(unraisable.exc_value.signum, later)
        )
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)


def finishing(on_signal: Callable[[int], object]) -> None:
    """The command has returned: SIGINT and SIGTERM from now on (the interpreter's teardown included) call
    ``on_signal(signum)``, which should end the process, and a retry pending from a signal that landed in an
    import is dropped (its alarm, firing after the teardown restores SIGALRM's default, killed the process
    with exit code 142 and nothing said). Main thread only; a signal the process ignores stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)

    def late(signum: int, frame: FrameType | None) -> None:
        _received.append(signum)
        on_signal(signum)

    for s in SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, late)


def ignore() -> None:
    """Ignore SIGINT and SIGTERM from now on (the CLI, reporting an interrupt and exiting)."""
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)  # and no retry of one that landed in an import
        for s in (*SIGNALS, signal.SIGALRM):
            signal.signal(s, signal.SIG_IGN)


def received() -> int | None:
    """The first signal seen since :func:`install`, even one a library caught; None if none."""
    return _received[0] if _received else None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are recorded, not raised (main thread only).

    A signal the process ignores (a background job's SIGINT) stays ignored. A signal seen
    before the block (one a library swallowed while the command started) stops it at once.
    """
    _requested.clear()
    if _received:
        raise Interrupted(_received[0])
    _open[0] += 1
    try:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in SIGNALS}
        for s, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(s, _record)
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    finally:
        _open[0] -= 1


def request(signum: int) -> None:
    """Record a stop request as a signal would (any thread; the test hook uses it)."""
    _requested.append(signum)


def requested() -> bool:
    """Whether a stop has been requested inside :func:`deferred`."""
    return bool(_requested)


def raise_if_requested() -> None:
    """Raise :class:`Interrupted` if a signal arrived inside the :func:`deferred` block open now. Outside one
    (a search the Python API runs) nothing is deferred, so nothing is raised: a request an earlier, interrupted
    command left (kept for the CLI's last word, :func:`requested`) does not stop the next one."""
    if _open[0] and _requested:
        raise Interrupted(_requested[0])
