"""A reduced sweep (``--reduce``) written to a file: its checkpoint in ``OUT.partial`` and the result cube.

The accumulators (:class:`~sweep.engine.reductions.ReducedRun`) live in memory; every
``CHECKPOINT_BLOCKS`` blocks they and the count of finished blocks are written to a new
file renamed over ``OUT.partial`` (:mod:`sweep.io.checkpoints`: a name of its own, a CRC-32 of
everything it restores), so ``--resume`` after a kill goes on from the last checkpoint, computing
the same blocks in the same order: the result is bit-identical.
"""

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy.typing as npt

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.blocks import Block, Blocking, share_of
from netsweep_jax.sweep.engine.dispatch import AnyGrid, run
from netsweep_jax.sweep.engine.reductions import ReducedRun
from netsweep_jax.sweep.io import checkpoints
from netsweep_jax.sweep.io.accumulated import run_accumulated, run_share
from netsweep_jax.sweep.io.checkpoints import CHECKPOINT_BLOCKS
from netsweep_jax.sweep.io.cube import grid_inputs
from netsweep_jax.sweep.io.paths import Claim

if TYPE_CHECKING:
    import xarray as xr


def _header(done: int, block_configs: int) -> str:
    """What a checkpoint's CRC-32 covers before the arrays: the block counts."""
    return f"{done},{block_configs}"


def _arrays(state: ReducedRun) -> dict[str, npt.NDArray[Any]]:
    """The accumulators by their name in the checkpoint."""
    out: dict[str, npt.NDArray[Any]] = {}
    for v, acc in state.acc.items():
        out[f"{v}/value"] = acc.value
        out[f"{v}/position"] = acc.position
        for d, a in acc.index.items():
            out[f"{v}/index_{d}"] = a
    return out


def save_checkpoint(state: ReducedRun, path: Path, fingerprint: str, claim: Claim | None = None) -> None:
    """Checkpoint: accumulators and the count of finished blocks, written to a new file, then renamed (held
    by ``claim``, the run's lock on ``path``)."""
    block_configs = state.blocking.block_configs
    attrs = {"blocks_done": state.done, "block_configs": block_configs}
    checkpoints.write(path, fingerprint, attrs, _arrays(state), _header(state.done, block_configs), claim)


def load_checkpoint(state: ReducedRun, path: Path, fingerprint: str) -> None:
    """Restore the accumulators and the count of finished blocks from a checkpoint of the same grid;
    refuse one whose checksum does not match what it holds."""
    attrs, arrays = checkpoints.read(
        path,
        fingerprint,
        lambda a: _header(int(a["blocks_done"]), int(a["block_configs"])),
        "grid or reduction",
        "cube",
    )
    done, block_configs = int(attrs["blocks_done"]), int(attrs["block_configs"])
    if (
        block_configs != state.blocking.block_configs
    ):  # another machine's default (its memory), or another run's
        raise InputError(
            f"{path}: cut into blocks of {block_configs} configurations where this run cuts {state.blocking.block_configs}"
            f": give every run (every process) the same --block-configs",
            param="block_configs",
        )
    if not 0 <= done <= len(state.blocking.blocks()):
        raise InputError(
            f"{path}: the checkpoint is damaged (its checksum does not match what it holds); "
            f"resuming would give a wrong cube: rerun with --force to start over",
            param="resume",
        )
    expected = _arrays(state)
    # What this version keeps no more (a layout status's labels, before 2026-12-05): another reduction's state.
    unknown = sorted(set(arrays) - set(expected))
    if unknown:
        raise InputError(
            f"{path}: written by another version's reduction (it holds {unknown[0]}); rerun with --force to "
            "start over",
            param="resume",
        )
    for name, a in expected.items():
        if name not in arrays:
            raise InputError(
                f"{path}: not a readable checkpoint (no {name}); rerun with --force", param="resume"
            )
        if a.shape != arrays[name].shape:
            raise InputError(
                f"{path}: written in other blocks than this run's; rerun with the --block-configs it was "
                "written with",
                param="resume",
            )
        a[...] = arrays[name]
    state.done = done


class Reduction:
    """A ``--reduce`` sweep as an :class:`~sweep.io.accumulated.Accumulation`: the grid's blocks merged into the
    accumulators (:class:`~sweep.engine.reductions.ReducedRun`) in order, checkpointed every
    ``CHECKPOINT_BLOCKS``.

    ``share = (process, processes)`` (``--distributed``, the job runner's :class:`~sweep.io.distributed.Shared`):
    the blocks ``index % processes == process`` alone, checkpointed as one machine's are (so a stopped process's
    share resumes), then written whole to its shard (:meth:`compute_share`); process 0 merges every shard's
    accumulators (:meth:`~sweep.engine.reductions.ReducedRun.merge`) into the reduced cube: one process's cube
    for max, min and argmax (a tie goes to the lower position either way), a mean's float64 sums added in
    another order."""

    def __init__(
        self,
        grid: AnyGrid,
        blocking: Blocking,
        progress: Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]] | None,
        kernel: str,
        after_block: Callable[[Block], None] = lambda block: None,
        share: tuple[int, int] | None = None,
    ) -> None:
        self.grid, self.blocking, self.progress, self.kernel, self.after_block = (
            grid,
            blocking,
            progress,
            kernel,
            after_block,
        )
        self.share = share
        self.mine = share_of(*share) if share is not None else None
        self.fingerprint = self.fingerprint_of(share[0] if share is not None else None)
        self.state = ReducedRun(grid, blocking)
        self.resumed = 0  # blocks merged before this run (a checkpoint's)
        self.shares: list[ReducedRun] = []  # every process's (process 0, once loaded)

    def fingerprint_of(self, process: int | None) -> str:
        """What a checkpoint of this reduction holds: the grid's, and a process's share of it (one process's
        checkpoint or shard is never taken for another's)."""
        if process is None or self.share is None:
            return self.grid.fingerprint()
        return f"{self.grid.fingerprint()}:share {process} of {self.share[1]}"

    def blocks(self) -> list[Block]:
        """The blocks this process merges, in order: every one, or its share's."""
        return [b for b in self.blocking.blocks() if self.mine is None or self.mine(b)]

    def load(self, path: Path) -> None:
        load_checkpoint(self.state, path, self.fingerprint)
        self.resumed = self.state.done

    def save(self, path: Path, claim: Claim | None = None) -> None:
        save_checkpoint(self.state, path, self.fingerprint, claim)

    def compute(self, path: Path, claim: Claim) -> None:
        def sink(block: Block, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
            self.state.add(block, arrays)
            if self.state.done % CHECKPOINT_BLOCKS == 0:
                self.save(path, claim)
            self.after_block(block)
            interrupts.raise_if_requested()

        _, total, done_configs = self.sizes()
        merged = [b.index for b in self.blocks()[: self.resumed]]
        with self.progress(total, done_configs) if self.progress else nullcontext() as advance:
            run(
                self.grid,
                self.blocking,
                sink,
                skip=merged,
                only=self.mine,
                progress=advance,
                kernel=self.kernel,
            )
        # a share holds part of the cells (a mean's others 0): checked once merged; only float16 refuses a value
        if self.share is None and self.grid.store_dtype == "float16":
            self.state.stored()  # a result its store cannot hold refused here, the run's checkpoint with it

    def sizes(self) -> tuple[int, int, int]:
        """(blocks, configurations, configurations merged before this run) of this process's blocks."""
        blocks = self.blocks()
        return len(blocks), sum(b.size for b in blocks), sum(b.size for b in blocks[: self.resumed])

    def compute_share(self, shard: Path, *, resume: bool) -> None:
        """This process's share (:func:`~sweep.io.accumulated.run_share`: checkpointed, resumed, then written
        whole to ``shard``)."""
        if not run_share(self, shard, resume=resume, finish=lambda: self.save(shard)):
            self.resumed = len(self.blocks())  # its shard was written whole before

    def load_shares(self, shards: "Sequence[Path]") -> None:
        self.shares = []
        for process, path in enumerate(shards):
            share = ReducedRun(self.grid, self.blocking)
            load_checkpoint(share, path, self.fingerprint_of(process))
            self.shares.append(share)

    def merge(self) -> None:
        merged = ReducedRun(self.grid, self.blocking)
        for share in self.shares:  # in process order
            merged.merge(share)
        self.state = merged

    def dataset(self) -> "xr.Dataset":
        return self.state.dataset()

    def attrs(self) -> dict[str, Any]:
        return _attrs(self.grid) | ({"processes": self.share[1]} if self.share is not None else {})

    def inputs(self, f: h5py.File) -> None:
        grid_inputs(self.grid)(f)  # a data-parallel cube's profiles and reduce-cost table, as the sweep's


def _attrs(grid: AnyGrid) -> dict[str, Any]:
    """A reduced cube's global attributes besides the dataset's own."""
    return {"family": grid.family.name, "dtype": grid.dtype, "store": grid.store_dtype, **grid.cube_attrs()}


def run_reduced(
    grid: AnyGrid,
    blocking: Blocking,
    out: Path,
    partial: Path,
    *,
    resume: bool,
    command: str,
    progress: Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]] | None,
    kernel: str,
    after_block: Callable[[Block], None],
    overwrite: bool = True,
) -> dict[str, int]:
    """Sweep ``grid`` reducing as it goes; write the result to ``out`` (a cube of the kept dims), through
    :func:`~sweep.io.accumulated.run_accumulated` with its checkpoint in ``partial``. Without ``overwrite``, a
    file that appeared at ``out`` while the sweep ran is kept: the finished accumulators stay in ``partial``, and
    ``--resume`` writes the cube from them (as a sweep's finished cube is kept, :func:`sweep.io.cube.finish`)."""
    job = Reduction(grid, blocking, progress, kernel, after_block)
    run_accumulated(job, out, partial, resume=resume, command=command, overwrite=overwrite)
    blocks, total, done_configs = job.sizes()
    return {
        "configs": total,
        "computed": total - done_configs,
        "resumed_blocks": job.resumed,
        "damaged_blocks": 0,
        "blocks": blocks,
    }
