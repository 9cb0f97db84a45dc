"""``sweep plan --resume``: a plan's searches, checkpointed to ``OUT.partial`` as a reduced sweep's are (and
under ``--distributed``, each process's share of them, in a shard of the same format).

A plan searches its grid up to six times (the plan, an ideal network, each overlap switch flipped:
:func:`sweep.analysis.planning.searches`), each a search of the engine's block loop
(:func:`sweep.engine.layout_evaluation.best_layouts`). The checkpoint holds, for every search begun, the
blocks it has merged and its state (the best layouts so far), written every ``CHECKPOINT_BLOCKS`` blocks
and when the plan stops, as :mod:`sweep.io.checkpoints` writes a checkpoint (a new file renamed over
``OUT.partial``, the grid's fingerprint, a CRC-32 of everything it restores). A resumed plan computes the
same blocks in the same order, so its cube equals one run's.
"""

from pathlib import Path

import numpy as np

from netsweep_jax.sweep.io import checkpoints
from netsweep_jax.sweep.io.checkpoints import CHECKPOINT_BLOCKS
from netsweep_jax.sweep.io.paths import Claim

State = dict[str, np.ndarray]
DONE = "blocks_done"  # the array of (search, blocks merged) rows


class PlanCheckpoint:
    """The searches of one plan (``fingerprint``: its grid's and its options'), kept in ``path``."""

    def __init__(self, path: str | Path, fingerprint: str) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.claim: Claim | None = (
            None  # the plan's lock on ``path`` (set by its job), moved onto each checkpoint
        )
        self.searches: dict[int, tuple[int, State]] = {}  # search index -> (blocks merged, state)
        self._unsaved = 0

    def start(self, index: int) -> tuple[int, State] | None:
        """Where search ``index`` goes on from (None: from the start)."""
        return self.searches.get(index)

    def after_block(self, index: int) -> "_Hook":
        """``after_block(done, state)`` for search ``index``: keeps its state, saved every few blocks."""
        return _Hook(self, index)

    def record(self, index: int, done: int, state: State) -> None:
        """Hold search ``index``'s state (``done`` blocks merged), to be written by the next :meth:`save`. The
        arrays are held, not copied (a search merges each block into them in place, and its state is whole at
        every block boundary, where this is called)."""
        self.searches[index] = (done, dict(state))

    def keep(self, index: int, done: int, state: State) -> None:
        """:meth:`record`, and :meth:`save` every ``CHECKPOINT_BLOCKS`` blocks."""
        self.record(index, done, state)
        self._unsaved += 1
        if self._unsaved >= CHECKPOINT_BLOCKS:
            self.save()

    def save(self) -> None:
        """Write every search's state to a new file, then rename it over the checkpoint."""
        arrays = {
            f"search{i}/{name}": a for i, (_, state) in self.searches.items() for name, a in state.items()
        }
        arrays[DONE] = np.array([(i, done) for i, (done, _) in sorted(self.searches.items())], np.int64)
        checkpoints.write(self.path, self.fingerprint, {}, arrays, "", self.claim)
        self._unsaved = 0

    def load(self) -> None:
        """Restore the searches from a checkpoint of the same plan; refuse another plan's or a damaged one."""
        _, arrays = checkpoints.read(self.path, self.fingerprint, lambda _: "", "plan", "plan")
        done = {int(i): int(n) for i, n in arrays.pop(DONE, np.zeros((0, 2), np.int64))}
        states: dict[int, State] = {i: {} for i in done}
        for key, a in arrays.items():
            group, _, name = key.partition("/")
            states.setdefault(int(group.removeprefix("search")), {})[name] = a
        self.searches = {i: (done.get(i, 0), state) for i, state in states.items()}


class _Hook:
    """:meth:`PlanCheckpoint.after_block`'s callable."""

    def __init__(self, checkpoint: PlanCheckpoint, index: int) -> None:
        self.checkpoint, self.index = checkpoint, index

    def __call__(self, done: int, state: State) -> None:
        self.checkpoint.keep(self.index, done, state)
