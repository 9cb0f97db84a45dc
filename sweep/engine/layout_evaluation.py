"""A layout grid evaluated block by block: every output kept in memory, or the best layouts of each outer
cell kept on the device (``sweep plan``'s search)."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import DIMS, coordinate_attrs
from netsweep_jax.sweep.engine.compiled import layout_block_best
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays
from netsweep_jax.sweep.engine.layout_blocks import BLOCK_CONFIGS, BlockTables, block_shape, pow2
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid

MAX_CELLS_IN_MEMORY = 5 * 10**7  # a larger grid must be reduced (sweep plan)


def check_in_memory(grid: LayoutGrid) -> None:
    """Refuse, before any work, a grid of more configurations than it can keep, naming what made it large."""
    if grid.outer_size * grid.inner_size > MAX_CELLS_IN_MEMORY:
        raise InputError(
            f"{grid.outer_size * grid.inner_size:,} configurations ({grid.size_text(DIMS)}) are too many to "
            f"keep (at most {MAX_CELLS_IN_MEMORY:,}); give fewer values, or search them with sweep plan (it "
            f"keeps the best layouts only)"
        )


def evaluate_layouts_arrays(
    grid: LayoutGrid, block_configs: int = BLOCK_CONFIGS, progress: Callable[[int], object] | None = None
) -> dict:
    """Every kept output over the whole grid, through the engine's block loop
    (:func:`sweep.engine.dispatch.evaluate_arrays`): dict name -> array of ``grid.shape``."""
    check_in_memory(grid)
    return evaluate_arrays(grid, block_configs, progress=progress)  # type: ignore[arg-type]


def layouts_dataset(grid: LayoutGrid, arrays: dict) -> xr.Dataset:
    """The grid's outputs as an ``xarray.Dataset`` with units, the status rules and what was assumed."""
    coords = {d: xr.Variable(d, v, coordinate_attrs(d)) for d, v in grid.coords().items()}
    data = {name: xr.Variable(DIMS, a, grid.variable_attrs(name)) for name, a in arrays.items()}
    attrs = grid.cube_attrs()
    return xr.Dataset(
        data, coords=coords, attrs={"family": attrs.pop("family"), "dtype": grid.dtype, **attrs}
    )


def best_layouts(
    grid: LayoutGrid,
    keep: int = 3,
    block_configs: int = BLOCK_CONFIGS,
    progress: Callable[[int], object] | None = None,
    columns: int | None = None,
) -> dict:
    """The ``keep`` fastest feasible layouts of every outer cell.

    Returns dict: ``score`` [O, K] tokens/s (-inf: fewer feasible layouts), ``layout`` [O, K] flat
    layout index, and every output at them [O, K] (O = the outer cells in cube order). ``columns``
    caps the layouts each block searches (a power of two; the rest of the block is padding, so the compiled
    shape is the same)."""
    keep = min(keep, grid.inner_size)
    rows, cols = block_shape(grid, block_configs)
    cols = max(cols, keep)
    step = cols if columns is None else max(min(cols, pow2(columns, 8)), keep)
    # Searches keeping 1 to 4 layouts share one compiled block (top_k's k is a shape); the extra are cut off.
    compiled_keep = min(pow2(keep, 4), cols)
    # Not yet found: score -inf at a layout index past the last, so a real layout of equal score sorts first.
    best = {
        "score": np.full((grid.outer_size, keep), -np.inf),
        "layout": np.full((grid.outer_size, keep), grid.inner_size, np.int64),
    }
    picked: dict[str, np.ndarray] = {}
    tables = BlockTables(grid)
    with jax.enable_x64(grid.dtype == "float64"):
        dtype = jnp.float64 if grid.dtype == "float64" else jnp.float32
        for i in range(0, grid.inner_size, step):
            inner, real = tables.inner(i, cols)
            real[step:] = 0.0  # the next block's layouts
            inner_d, real_d = jnp.asarray(inner, dtype), jnp.asarray(real, dtype)
            for o in range(0, grid.outer_size, rows):
                r = min(rows, grid.outer_size - o)
                score, where, out = layout_block_best(
                    jnp.asarray(tables.outer(o, rows), dtype), inner_d, real_d, keep=compiled_keep
                )
                score = np.asarray(score, np.float64)[:r, :keep]
                where = np.asarray(where, np.int64)[:r, :keep] + i
                out = {k: np.asarray(v)[:r, :keep] for k, v in out.items()}
                _merge(best, picked, slice(o, o + r), score, where, out, keep)
                if progress:
                    progress(r * min(step, grid.inner_size - i))
    missing = ~np.isfinite(best["score"])  # fewer feasible layouts than asked for
    best["layout"][missing] = -1
    for v in picked.values():
        if v.dtype.kind == "f":
            v[missing] = np.nan
    return best | picked


def _merge(
    best: dict[str, np.ndarray],
    picked: dict[str, np.ndarray],
    rows: slice,
    score: np.ndarray,
    where: np.ndarray,
    out: dict[str, np.ndarray],
    keep: int,
) -> None:
    """Fold a block's candidates into the running best (ties: the lower layout index first)."""
    if not picked:
        for k, v in out.items():
            picked[k] = np.full(
                (best["score"].shape[0], keep), np.nan if v.dtype.kind == "f" else -1, v.dtype
            )
    scores = np.concatenate([best["score"][rows], score], axis=1)
    layouts = np.concatenate([best["layout"][rows], where], axis=1)
    order = np.lexsort((layouts, -scores), axis=1)[:, :keep]
    best["score"][rows] = np.take_along_axis(scores, order, axis=1)
    best["layout"][rows] = np.take_along_axis(layouts, order, axis=1)
    for k, v in out.items():
        both = np.concatenate([picked[k][rows], v], axis=1)
        picked[k][rows] = np.take_along_axis(both, order, axis=1)
