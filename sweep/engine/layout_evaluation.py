"""A layout grid evaluated by the engine's block loop: every output kept in memory, or the best layouts of
each outer cell found on the device (``sweep plan``'s search)."""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.families import LAYOUTS
from netsweep_jax.sweep.core.layout_axes import DIMS, SETTING_DIMS
from netsweep_jax.sweep.engine import blocks
from netsweep_jax.sweep.engine.blocks import Block, Blocking
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays, run
from netsweep_jax.sweep.engine.layout_blocks import BLOCK_CONFIGS
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid

if TYPE_CHECKING:  # xarray at use: a sweep written to a cube never loads it (a quarter second at each start)
    import xarray as xr


def check_in_memory(grid: LayoutGrid) -> None:
    """Refuse, before any work, a grid of more configurations than it can keep (:func:`blocks.check_in_memory`,
    the rule both families keep), naming what made it large."""
    blocks.check_in_memory(
        grid.sizes,
        "write them to a cube block by block (sweep grid), or search them with sweep plan (it keeps the best "
        "layouts only)",
    )


def evaluate_layouts_arrays(
    grid: LayoutGrid, block_configs: int = BLOCK_CONFIGS, progress: Callable[[int], object] | None = None
) -> dict:
    """Every kept output over the whole grid, through the engine's block loop
    (:func:`sweep.engine.dispatch.evaluate_arrays`): dict name -> array of ``grid.shape``."""
    check_in_memory(grid)
    return evaluate_arrays(grid, block_configs, progress=progress)  # type: ignore[arg-type]


def layouts_dataset(grid: LayoutGrid, arrays: dict) -> "xr.Dataset":
    """The grid's outputs as an ``xarray.Dataset`` with units, the status rules and what was assumed."""
    import xarray as xr

    coords = {d: xr.Variable(d, v, LAYOUTS.coordinate_attrs(d)) for d, v in grid.coords().items()}
    data = {name: xr.Variable(DIMS, a, grid.variable_attrs(name)) for name, a in arrays.items()}
    attrs = grid.cube_attrs()
    return xr.Dataset(
        data, coords=coords, attrs={"family": attrs.pop("family"), "dtype": grid.dtype, **attrs}
    )


SearchState = dict[str, np.ndarray]
"""A search under way: ``score`` and ``layout`` [O, K] and every output at them [O, K], before the layouts
not found are marked (what :func:`best_layouts` continues from, and hands ``after_block``)."""


def best_layouts(
    grid: LayoutGrid,
    keep: int = 3,
    block_configs: int = BLOCK_CONFIGS,
    progress: Callable[[int], object] | None = None,
    *,
    start: tuple[int, SearchState] | None = None,
    after_block: Callable[[int, SearchState], None] | None = None,
    only: Callable[[Block], bool] | None = None,
    raw: bool = False,
) -> dict:
    """The ``keep`` fastest feasible layouts of every outer cell, searched through the engine's block loop
    (:func:`sweep.engine.dispatch.run` with ``keep``: each block's best are found on the device and merged
    here, block after block in a fixed order).

    ``start`` = (blocks done, state): go on from a search stopped after that many blocks (``sweep plan
    --resume``); ``after_block(blocks done, state)`` is called once each block is merged. A stop requested by
    SIGINT or SIGTERM (:mod:`sweep.core.interrupts`) is raised at the next block boundary. ``only(block)``
    keeps a share of the blocks (one process's, under ``sweep plan --distributed``), and ``raw`` returns the
    state as it stands (:data:`SearchState`), for :func:`merge_searches` to fold with the other shares'.

    Returns dict: ``score`` [O, K] tokens/s (-inf: fewer feasible layouts), ``layout`` [O, K] flat
    layout index (-1: none), and every output at them [O, K] (O = the outer cells in cube order)."""
    keep = min(keep, grid.inner_size)
    blocking = Blocking(grid.sizes, block_configs, grid.family)
    done = 0
    # Not yet found: score -inf at a layout index past the last, so a real layout of equal score sorts first.
    best = {
        "score": np.full((grid.outer_size, keep), -np.inf),
        "layout": np.full((grid.outer_size, keep), grid.inner_size, np.int64),
    }
    picked: dict[str, np.ndarray] = {}
    if start is not None:
        done, state = start[0], {k: v.copy() for k, v in start[1].items()}
        best = {k: state.pop(k) for k in ("score", "layout")}
        picked = state
    sizes = [grid.sizes[d] for d in SETTING_DIMS]

    def sink(block: Block, arrays: dict) -> None:
        nonlocal done
        interrupts.raise_if_requested()  # stop here, at a block boundary, if asked to
        start = int(np.ravel_multi_index([s.start for s in block.outer_slab], sizes))
        rows = slice(start, start + arrays["score"].shape[0])
        _merge(best, picked, rows, arrays.pop("score"), arrays.pop("layout"), arrays, keep)
        done += 1
        if after_block is not None:
            after_block(done, best | picked)

    # the first `done` blocks merged: of the share's own where it has one (a resumed process's share)
    merged = range(done) if only is None else [b.index for b in blocking.blocks() if only(b)][:done]
    run(grid, blocking, sink, skip=merged, progress=progress, only=only, keep=keep)  # type: ignore[arg-type]
    return best | picked if raw else _finished(best | picked)


def _finished(state: SearchState) -> dict:
    """A search's result from its state: the layouts not found (fewer feasible than asked for) marked -1, the
    outputs at them NaN."""
    out = {k: v.copy() for k, v in state.items()}
    missing = ~np.isfinite(out["score"])
    out["layout"][missing] = -1
    for k, v in out.items():
        if k != "score" and v.dtype.kind == "f":
            v[missing] = np.nan
    return out


def merge_searches(states: Sequence[SearchState], keep: int) -> dict:
    """One search's result from the states of its shares (each over every outer cell, -inf where its blocks
    found nothing): the best ``keep`` of each cell over all of them, ties to the lower layout index, as one
    search over every block gives."""
    best = {k: states[0][k].copy() for k in ("score", "layout")}
    picked = {k: v.copy() for k, v in states[0].items() if k not in best}
    everything = slice(0, best["score"].shape[0])
    for state in states[1:]:
        rest = {k: v for k, v in state.items() if k not in ("score", "layout")}
        _merge(best, picked, everything, state["score"], state["layout"], rest, keep)
    return _finished(best | picked)


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
