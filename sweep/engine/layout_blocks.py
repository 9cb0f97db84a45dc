"""A layout sweep's blocks: the host tables the device crosses.

A block (cut by :class:`sweep.engine.blocks.Blocking`, as a data-parallel sweep's) is ``R`` outer
cells by ``C`` layouts: the host hands the device one small table of the cells (their dims, model
shape, GPU, precision) and one of the layouts (their dims), and the device crosses them, so the work
per block on the host grows with R + C while the device's grows with R x C.
"""

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.layout_axes import PARALLEL_DIMS, SETTING_DIMS
from netsweep_jax.sweep.engine.blocks import Block, Blocking, Copy, pow2
from netsweep_jax.sweep.engine.compiled import layout_block_best, layout_block_outputs, layout_block_reduced
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid
from netsweep_jax.sweep.engine.reductions import DeviceReduction
from netsweep_jax.sweep.model.collectives import expected_max_normal

BLOCK_CONFIGS = 2**18  # configurations per block on a CPU
# e_N on a log grid of N (1/16 octave up to 2^30), interpolated on the device for each cell's GPU count.
_STRAGGLE_N = 2.0 ** (np.arange(0, 30 * 16 + 1) / 16.0)


@functools.lru_cache(maxsize=1)
def straggle_table() -> tuple[np.ndarray, np.ndarray]:
    """(log2 N [Q], e_N [Q]): the expected maximum of N standard normals (:mod:`sweep.model.collectives`),
    interpolated in log2 N for each cell's GPU count (error < 1e-4)."""
    return np.log2(_STRAGGLE_N), expected_max_normal(_STRAGGLE_N)


def _e_n(n: np.ndarray) -> np.ndarray:
    """e_N for GPU counts ``n``, interpolated in log2 N on :func:`straggle_table`."""
    log_n, e_n = straggle_table()
    return np.interp(np.log2(np.maximum(n, 1.0)), log_n, e_n)


class BlockTables:
    """The host tables a block crosses on the device: one row per outer cell, one per layout
    (:data:`sweep.engine.compiled.OUTER_COLUMNS`, :data:`~sweep.engine.compiled.INNER_COLUMNS`)."""

    def __init__(self, grid: LayoutGrid):
        self.grid = grid
        self.codes = grid.codes()
        self.outer_sizes = [len(self.codes[d]) for d in SETTING_DIMS]
        self.inner_sizes = [len(self.codes[d]) for d in PARALLEL_DIMS]
        tables = grid.tables()
        self.arch, self.gpu, self.precision = tables["arch"], tables["gpu"], tables["precision"]

    def outer(self, start: int, rows: int) -> np.ndarray:
        """[rows, OUTER_COLUMNS] for outer cells start.. (past the last: the last repeated)."""
        flat = np.minimum(np.arange(start, start + rows), self.grid.outer_size - 1)
        idx = dict(zip(SETTING_DIMS, np.unravel_index(flat, self.outer_sizes)))
        gpus = self.codes["gpus"][idx["gpus"]]
        columns = [self.codes[d][idx[d]] for d in SETTING_DIMS]
        columns += list(self.arch[idx["model"]].T) + list(self.gpu[idx["gpu"]].T)
        columns += list(self.precision[idx["precision"]].T) + [_e_n(gpus)]
        return np.stack(columns, axis=1)

    def inner(self, start: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
        """([cols, INNER_COLUMNS] for layouts start.., [cols] 1 for a layout of the sweep, 0 for padding)."""
        flat = np.arange(start, start + cols)
        real = (flat < self.grid.inner_size).astype(np.float64)
        idx = dict(
            zip(PARALLEL_DIMS, np.unravel_index(np.minimum(flat, self.grid.inner_size - 1), self.inner_sizes))
        )
        v = {d: self.codes[d][idx[d]] for d in PARALLEL_DIMS}
        columns = [v[d] for d in PARALLEL_DIMS] + [_e_n(v["dp"] * v["tp"] * v["pp"] * v["cp"])]
        return np.stack(columns, axis=1), real


class LayoutBlocks:
    """The layout family's blocks (its ``blocks`` hook: :mod:`sweep.core.families`): a table of setting cells and one of layouts, crossed on the device by
    :func:`layout_block_outputs`; with ``keep``, only each setting's ``keep`` fastest feasible layouts come
    back (:func:`layout_block_best`: ``sweep plan``'s search)."""

    kernel = "xla"

    def __init__(self, grid: LayoutGrid, blocking: Blocking, kernel: str, keep: int | None = None) -> None:
        # ``kernel``: the adapters' one signature (dispatch.BlockAdapter); a layout sweep runs on XLA (check_kernel refused Pallas).
        self.grid, self.blocking = grid, blocking
        self.tables = BlockTables(grid)
        self.dtype = np.dtype(grid.dtype)
        self.keep = keep
        # Searches keeping 1 to 16 layouts share one compiled block (top_k's k is a shape); the extra are cut
        # off. The 16 picked where 4 would do cost nothing to see: the kernel's other outputs at 16 of 8,192 lanes.
        self.compiled_keep = None if keep is None else min(pow2(keep, 16), blocking.ci_width)

    @staticmethod
    def pallas_refusal(grid: LayoutGrid, name: str) -> str:
        """Why the Pallas kernel ``name`` cannot run a layout sweep: it is the data-parallel recurrence's."""
        return (
            f"{name}: the Pallas kernel is the data-parallel recurrence's; a layout sweep runs on XLA (use xla "
            "or auto)"
        )

    def starts(self, block: Block) -> tuple[int, int]:
        """The block's first setting cell and first layout, as flat indices."""
        tables = self.tables
        outer = int(np.ravel_multi_index([s.start for s in block.outer_slab], tables.outer_sizes))
        inner = int(np.ravel_multi_index([s.start for s in block.inner_slab], tables.inner_sizes))
        return outer, inner

    def __call__(self, block: Block, copy: Copy, reduce: DeviceReduction | None) -> Any:
        blocking, tables = self.blocking, self.tables
        outer, inner = self.starts(block)

        def layouts() -> np.ndarray:
            return tables.inner(inner, blocking.ci_width)[0].astype(self.dtype)

        # Every input is placed on the block's device, kept or not: a compiled function's inputs placed or not
        # compile apart (their lowering differs), so a plan whose blocks split the layouts compiled its kernel again.
        columns = copy(
            "layouts" if blocking.splits_layouts else None, layouts
        )  # whole inner extent: one copy
        rows = copy(None, lambda: tables.outer(outer, blocking.kb_width).astype(self.dtype))
        collectives = self.grid.collectives_code
        if self.compiled_keep is None:  # every output; kept and cast on return
            # One compile of the kernel per block shape and dtype, whatever reduction follows (its own small
            # compile): the layout kernel takes seconds to compile.
            out = layout_block_outputs(rows, columns, collectives=collectives)
            return out if reduce is None else layout_block_reduced(out, reduce=reduce)
        count = block.size // (block.outer_lanes if blocking.splits_layouts else 1)  # the block's layouts

        def real() -> np.ndarray:  # 1 for a layout of this block, 0 for padding (or the next block's)
            return (np.arange(blocking.ci_width) < count).astype(self.dtype)

        mask = copy("real" if blocking.splits_layouts else None, real)
        return layout_block_best(rows, columns, mask, keep=self.compiled_keep, collectives=collectives)

    def collect(self, block: Block, result: Any) -> dict[str, npt.NDArray[Any]] | None:
        """With ``keep``, the best layouts of the block's settings (:meth:`collect_best`); else None: the
        dispatcher keeps every output."""
        return None if self.keep is None else self.collect_best(block, result)

    def collect_best(self, block: Block, result: Any) -> dict[str, npt.NDArray[Any]]:
        """``score`` [R, keep] (-inf: fewer feasible layouts), ``layout`` [R, keep] flat layout index and every
        output at them, for the block's R setting cells."""
        score, where, picked = result
        rows = block.outer_lanes if self.blocking.splits_layouts else 1
        keep = self.keep or 0
        out = {name: np.asarray(v)[:rows, :keep] for name, v in picked.items()}
        out["score"] = np.asarray(score, np.float64)[:rows, :keep]
        out["layout"] = np.asarray(where, np.int64)[:rows, :keep] + self.starts(block)[1]
        return out
