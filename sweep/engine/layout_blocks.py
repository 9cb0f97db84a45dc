"""A layout sweep's blocks: the host tables the device crosses.

A block (cut by :class:`sweep.engine.blocks.Blocking`, as a data-parallel sweep's) is ``R`` outer
cells by ``C`` layouts: the host hands the device one small table of the cells (their dims, model
shape, GPU, precision) and one of the layouts (their dims), and the device crosses them, so the work
per block on the host grows with R + C while the device's grows with R x C.
"""

import functools

import numpy as np

from netsweep_jax.sweep.core.layout_axes import PARALLEL_DIMS, SETTING_DIMS
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid
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
