"""A reduced sweep (``--reduce``) written to a file: its checkpoint in ``OUT.partial`` and the result cube.

The accumulators (:class:`~sweep.engine.reductions.ReducedRun`) live in memory; every
``CHECKPOINT_BLOCKS`` blocks they and the count of finished blocks are written to a new
file renamed over ``OUT.partial``, so ``--resume`` after a kill goes on from the last
checkpoint, computing the same blocks in the same order: the result is bit-identical.
"""

import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import h5py
import numpy.typing as npt

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.dispatch import run
from netsweep_jax.sweep.engine.grid import Grid
from netsweep_jax.sweep.engine.plan import Block, Plan
from netsweep_jax.sweep.engine.reductions import ReducedRun
from netsweep_jax.sweep.io.cube import FORMAT, write_dataset

CHECKPOINT_BLOCKS = 16


def save_checkpoint(state: ReducedRun, path: Path, fingerprint: str) -> None:
    """Checkpoint: accumulators and the count of finished blocks, written to a new file, then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    with h5py.File(tmp, "w") as f:
        f.attrs["grid_fingerprint"] = fingerprint
        f.attrs["blocks_done"] = state.done
        f.attrs["block_configs"] = state.plan.block_configs
        for v, acc in state.acc.items():
            f[f"{v}/value"] = acc.value
            f[f"{v}/position"] = acc.position
            for d, a in acc.index.items():
                f[f"{v}/index_{d}"] = a
    os.replace(tmp, path)


def load_checkpoint(state: ReducedRun, path: Path, fingerprint: str) -> None:
    """Restore the accumulators and the count of finished blocks from a checkpoint of the same grid."""
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("grid_fingerprint") != fingerprint:
                raise InputError(f"{path}: made for another grid or reduction; rerun with the same options, "
                                 f"or --force", param="resume")
            state.done = int(f.attrs["blocks_done"])
            for v, acc in state.acc.items():
                acc.value[...] = f[f"{v}/value"][...]
                acc.position[...] = f[f"{v}/position"][...]
                for d in acc.index:
                    acc.index[d][...] = f[f"{v}/index_{d}"][...]
    except (OSError, KeyError) as e:
        raise InputError(f"{path}: not a readable checkpoint ({e}); rerun with --force", param="resume") from None


def run_reduced(grid: Grid, plan: Plan, out: Path, partial: Path, *, resume: bool, command: str,
                progress: Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]] | None,
                kernel: str, after_block: Callable[[Block], None]) -> dict[str, int]:
    """Sweep ``grid`` reducing as it goes; write the result to ``out`` (a cube of the kept dims)."""
    state = ReducedRun(grid, plan)
    fingerprint = grid.fingerprint()
    if resume:
        load_checkpoint(state, partial, fingerprint)
    resumed = state.done
    skip = range(resumed)
    blocks = plan.blocks()

    def sink(block: Block, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
        state.add(block, arrays)
        if state.done % CHECKPOINT_BLOCKS == 0:
            save_checkpoint(state, partial, fingerprint)
        after_block(block)
        interrupts.raise_if_requested()

    total = sum(b.size for b in blocks)
    done_configs = sum(b.size for b in blocks[: state.done])
    try:
        with progress(total, done_configs) if progress else nullcontext() as advance:
            run(grid, plan, sink, skip=skip, progress=advance, kernel=kernel)
    except BaseException:
        save_checkpoint(state, partial, fingerprint)  # every finished block is kept
        raise
    # Not through OUT.partial: that is the checkpoint, kept until the result is in place.
    write_dataset(state.dataset(), out, command=command, temporary=out.with_name(out.name + ".reduced.tmp"),
                  attrs={"format": FORMAT, "dtype": grid.dtype, "store": grid.store_dtype})
    partial.unlink(missing_ok=True)
    return {"configs": total, "computed": total - done_configs, "resumed_blocks": resumed,
            "damaged_blocks": 0, "blocks": len(blocks)}
