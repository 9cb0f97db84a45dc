"""A layout grid evaluated by the engine's block loop: every output kept in memory, or the best layouts of
each outer cell found on the device (``sweep plan``'s search)."""

from collections.abc import Callable

import numpy as np
import xarray as xr

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import DIMS, SETTING_DIMS, coordinate_attrs
from netsweep_jax.sweep.engine.blocks import Block, BlockPlan
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays, run
from netsweep_jax.sweep.engine.layout_blocks import BLOCK_CONFIGS
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid

MAX_CELLS_IN_MEMORY = (
    5 * 10**7
)  # a larger grid is written block by block (sweep grid) or searched (sweep plan)


def check_in_memory(grid: LayoutGrid) -> None:
    """Refuse, before any work, a grid of more configurations than it can keep, naming what made it large."""
    if grid.outer_size * grid.inner_size > MAX_CELLS_IN_MEMORY:
        raise InputError(
            f"{grid.outer_size * grid.inner_size:,} configurations ({grid.size_text(DIMS)}) are too many to "
            f"keep in memory (at most {MAX_CELLS_IN_MEMORY:,}); give fewer values, write them to a cube block by "
            f"block (sweep grid), or search them with sweep plan (it keeps the best layouts only)"
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
) -> dict:
    """The ``keep`` fastest feasible layouts of every outer cell, searched through the engine's block loop
    (:func:`sweep.engine.dispatch.run` with ``keep``: each block's best are found on the device and merged
    here).

    Returns dict: ``score`` [O, K] tokens/s (-inf: fewer feasible layouts), ``layout`` [O, K] flat
    layout index, and every output at them [O, K] (O = the outer cells in cube order)."""
    keep = min(keep, grid.inner_size)
    plan = BlockPlan(grid.sizes, block_configs, grid.family)
    # Not yet found: score -inf at a layout index past the last, so a real layout of equal score sorts first.
    best = {
        "score": np.full((grid.outer_size, keep), -np.inf),
        "layout": np.full((grid.outer_size, keep), grid.inner_size, np.int64),
    }
    picked: dict[str, np.ndarray] = {}
    sizes = [grid.sizes[d] for d in SETTING_DIMS]

    def sink(block: Block, arrays: dict) -> None:
        start = int(np.ravel_multi_index([s.start for s in block.outer_slab], sizes))
        rows = slice(start, start + arrays["score"].shape[0])
        _merge(best, picked, rows, arrays.pop("score"), arrays.pop("layout"), arrays, keep)

    run(grid, plan, sink, progress=progress, keep=keep)  # type: ignore[arg-type]
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
