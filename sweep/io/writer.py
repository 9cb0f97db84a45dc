"""Writing blocks on a background thread, in order, while the next blocks compute.

The engine hands finished blocks (numpy arrays) to :meth:`BlockWriter.put`; one
thread writes them to the cube in the order given. The queue holds at most
``depth`` blocks, so a disk slower than the kernel slows the sweep down instead of
filling memory, and a kernel slower than the disk never waits for it. Every HDF5
call of a sweep happens on this thread (h5py is not used from two threads at once).

An error on the writer thread (a full disk) is raised in the caller at its next
``put`` or at ``close``. After an interrupt has been requested
(:func:`sweep.core.interrupts.requested`), no further block is written: the cube stops at
a block boundary, and the blocks written so far are complete.
"""

import queue
import threading
from collections.abc import Callable, Mapping

import numpy as np

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.engine.blocks import Block

DEPTH = 2

Arrays = Mapping[str, np.ndarray]
Write = Callable[[Block, Arrays], None]
"""``write(block, arrays)``: writes one block (on the writer thread)."""


class BlockWriter:
    """Calls ``write(block, arrays)`` for each block put, on one background thread."""

    def __init__(self, write: Write, depth: int = DEPTH) -> None:
        self._write = write
        self._queue: queue.Queue[tuple[Block, Arrays] | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="netsweep-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None or self._stop.is_set() or interrupts.requested():
                continue  # keep draining so that put() never blocks forever
            try:
                self._write(*item)
            except BaseException as e:  # handed to the caller
                self._error = e

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def put(self, block: Block, arrays: Arrays) -> None:
        """Queue a block for writing (waits while ``depth`` blocks are already queued)."""
        self._raise()
        self._queue.put((block, arrays))

    def close(self) -> None:
        """Write what is queued, stop the thread, and raise its error if it had one."""
        self._queue.put(None)
        self._thread.join()
        self._raise()

    def abandon(self) -> None:
        """Stop without writing what is still queued (after an interrupt or an error)."""
        self._stop.set()
        self._queue.put(None)
        self._thread.join()
