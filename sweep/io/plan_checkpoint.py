"""``sweep plan --resume``: a plan's searches, checkpointed to ``OUT.partial`` as a reduced sweep's are (and
under ``--distributed``, each process's share of them, in a shard of the same format).

A plan searches its grid up to six times (the plan, an ideal network, each overlap switch flipped:
:func:`sweep.analysis.planning.plan`), each a search of the engine's block loop
(:func:`sweep.engine.layout_evaluation.best_layouts`). The checkpoint holds, for every search begun, the
blocks it has merged and its state (the best layouts so far), written every ``CHECKPOINT_BLOCKS`` blocks,
when a search ends and when the plan stops, to a new file renamed over ``OUT.partial`` (never a link or a
user's file), with the grid's fingerprint and a CRC-32 of everything it restores (a changed byte is
refused, not resumed into another plan). A resumed plan computes the same blocks in the same order, so its
cube equals one run's.
"""

import os
import zlib
from pathlib import Path

import h5py
import numpy as np

from netsweep_jax.sweep.core.errors import InputError, reason
from netsweep_jax.sweep.io.integrity import HDF5_ERRORS
from netsweep_jax.sweep.io.paths import new_temporary

CHECKPOINT_BLOCKS = 16
State = dict[str, np.ndarray]


def _checksum(fingerprint: str, searches: dict[int, tuple[int, State]]) -> int:
    crc = zlib.crc32(fingerprint.encode())
    for index in sorted(searches):
        done, state = searches[index]
        crc = zlib.crc32(f"{index}:{done}".encode(), crc)
        for name in sorted(state):
            a = np.ascontiguousarray(state[name])
            crc = zlib.crc32(name.encode() + str(a.dtype).encode() + str(a.shape).encode(), crc)
            crc = zlib.crc32(a.tobytes(), crc)
    return crc


class PlanCheckpoint:
    """The searches of one plan (``fingerprint``: its grid's and its options'), kept in ``path``."""

    def __init__(self, path: str | Path, fingerprint: str) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.searches: dict[int, tuple[int, State]] = {}  # search index -> (blocks merged, state)
        self._unsaved = 0

    def start(self, index: int) -> tuple[int, State] | None:
        """Where search ``index`` goes on from (None: from the start)."""
        return self.searches.get(index)

    def after_block(self, index: int) -> "_Hook":
        """``after_block(done, state)`` for search ``index``: keeps its state, saved every few blocks."""
        return _Hook(self, index)

    def record(self, index: int, done: int, state: State) -> None:
        """Hold search ``index``'s state (``done`` blocks merged), to be written by the next :meth:`save`."""
        self.searches[index] = (done, {k: np.array(v) for k, v in state.items()})

    def keep(self, index: int, done: int, state: State) -> None:
        """:meth:`record`, and :meth:`save` every ``CHECKPOINT_BLOCKS`` blocks."""
        self.record(index, done, state)
        self._unsaved += 1
        if self._unsaved >= CHECKPOINT_BLOCKS:
            self.save()

    def save(self) -> None:
        """Write every search's state to a new file, then rename it over the checkpoint."""
        tmp = new_temporary(self.path)
        try:
            with h5py.File(tmp, "w") as f:
                f.attrs["grid_fingerprint"] = self.fingerprint
                f.attrs["checksum"] = _checksum(self.fingerprint, self.searches)
                for index, (done, state) in self.searches.items():
                    g = f.create_group(f"search{index}")
                    g.attrs["blocks_done"] = done
                    for name, a in state.items():
                        g[name] = a
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)  # this run's own name
        self._unsaved = 0

    def load(self) -> None:
        """Restore the searches from a checkpoint of the same plan; refuse another plan's or a damaged one."""
        try:
            with h5py.File(self.path, "r") as f:
                if f.attrs.get("grid_fingerprint") != self.fingerprint:
                    raise InputError(
                        f"{self.path}: made for another plan; rerun with the same options, or --force",
                        param="resume",
                    )
                recorded = f.attrs.get("checksum")
                searches = {
                    int(name.removeprefix("search")): (
                        int(g.attrs["blocks_done"]),
                        {k: g[k][...] for k in g},
                    )
                    for name, g in f.items()
                }
        except InputError:
            raise
        except HDF5_ERRORS as e:
            raise InputError(
                f"{self.path}: not a readable checkpoint ({reason(e)}); rerun with --force", param="resume"
            ) from None
        if recorded is None or int(recorded) != _checksum(self.fingerprint, searches):
            raise InputError(
                f"{self.path}: the checkpoint is damaged (its checksum does not match what it holds); "
                f"resuming would give a wrong plan: rerun with --force to start over",
                param="resume",
            )
        self.searches = searches


class _Hook:
    """:meth:`PlanCheckpoint.after_block`'s callable."""

    def __init__(self, checkpoint: PlanCheckpoint, index: int) -> None:
        self.checkpoint, self.index = checkpoint, index

    def __call__(self, done: int, state: State) -> None:
        self.checkpoint.keep(self.index, done, state)
