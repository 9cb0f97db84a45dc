"""A reduced sweep (``--reduce``) written to a file: its checkpoint in ``OUT.partial`` and the result cube.

The accumulators (:class:`~sweep.engine.reductions.ReducedRun`) live in memory; every
``CHECKPOINT_BLOCKS`` blocks they and the count of finished blocks are written to a new
file renamed over ``OUT.partial`` (:mod:`sweep.io.checkpoints`: a name of its own, a CRC-32 of
everything it restores), so ``--resume`` after a kill goes on from the last checkpoint, computing
the same blocks in the same order: the result is bit-identical.
"""

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy.typing as npt

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.blocks import Block, BlockPlan
from netsweep_jax.sweep.engine.dispatch import AnyGrid, run
from netsweep_jax.sweep.engine.reductions import ReducedRun
from netsweep_jax.sweep.io import checkpoints
from netsweep_jax.sweep.io.cube import FORMAT, write_dataset
from netsweep_jax.sweep.io.paths import Claim

CHECKPOINT_BLOCKS = 16


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
    block_configs = state.plan.block_configs
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
    if block_configs != state.plan.block_configs or not 0 <= done <= len(state.plan.blocks()):
        raise InputError(
            f"{path}: the checkpoint is damaged (its checksum does not match what it holds); "
            f"resuming would give a wrong cube: rerun with --force to start over",
            param="resume",
        )
    for name, a in _arrays(state).items():
        if name not in arrays:
            raise InputError(
                f"{path}: not a readable checkpoint (no {name}); rerun with --force", param="resume"
            )
        if a.shape != arrays[name].shape:
            raise InputError(
                f"{path}: written with another block size; rerun with the same value", param="resume"
            )
        a[...] = arrays[name]
    state.done = done


def run_reduced(
    grid: AnyGrid,
    plan: BlockPlan,
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
    """Sweep ``grid`` reducing as it goes; write the result to ``out`` (a cube of the kept dims).

    ``partial`` is held (:class:`~sweep.io.paths.Claim`) from the start to the end of the run: another run on
    the same ``out`` is refused, ``--force`` and ``--resume`` too. Without ``overwrite``, a file that appeared at
    ``out`` while the sweep ran is kept: the finished accumulators stay in ``partial``, and ``--resume`` writes
    the cube from them (as a sweep's finished cube is kept, :func:`sweep.io.cube.finish`)."""
    state = ReducedRun(grid, plan)
    fingerprint = grid.fingerprint()
    claim = Claim(partial)
    if resume:
        load_checkpoint(state, partial, fingerprint)
    claim.take(new=not resume)
    try:
        return _sweep(
            grid, plan, state, out, claim, resume, command, progress, kernel, after_block, overwrite
        )
    finally:
        claim.release()


def _sweep(
    grid: AnyGrid,
    plan: BlockPlan,
    state: ReducedRun,
    out: Path,
    claim: Claim,
    resume: bool,
    command: str,
    progress: Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]] | None,
    kernel: str,
    after_block: Callable[[Block], None],
    overwrite: bool,
) -> dict[str, int]:
    """:func:`run_reduced`'s sweep and write, ``claim`` held."""
    partial, fingerprint = claim.path, grid.fingerprint()
    resumed = state.done
    skip = range(resumed)
    blocks = plan.blocks()

    def sink(block: Block, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
        state.add(block, arrays)
        if state.done % CHECKPOINT_BLOCKS == 0:
            save_checkpoint(state, partial, fingerprint, claim)
        after_block(block)
        interrupts.raise_if_requested()

    total = sum(b.size for b in blocks)
    done_configs = sum(b.size for b in blocks[: state.done])
    try:
        with progress(total, done_configs) if progress else nullcontext() as advance:
            run(grid, plan, sink, skip=skip, progress=advance, kernel=kernel)
    except InputError:
        if not resume:
            claim.remove()  # refused: nothing of this run's is kept
        raise
    except BaseException:
        save_checkpoint(state, partial, fingerprint, claim)  # every finished block is kept
        raise
    # Through a temporary file of its own: OUT.partial is the checkpoint, kept until the result is in place.
    try:
        write_dataset(
            state.dataset(),
            out,
            command=command,
            attrs={
                "format": FORMAT,
                "family": grid.family.name,
                "dtype": grid.dtype,
                "store": grid.store_dtype,
                **grid.cube_attrs(),
            },
            overwrite=overwrite,
            kept=partial,
        )
    except InputError:  # a file appeared at OUT meanwhile, kept: the result waits, whole, for --resume
        save_checkpoint(state, partial, fingerprint, claim)
        raise
    except BaseException:  # the disk refused the cube: a checkpoint written before stays, for --resume
        claim.remove_if_empty()
        raise
    claim.remove()
    return {
        "configs": total,
        "computed": total - done_configs,
        "resumed_blocks": resumed,
        "damaged_blocks": 0,
        "blocks": len(blocks),
    }
