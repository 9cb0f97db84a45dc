"""Run the ``sweep`` command in this process, sending itself a signal after K blocks are written.

    python tests/sweep_driver.py K SIGNAME SWEEP-ARGS...

The tests of kill -9, Ctrl-C and SIGTERM need a process of their own to signal; this
driver is that process. It injects the stop through the library's ``after_block``
argument (no hook in the production code, no timers, no races): after the K-th
block is written the sweep records the stop request, so no further block is
written, then the process sends itself SIGNAME. K = 0 stops it once the partial file
is open, before any block is written. K = -1 runs the command without a stop.
"""

import contextlib
import functools
import os
import signal
import sys

from netsweep_jax.sweep.cli import entry
from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.io import job


def stop(signum):
    if signum != signal.SIGKILL:
        interrupts.request(
            signum
        )  # as the signal handler would: no further block is written, deterministically
    os.kill(os.getpid(), signum)


def stop_after(count, signum):
    written = []

    def after_block(block):  # on the writer thread
        written.append(block.index)
        if len(written) == count:
            stop(signum)

    return after_block


@contextlib.contextmanager
def stop_at_start(signum, total, done):
    """A ``progress`` factory that stops the sweep as it starts (the partial file is open)."""
    stop(signum)
    yield None


def main():
    count, name, *args = sys.argv[1:]
    count, signum = int(count), getattr(signal, name)
    if count >= 0:
        hooks = {"after_block": stop_after(count, signum)}
        if count == 0:
            hooks["progress"] = functools.partial(stop_at_start, signum)
        real = job.run_grid
        job.run_grid = lambda *a, **kw: real(*a, **{**kw, **hooks})
    # A shell that runs the tests in the background ignores SIGINT, and children inherit
    # that; reinstall Python's handler so the sweep sees Ctrl-C as a terminal delivers it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = ["sweep", *args]
    entry.main()


if __name__ == "__main__":
    main()
