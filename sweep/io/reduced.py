"""A reduced sweep (``--reduce``) written to a file: its checkpoint in ``OUT.partial`` and the result cube.

The accumulators (:class:`~sweep.engine.reductions.ReducedRun`) live in memory; every
``CHECKPOINT_BLOCKS`` blocks they and the count of finished blocks are written to a new
file renamed over ``OUT.partial``, so ``--resume`` after a kill goes on from the last
checkpoint, computing the same blocks in the same order: the result is bit-identical.
The new file has a name of its own (:func:`~sweep.io.paths.new_temporary`: never a link
or a user's file), and the checkpoint carries a CRC-32 of everything it restores
(attribute ``checksum``): a changed byte is refused on ``--resume``, not resumed into
another result.
"""

import os
import zlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import InputError, reason
from netsweep_jax.sweep.engine.blocks import Block, BlockPlan
from netsweep_jax.sweep.engine.dispatch import AnyGrid, run
from netsweep_jax.sweep.engine.reductions import ReducedRun
from netsweep_jax.sweep.io.cube import FORMAT, write_dataset
from netsweep_jax.sweep.io.integrity import HDF5_ERRORS
from netsweep_jax.sweep.io.paths import new_temporary

CHECKPOINT_BLOCKS = 16


def _checksum(done: int, block_configs: int, arrays: Mapping[str, npt.NDArray[Any]]) -> int:
    """CRC-32 over what a checkpoint restores: the block counts, then every array by name."""
    crc = zlib.crc32(f"{done},{block_configs}".encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        crc = zlib.crc32(name.encode() + str(a.dtype).encode() + str(a.shape).encode(), crc)
        crc = zlib.crc32(a.tobytes(), crc)
    return crc


def _arrays(state: ReducedRun) -> dict[str, npt.NDArray[Any]]:
    """The accumulators by their name in the checkpoint."""
    out: dict[str, npt.NDArray[Any]] = {}
    for v, acc in state.acc.items():
        out[f"{v}/value"] = acc.value
        out[f"{v}/position"] = acc.position
        for d, a in acc.index.items():
            out[f"{v}/index_{d}"] = a
    return out


def save_checkpoint(state: ReducedRun, path: Path, fingerprint: str) -> None:
    """Checkpoint: accumulators and the count of finished blocks, written to a new file, then renamed."""
    arrays = _arrays(state)
    tmp = new_temporary(path)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["grid_fingerprint"] = fingerprint
            f.attrs["blocks_done"] = state.done
            f.attrs["block_configs"] = state.plan.block_configs
            f.attrs["checksum"] = _checksum(state.done, state.plan.block_configs, arrays)
            for name, a in arrays.items():
                f[name] = a
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # this run's own name


def load_checkpoint(state: ReducedRun, path: Path, fingerprint: str) -> None:
    """Restore the accumulators and the count of finished blocks from a checkpoint of the same grid;
    refuse one whose checksum does not match what it holds."""
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("grid_fingerprint") != fingerprint:
                raise InputError(
                    f"{path}: made for another grid or reduction; rerun with the same options, or --force",
                    param="resume",
                )
            done, block_configs = int(f.attrs["blocks_done"]), int(f.attrs["block_configs"])
            recorded = f.attrs.get("checksum")
            arrays = {name: f[name][...] for name in _arrays(state)}
    except InputError:
        raise
    except HDF5_ERRORS as e:
        raise InputError(
            f"{path}: not a readable checkpoint ({reason(e)}); rerun with --force", param="resume"
        ) from None
    if (
        recorded is None
        or int(recorded) != _checksum(done, block_configs, arrays)
        or block_configs != state.plan.block_configs
        or not 0 <= done <= len(state.plan.blocks())
    ):
        raise InputError(
            f"{path}: the checkpoint is damaged (its checksum does not match what it holds); "
            f"resuming would give a wrong cube: rerun with --force to start over",
            param="resume",
        )
    for name, a in _arrays(state).items():
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
) -> dict[str, int]:
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
    except InputError:
        raise  # refused: nothing to keep (the caller removes a checkpoint this run made)
    except BaseException:
        save_checkpoint(state, partial, fingerprint)  # every finished block is kept
        raise
    # Through a temporary file of its own: OUT.partial is the checkpoint, kept until the result is in place.
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
    )
    partial.unlink(missing_ok=True)
    return {
        "configs": total,
        "computed": total - done_configs,
        "resumed_blocks": resumed,
        "damaged_blocks": 0,
        "blocks": len(blocks),
    }
