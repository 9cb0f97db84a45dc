"""``sweep plan``: the fastest feasible layouts of a large model on a cluster, per network setting.

The layout dims (dp, tp, pp, cp, ep, micro-batch, schedule, recompute, sequence
parallelism, ZeRO) not given are searched over :func:`search_space`; every other dim
is kept. :func:`sweep.engine.layouts.best_layouts` keeps the ``keep`` fastest layouts
that can exist and fit in memory (tokens per second) of each kept cell on the device,
so no layout is written. The result is a cube over the kept dims and ``rank``, each
layout's coordinates and outputs its variables, and a table that says, for each
layout, what the step waits on.

Whether the network is the bottleneck is the paper's question asked of the plan: per
setting, the best layout's step T against the best layout's step T_ideal on an ideal
network (NICs of unbounded bandwidth at full utilization, no latency; NVLink as it is; flat collectives,
since NCCL's own latencies are not the NICs'),
searched over the same layouts, so a layout that only wins because the network is slow
(full recomputation to fit a smaller TP, say) is charged to the network:

    network_cost = 1 - T_ideal / T          (the share of the step the network costs)

and the setting is network-bound when network_cost >= :data:`BOTTLENECK_SHARE`.

What the stack's overlap switches would change (:func:`switch_changes`): each setting searched
again with each switch flipped (on if the sweep had it off, off if on), its best step over the best
step less one (``switch_change``: negative saves time). The switches are one value per sweep, not a
searched dim: a cube holds at most 32 dims (HDF5's rank limit) and a layout cube has them all.
"""

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import xarray as xr

from netsweep_jax.kernels.layout import STATUS
from netsweep_jax.sweep.core.errors import Infeasible, InputError, sizes_named
from netsweep_jax.sweep.core.families import LAYOUTS
from netsweep_jax.sweep.core.layout_axes import (
    AXES,
    BREAKDOWN,
    COLLECTIVES_MODES,
    PARALLEL_DIMS,
    PLAN_HELD,
    PLAN_SEARCHED,
    RECOMPUTES,
    SETTING_DIMS,
    VARIABLES,
    waits_on,
)
from netsweep_jax.sweep.core.sweep_settings import OVERLAP_SWITCHES
from netsweep_jax.sweep.core.values import json_ready
from netsweep_jax.sweep.core.wording import counted, rounded
from netsweep_jax.sweep.engine.layouts import LayoutGrid, best_layouts, evaluate_layouts_arrays
from netsweep_jax.sweep.model.compute import GPUS, PRECISIONS, system_settings
from netsweep_jax.sweep.model.llms import LLM

# What the network must cost for it to be called the bottleneck: the share of the best layout's step
# that an ideal network would save.
BOTTLENECK_SHARE = 0.2
IDEAL_GBPS = 1e9  # an ideal NIC, Gbit/s: every transfer across nodes takes no time worth counting
# The ideal network, in the axes' stored units: an ideal NIC at full utilization and no latency.
IDEAL_NETWORK = {"bandwidth": IDEAL_GBPS, "utilization": 1.0, "latency": 0.0}
# The most network settings one plan searches: it prints a line and keeps ``keep`` layouts' outputs per setting,
# and searches each setting six times (the plan, an ideal network, each overlap switch flipped).
MAX_SETTINGS = 10**5
# The most settings with no feasible layout whose reason a plan finds (each evaluates all of its layouts again).
MAX_REASONS = 32
NO_LAYOUT = -1  # the status of a plan's rank that no layout fills (its rules say so)


def check_size(grid: LayoutGrid) -> None:
    """Refuse, before any work, a plan of more settings than :data:`MAX_SETTINGS`, naming what made it large."""
    if grid.outer_size > MAX_SETTINGS:
        text, names = sizes_named({d: grid.sizes[d] for d in SETTING_DIMS})
        raise InputError(
            f"{grid.outer_size:,} settings ({text}) are too many for one plan (at most "
            f"{MAX_SETTINGS:,}: a line and the best layouts of each); give fewer values",
            names=names,
        )


def ideal_settings(values: Mapping[str, np.ndarray], *, si: bool = False) -> dict[str, np.ndarray]:
    """Setting values on the ideal network: each of :data:`IDEAL_NETWORK`'s axes set to its ideal value (an
    array of ``values[name]``'s shape and dtype), every other axis as given, in the same order. ``values`` are in
    the axes' stored units, or in the kernel's SI units (the engine's setting columns) where ``si``. The ideal
    network is priced flat: the caller's collectives mode is ``COLLECTIVES_MODES[0]``."""
    return {
        **values,
        **{
            name: np.full_like(values[name], v * AXES[name].to_si if si else v)
            for name, v in IDEAL_NETWORK.items()
        },
    }


def ideal_network(grid: LayoutGrid) -> LayoutGrid:
    """The same grid (the same cells, in the same order) on an ideal network: unbounded NIC bandwidth at full
    utilization and no latency, whatever prices the real one's collectives (``--collective nccl`` has latencies
    of its own that no NIC removes: the ideal network is flat)."""
    return dataclasses.replace(grid, values=ideal_settings(grid.values), collectives=COLLECTIVES_MODES[0])


def search_space(models: tuple[LLM, ...]) -> dict[str, str]:
    """The layouts ``sweep plan`` searches when an option is not given (value syntax per dim)."""
    layers = min(m.layers for m in models)
    experts = max(m.experts for m in models)
    # Powers of two up to the depth and the expert count (a cap at 64 left EP 128 and 256 unsearched for the
    # 128- and 256-expert models).
    pp = ",".join(str(2**i) for i in range(layers.bit_length()))
    ep = ",".join(str(2**i) for i in range(experts.bit_length())) if experts else "1"
    space = {
        "tp": "1,2,4,8",
        "pp": pp,
        "cp": "1,2,4",
        "ep": ep,
        "expert_tp": "1,2,4,8",
        "micro_batch": "1,2,4,8",
        "zero": "0,1,3",
        **PLAN_HELD,
    }
    assert tuple(space) == PLAN_SEARCHED  # the vocabulary's list, which --help reads
    if not experts:
        del space["expert_tp"]  # no experts to split: the default 1, unsaid
    return space


SEARCHED_TEXT = {"schedule": "1f1b,interleaved:2", "recompute": "none,selective,full"}


class Checkpoint(Protocol):
    """Where a plan's searches go on from, and what keeps them (:class:`sweep.io.plan_checkpoint.PlanCheckpoint`)."""

    def start(self, index: int) -> tuple[int, dict[str, np.ndarray]] | None: ...

    def after_block(self, index: int) -> Callable[[int, dict[str, np.ndarray]], None]: ...


Search = Callable[[int, LayoutGrid], dict]
"""``search(index, grid)``: the best layouts of search ``index`` of a plan (:func:`searches`), on ``grid``."""


def searches(grid: LayoutGrid) -> list[tuple[int, LayoutGrid]]:
    """Every search a plan makes, (index, grid) in order: 0 the plan, 1 on an ideal network, 2 + k with overlap
    switch k flipped (not the expert all-to-all's for dense models: it cannot matter there)."""
    out = [(0, grid), (1, ideal_network(grid))]
    experts = any(m.experts for m in grid.models)
    for k, switch in enumerate(OVERLAP_SWITCHES):
        if switch != "moe_a2a" or experts:
            settings = grid.settings.replace(overlap=flipped(grid.settings.overlap, switch))
            out.append((2 + k, dataclasses.replace(grid, settings=settings)))
    return out


def searcher(keep: int, progress=None, checkpoint: Checkpoint | None = None) -> Search:
    """A plan's searches on this machine, going on from ``checkpoint`` where it holds one."""

    def search(index: int, grid: LayoutGrid) -> dict:
        if checkpoint is None:
            return best_layouts(grid, keep=keep, progress=progress)
        return best_layouts(
            grid,
            keep=keep,
            progress=progress,
            start=checkpoint.start(index),
            after_block=checkpoint.after_block(index),
        )

    return search


def plan(
    grid: LayoutGrid,
    keep: int = 3,
    progress=None,
    checkpoint: Checkpoint | None = None,
    search: Search | None = None,
) -> xr.Dataset:
    """The ``keep`` fastest feasible layouts of every kept cell, as a Dataset over the kept dims and ``rank``,
    with ``ideal_iteration_time`` and ``network_cost`` per kept cell (the module docstring). ``checkpoint``:
    where the searches go on from and are kept every few blocks (``sweep plan --resume``; the job runner saves
    it as the plan stops: :func:`sweep.io.accumulated.run_accumulated`). ``search``: how each search is made
    (default :func:`searcher`'s; ``sweep plan --distributed`` hands the searches the processes made)."""
    check_size(grid)
    return _plan(grid, keep, search or searcher(keep, progress, checkpoint))


def _plan(grid: LayoutGrid, keep: int, search: Search) -> xr.Dataset:
    grids = dict(searches(grid))
    best = search(0, grids[0])
    infeasible = refuse_infeasible(grid, best)
    # The same keep as the plan's, so the ideal pass reuses its compiled block.
    ideal = search(1, grids[1])
    keep = best["score"].shape[1]
    kept = list(SETTING_DIMS)
    kept_shape = tuple(grid.sizes[d] for d in kept)
    coords = grid.coords()
    dims = (*kept, "rank")
    data: dict[str, xr.Variable] = {}
    layouts = {
        f"layout_{d}": v.reshape(*kept_shape, keep) for d, v in _layout_values(grid, best["layout"]).items()
    }
    # dp where the layout derives it (0: gpus / (tp pp cp)), as the table prints it: a cube's reader sees dp64.
    gpus = np.asarray(coords["gpus"], np.float64).reshape([-1 if d == "gpus" else 1 for d in kept] + [1])
    layouts["layout_dp"] = _dp(layouts, {"gpus": gpus})
    for name, values in layouts.items():
        data[name] = xr.Variable(dims, values, LAYOUTS.coordinate_attrs(name.removeprefix("layout_")))
    # Each output's attributes as a grid cube's (the status's rules: select names them). A rank with no layout
    # (fewer than --keep can exist and fit) has the status NO_LAYOUT, said in its rules: it held whatever the
    # search's empty slot held, a rule's code a plot drew as that rule (a hunt).
    for name in VARIABLES:
        values, described = best[name], grid.variable_attrs(name)
        if name == "status":
            values = np.where(best["layout"] < 0, NO_LAYOUT, values).astype(values.dtype)
            described["rules"] += (
                f"; {NO_LAYOUT}: no layout at this rank (fewer than --keep can exist and fit)"
            )
        data[name] = xr.Variable(dims, values.reshape(*kept_shape, keep), described)
    ideal_time = ideal["iteration_time"][:, 0].reshape(kept_shape)
    step = best["iteration_time"][:, 0].reshape(kept_shape)
    data["ideal_iteration_time"] = xr.Variable(
        kept,
        ideal_time,
        {
            "units": "s",
            "long_name": "the best layout's step on an ideal network (unbounded NICs, no latency)",
        },
    )
    data["network_cost"] = xr.Variable(
        kept,
        1.0 - ideal_time / step,
        {"units": "1", "long_name": "share of the best layout's step that an ideal network would save"},
    )
    data["ideal_layout"] = xr.Variable(
        kept,
        _ideal_layouts(grid, ideal["layout"][:, :1]).reshape(kept_shape),
        {"long_name": "the best layout on an ideal network ('' where none can exist and fit)"},
    )
    data["infeasible"] = xr.Variable(
        kept,
        np.array(infeasible, dtype=str).reshape(kept_shape),
        {"long_name": "why no layout of this setting can exist and fit ('' where one can)"},
    )
    data["switch_change"] = xr.Variable(
        (*kept, "switch"),
        switch_changes(grids, best, search).reshape(*kept_shape, len(OVERLAP_SWITCHES)),
        {
            "units": "1",
            "long_name": "the best step with this overlap switch flipped (layouts searched again), over the "
            "best step, less one",
            "overlap": grid.settings.overlap,
        },
    )
    out_coords = {d: xr.Variable(d, coords[d], LAYOUTS.coordinate_attrs(d)) for d in kept}
    out_coords["switch"] = xr.Variable("switch", np.array(OVERLAP_SWITCHES), {"long_name": "overlap switch"})
    out_coords["rank"] = xr.Variable(
        "rank", np.arange(1, keep + 1), {"units": "1", "long_name": "place by tokens/s"}
    )
    attrs = {
        **grid.cube_attrs(),  # the family, what was assumed, the per-sweep settings, the models
        "planned": f"the {keep} fastest layouts that can exist and fit in memory",
        "searched": ", ".join(f"{d} ({grid.sizes[d]})" for d in PARALLEL_DIMS if grid.sizes[d] > 1),
        "dtype": grid.dtype,
    }
    return xr.Dataset(data, coords=out_coords, attrs=attrs)


def refuse_infeasible(grid: LayoutGrid, best: dict) -> list[str]:
    """Per setting (outer cell, in cube order), why it has no layout that can exist and fit ('' where it has
    one): the rule its layouts broke most often, or the memory the least hungry one lacked. One
    :class:`Infeasible` saying so when no setting has one: then there is nothing to plan."""
    empty = np.flatnonzero(best["layout"][:, 0] < 0)
    reasons = [""] * best["layout"].shape[0]
    for k, flat in enumerate(
        empty
    ):  # off the search's hot path: every layout of such a setting evaluated again
        reasons[int(flat)] = (
            _why_infeasible(grid, int(flat))
            if k < MAX_REASONS
            else f"no layout can exist and fit (why is said for the first {MAX_REASONS} such settings)"
        )
    if empty.size == len(reasons):
        where = setting_text(grid, int(empty[0]), "{d} {v}", ", ")
        others = f"; {empty.size} of {empty.size} settings have none" if empty.size > 1 else ""
        raise Infeasible(f"no feasible layout{f' ({where})' if where else ''}: {reasons[0]}{others}")
    return reasons


def setting_text(grid: LayoutGrid, flat: int, form: str = "{option} {v}", sep: str = " ") -> str:
    """The setting (outer cell) ``flat`` of ``grid`` by its dims that vary, each as ``form`` (``{d}``: the dim,
    ``{option}``: its option, ``{v}``: the value), joined by ``sep``; '' when no dim varies."""
    idx = np.unravel_index(flat, [grid.sizes[d] for d in SETTING_DIMS])
    coords = grid.coords()
    parts = []
    for d, i in zip(SETTING_DIMS, idx):
        if grid.sizes[d] > 1:
            value = coords[d][i].item()
            option = AXES[d].option if d in AXES else f"--{d.replace('_', '-')}"
            shown = value if isinstance(value, str) else f"{value:g}"
            parts.append(form.format(d=d, option=option, v=shown))
    return sep.join(parts)


# kernels.layout_inputs.STATUS's rule of sequence parallelism's tokens over tp
SEQUENCE_PARALLEL_RULE = next(i for i, rule in enumerate(STATUS) if rule.startswith("sequence parallelism"))


def _why_infeasible(grid: LayoutGrid, flat: int) -> str:
    """Why setting ``flat`` has no layout that can exist and fit, from every layout of that one setting."""
    idx = np.unravel_index(flat, [grid.sizes[d] for d in SETTING_DIMS])
    cell = _one_cell(grid, {d: int(i) for d, i in zip(SETTING_DIMS, idx)})
    arrays = evaluate_layouts_arrays(cell)
    status, free = arrays["status"].ravel(), arrays["memory_free_gb"].ravel()
    counts = np.bincount(status, minlength=len(STATUS))
    total = int(counts.sum())
    if counts[0] == 0:
        # the search's own tp x pp x cp that do not divide the GPUs are no reason of the user's: another rule is
        # said where layouts break one (a hunt: a micro-batch above the global batch was said as that rule)
        code = int(np.argmax(counts[2:])) + 2 if counts[2:].any() else 1
        # sequence parallelism's rule, which the search's default (on) can break alone: its way out said where it
        # is one (a review): a dense model whose grid has no layout without it (a mixture of experts at tp > 1
        # needs it, rule 11)
        sp = SEQUENCE_PARALLEL_RULE
        off = 0 in grid.values["sequence_parallel"] or any(m.experts > 0 for m in grid.models)
        named = "" if code == sp else f"{int(counts[sp]):,} break {STATUS[sp]}: "
        lifted = "" if off or not counts[sp] else f" ({named}--sequence-parallel 0 lifts it)"
        among = (
            f" by the {total - int(counts[1]):,} whose tp x pp x cp divide the GPUs"
            if code > 1 and counts[1]
            else ""
        )
        return (
            f"none of its {total:,} layouts can exist; the rule broken most often{among}: {STATUS[code]} "
            f"({int(counts[code]):,} of them){lifted}"
        )
    return (
        f"{int(counts[0]):,} of its {total:,} layouts can exist, but none fits: the least hungry lacks "
        f"{-free[status == 0].max():.1f} GB of usable memory ({might_fit(grid)} or a GPU with more memory might)"
    )


def might_fit(grid: LayoutGrid) -> str:
    """What might make a layout of ``grid`` fit that the grid does not hold: more GPUs; ZeRO 3 and full
    recomputation where it has none of them (a stack's recompute, or one given: a hunt, a torchtitan run that
    fits with full recomputation was told to offload); activation offload where a layout could run it, one stage
    without recomputation (status rule 13; a review: named beside --pp 2 --recompute full). ZeRO 3 is named only
    where it would shard the parameters: not where every layout pipelines and ZeRO 3 there gathers once a step
    (``zero3_gather_once``: it holds ZeRO 1's memory)."""
    holds_one = grid.settings.zero3_gather_once > 0 and bool((grid.values["pp"] > 1).all())
    zero3 = [] if 3 in grid.values["zero"] or holds_one else ["ZeRO 3"]
    full = [] if "full" in grid.names["recompute"] else ["--recompute full"]
    offload = 1 in grid.values["pp"] and "none" in grid.names["recompute"]
    return ", ".join(["more GPUs", *zero3, *full, *(["--cpu-offloading-num-layers"] if offload else [])])


def _layout_values(grid: LayoutGrid, layout: np.ndarray) -> dict[str, np.ndarray]:
    """Each parallel dim's coordinate of the layouts ``layout`` ([O, K] flat inner indices, -1 where none was
    found: NaN or '' there), shaped as ``layout``."""
    coords = grid.coords()
    found = layout >= 0
    index = np.unravel_index(np.where(found, layout, 0), [grid.sizes[d] for d in PARALLEL_DIMS])
    out = {}
    for d, idx in zip(PARALLEL_DIMS, index):
        values = coords[d][idx]
        out[d] = np.where(found, values, np.nan if values.dtype.kind == "f" else "")
    return out


def _ideal_layouts(grid: LayoutGrid, layout: np.ndarray) -> np.ndarray:
    """[O]: the text (:func:`_layout_text`) of each setting's best layout ``layout`` ([O, 1]) on an ideal
    network, '' where there is none."""
    values = {f"layout_{d}": v[:, 0] for d, v in _layout_values(grid, layout).items()}
    gpus = grid.coords()["gpus"]
    shape = [grid.sizes[d] for d in SETTING_DIMS]
    out = []
    for o in range(layout.shape[0]):
        if layout[o, 0] < 0:
            out.append("")
            continue
        row = {k: v[o].item() for k, v in values.items()}
        cell = {"gpus": gpus[np.unravel_index(o, shape)[SETTING_DIMS.index("gpus")]].item()}
        row["dp"] = float(_dp(row, cell))
        out.append(_layout_text(row))
    return np.array(out, dtype=str)


def layout_name(grid: LayoutGrid, flat: int, layout: int) -> str:
    """The text of layout ``layout`` (a flat inner index) of ``grid`` on setting ``flat``, as the plan's table
    names it (``tp8xpp4xdp32 mb1 z1``)."""
    row = {f"layout_{d}": v[0, 0].item() for d, v in _layout_values(grid, np.array([[layout]])).items()}
    gpus = grid.coords()["gpus"][
        np.unravel_index(flat, [grid.sizes[d] for d in SETTING_DIMS])[SETTING_DIMS.index("gpus")]
    ]
    row["dp"] = float(_dp(row, {"gpus": gpus.item()}))
    return _layout_text(row)


def flipped(mode: str, switch: str) -> str:
    """The overlap mode with ``switch`` turned on if it was off, off if it was on (canonical spelling)."""
    on = set() if mode == "none" else set(mode.split("+"))
    on ^= {switch}
    return "+".join(s for s in OVERLAP_SWITCHES if s in on) or "none"


def switch_changes(grids: dict[int, LayoutGrid], best: dict, search: Search) -> np.ndarray:
    """[O, switches]: each outer cell's best step with each overlap switch flipped, the layouts searched again
    (as for the ideal network), over the best step, less one; NaN where a setting has no feasible layout or
    the switch cannot matter (the expert all-to-all of dense models: no search, :func:`searches`). The same
    block shape as the plan's search, so no compile."""
    step = best["iteration_time"][:, 0]
    out = np.full((step.size, len(OVERLAP_SWITCHES)), np.nan)
    for k in range(len(OVERLAP_SWITCHES)):
        if 2 + k in grids:
            out[:, k] = search(2 + k, grids[2 + k])["iteration_time"][:, 0] / step - 1.0
    return out


def _one_cell(grid: LayoutGrid, index: dict[str, int]) -> LayoutGrid:
    """The grid of one outer cell (``index``: its position on each outer dim), every layout kept."""
    names = {d: (v[index[d]],) if d in index else v for d, v in grid.names.items()}
    values = {d: v[index[d] : index[d] + 1] if d in index else v for d, v in grid.values.items()}
    return dataclasses.replace(grid, models=(grid.models[index["model"]],), names=names, values=values)


def _layout_text(row: dict) -> str:
    parts = [f"tp{_i(row['layout_tp'])}", f"pp{_i(row['layout_pp'])}"]
    if row["layout_cp"] > 1:
        parts.append(f"cp{_i(row['layout_cp'])}")
    if row["layout_ep"] > 1:
        parts.append(f"ep{_i(row['layout_ep'])}")
    if row["layout_expert_tp"] > 1:
        parts.append(f"etp{_i(row['layout_expert_tp'])}")
    parts.append(f"dp{_i(row['dp'])}")
    text = "x".join(parts) + f" mb{_i(row['layout_micro_batch'])}"
    schedule = str(row["layout_schedule"])
    if schedule != "1f1b":
        text += f" {schedule.replace('interleaved:', 'vpp')}"
    text += f" z{_i(row['layout_zero'])}"
    recompute = str(row["layout_recompute"])
    if recompute != "none":
        text += f" rc-{recompute[:3]}"
    if row["layout_sequence_parallel"] == 0 and row["layout_tp"] > 1:
        text += " no-sp"
    return text


def _i(value: float) -> str:
    """A layout's count as its text shows it: whole, or as it is where it is not (a dp of GPUs that tp x pp x cp
    does not divide: 64 GPUs at TP 3 read "dp21", a hunt)."""
    return str(int(value)) if float(value).is_integer() else f"{float(value):.4g}"


def _setting(ds: xr.Dataset, cell: dict) -> str:
    """The kept coordinates that vary in this plan, as ``--bw 100 --nics-per-node 8``."""
    parts = []
    for d, value in cell.items():
        if ds.sizes[d] > 1:
            option = AXES[d].option if d in AXES else f"--{d.replace('_', '-')}"
            parts.append(f"{option} {value if isinstance(value, str) else f'{value:g}'}")
    return " ".join(parts) or "(one setting)"


def _cells(ds: xr.Dataset):
    """(setting text, its coordinates, its values, its ranked layouts) for every kept cell, in cube order.

    A cell's values map each per-setting variable to its value there (``switch_change`` to one per ``switch``,
    and ``switch`` to the switches); its ranked layouts are dicts of the layout and output values (``dp``
    resolved), found ones only. All are read from arrays taken out of the dataset once: indexing the Dataset
    per cell and value cost seconds on a 40-setting plan."""
    kept = list(SETTING_DIMS)
    shape = [ds.sizes[d] for d in kept]
    coords = {d: ds[d].values for d in kept}
    ranked: dict[str, np.ndarray] = {}
    per_setting: dict[str, np.ndarray] = {}
    for k, variable in ds.variables.items():  # Variables: no coordinates to carry along
        if k not in ds.coords:
            (ranked if "rank" in variable.dims else per_setting)[str(k)] = variable.transpose(
                *kept, ...
            ).values
    switches = ds["switch"].values
    for flat in range(math.prod(shape)):
        at = tuple(int(i) for i in np.unravel_index(flat, shape))
        cell = {d: coords[d][i].item() for d, i in zip(kept, at)}
        values = {k: a[at] for k, a in per_setting.items()} | {"switch": switches}
        yield _setting(ds, cell), cell, values, list(_ranked(ranked, at, cell))


def _ranked(ranked: dict[str, np.ndarray], at: tuple[int, ...], cell: dict):
    """(rank, layout dict) of one cell's found layouts: ``ranked`` maps each ranked variable to its array over
    (kept settings..., rank), ``at`` is the cell's index into the settings."""
    for r in range(next(iter(ranked.values())).shape[-1]):
        row = {k: a[at + (r,)].item() for k, a in ranked.items()}
        if not np.isfinite(row["tokens_per_s"]):
            return
        row["dp"] = float(_dp(row, cell))
        yield r + 1, row


def _seconds(value: float) -> str:
    """A step in seconds to three significant digits, its trailing zeros kept (3.50 s, where ``g`` wrote 3.5
    beside 3.48) and without an exponent (1234 s, where ``g`` wrote 1.23e+03)."""
    if not np.isfinite(value) or value <= 0:
        return f"{value:g}"
    return f"{value:.{max(0, 2 - int(np.floor(np.log10(value))))}f}"


def plan_table(ds: xr.Dataset) -> str:
    """The plan as text: per kept setting, each ranked layout with its speed, step, memory and what it waits on,
    and what the network costs the best layout against an ideal one."""
    lines = []
    cells = list(_cells(ds))
    # Columns as wide as their longest entry (a long layout or a rank of 10 and more keeps the columns aligned).
    wide = max([34] + [len(_layout_text(row)) for *_, rows in cells for _, row in rows])
    digits = len(str(ds.sizes["rank"]))
    header = (
        f"  {'#':>{digits}} {'layout':<{wide}} {'tokens/s':>10} {'step s':>7} {'MFU':>5} {'TF/GPU':>6} "
        f"{'mem GB':>6} {'free':>5} {'on NICs':>7}  waits on"
    )
    for setting, _, sub, rows in cells:
        lines.append(setting + ":")
        why = str(sub["infeasible"].item()) if "infeasible" in sub else ""
        if why:
            lines += [f"  no feasible layout: {why}", ""]
            continue
        lines.append(header)
        found, best_row = 0, None
        for rank, row in rows:
            found, best_row = rank, best_row or row
            waits = waits_on(row, row["iteration_time"])
            lines.append(
                f"  {rank:>{digits}} {_layout_text(row):<{wide}} {rounded(row['tokens_per_s']):>10} "
                f"{_seconds(row['iteration_time']):>7} {rounded(row['mfu'], 2):>5} "
                f"{rounded(row['tflops_per_gpu']):>6} {rounded(row['memory_gb'], 1):>6} "
                f"{rounded(row['memory_free_gb'], 1):>5} {rounded(row['network_fraction'], percent=True):>7}  "
                f"{waits}"
            )
        if found < ds.sizes["rank"]:
            lines.append(f"  {found + 1} (no other layout can exist and fit in memory)")
        if best_row is not None and best_row["layout_ep"] > 1:
            row = best_row
            paced = "paced by the NICs" if row["ep_on_nics"] > 0 else "on NVLink"
            share = rounded(row["ep_exposed"] / row["iteration_time"], percent=True)
            lines.append(f"  the expert all-to-all takes {share} of the best step, {paced}")
        if best_row is not None:
            lines.append("  " + _switch_text(sub, ds["switch_change"].attrs.get("overlap", "")))
        cost = sub["network_cost"].item()
        if np.isfinite(cost) and best_row is not None:
            flag = " <- network-bound" if cost >= BOTTLENECK_SHARE else ""
            lines.append(
                f"  the network costs {rounded(cost, percent=True)} of the best step (on an ideal network: "
                f"{_seconds(sub['ideal_iteration_time'].item())} s){flag}"
            )
            ideal = str(sub["ideal_layout"].item()) if "ideal_layout" in sub else ""
            # The network's cost beyond the step's time on the NICs: the layout a slow network forces, or, the
            # layout the same, traffic inside NVLink domains the ideal network carries otherwise (a hunt: one
            # host under --collective nccl was "network-bound" at 58%, 0% on the NICs, with no line saying why).
            if ideal and cost - best_row["network_fraction"] >= EXPLAINED_SHARE:
                nccl = str(ds.attrs.get("collectives", "")).startswith("nccl")
                if ideal != _layout_text(best_row):
                    lines.append("  " + _forced_text(best_row, ideal, nccl))
                elif nccl:
                    lines.append("  " + _priced_text(best_row))

        lines.append("")
    cost = ds["network_cost"].values
    bound = int((cost >= BOTTLENECK_SHARE).sum())
    planned = int(np.isfinite(cost).sum())
    none = (
        f" ({counted(cost.size - planned, 'setting')} with no feasible layout)" if planned < cost.size else ""
    )
    lines.append(
        f"network-bound (an ideal network would save >= {BOTTLENECK_SHARE:.0%} of the best layout's step): "
        f"{bound} of {counted(planned, 'setting')}{none}"
    )
    return "\n".join(lines)


# The least share of the best step a network cost beyond what the step waits on the NICs must reach for a line to
# say why (smaller gaps are said by the cost alone).
EXPLAINED_SHARE = 0.05
# The layout family's breakdown terms that are communication (the rest: compute, recompute, bubble, ...).
COMMUNICATION = tuple(term for term in BREAKDOWN if term.endswith("_exposed"))


def _forced_text(row: dict, ideal: str, nccl: bool) -> str:
    """One line: why the network costs more than the step's time on the NICs. The ideal network's best layout
    is another one; the network forced this one (recomputation, a smaller TP, ...), and, where NCCL prices the
    collectives (``nccl``), the step waits on traffic inside NVLink domains too (the exposed communication beyond
    the NICs' share), which the ideal network carries flat, at NVLink's rate without latency (an NVL72's
    all-to-all on NVLink was put down to "the slow network" beside 1% on the NICs). Under flat pricing that
    traffic costs the ideal network the same, and is not said (a hunt: TP 4 inside a node, 6% of the step on
    both networks, was named as the network's)."""
    recompute = str(row["layout_recompute"])
    forced = f" ({recompute} recompute: {row['recompute_time'] / row['iteration_time']:.0%} of the step)"
    # said only where the ideal network's best recomputes otherwise (a hunt: --recompute full given, the ideal's
    # best recomputing fully too, was put down to the network)
    # (the name keeps 3 letters: moe and moe_act read alike, so a list of modules is compared as unknown, said)
    ideal_recompute = next((w[3:] for w in ideal.split() if w.startswith("rc-")), "none")
    same = recompute in RECOMPUTES and recompute[:3] == ideal_recompute
    nics = row["network_fraction"]
    inside = sum(row[k] for k in COMMUNICATION) / row["iteration_time"] - nics if nccl else 0.0
    where = (
        f"the NICs and {inside:.0%} on traffic inside NVLink domains; the network forces"
        if inside >= 0.01
        else "the NICs; the slow network forces"
    )
    return (
        f"why: {nics:.0%} of the step waits on {where} this layout"
        f"{forced if recompute != 'none' and not same else ''}; on an "
        f"ideal network the best is {ideal}"
    )


def _priced_text(row: dict) -> str:
    """One line: why the network costs more than the step's time on the NICs where the ideal network's best
    layout is this one and collectives are priced as NCCL runs them: the ideal network prices every collective
    flat, so NCCL's latencies and NVLink efficiency, inside NVLink domains too, count as the network's cost.
    Said of NCCL's pricing only: under flat pricing NVLink costs the same on both, and such a gap is the
    bubble's behind sends across hosts, which ``network_fraction`` leaves out (a review)."""
    return (
        f"why: {row['network_fraction']:.0%} of the step waits on the NICs; the rest is NCCL's latencies and "
        "NVLink efficiency, which the ideal network prices flat, and any bubble behind sends across hosts"
    )


def infeasible_lines(ds: xr.Dataset) -> list[str]:
    """One line per setting of a plan that has no feasible layout, saying why (none when every one has)."""
    if "infeasible" not in ds:
        return []
    return [
        f"no feasible layout ({setting}): {why}"
        for setting, _, sub, _ in _cells(ds)
        if (why := str(sub["infeasible"].item()))
    ]


def _switch_text(sub: dict[str, np.ndarray], mode: str) -> str:
    """One line: what flipping each overlap switch would do to the best layout's step."""
    on = set() if mode in ("", "none") else set(mode.split("+"))
    parts = []
    for switch, change in zip(sub["switch"], sub["switch_change"]):
        if np.isfinite(change) and abs(change) >= 0.005:
            verb = "off" if switch in on else "on"
            parts.append(f"{switch} {verb} {'saves' if change < 0 else 'costs'} {abs(change):.0%}")
    said = "; ".join(parts) if parts else "no other switch changes it by 0.5% or more"
    return f"overlap {mode or 'none'}: {said}"


def plan_rows(ds: xr.Dataset) -> list[dict]:
    """One dict per kept setting and ranked layout: the setting's coordinates, the fabric it was planned on
    (:func:`fabric_columns`), the layout, its outputs, what it waits on, the setting's ``network_cost`` and
    ``ideal_iteration_time``, and ``flip_<switch>``: its best step with that overlap switch flipped, over the
    best step, less one (NaN as None)."""
    out = []
    fabric = fabric_columns(ds)
    for _, cell, sub, rows in _cells(ds):
        for rank, row in rows:
            record = {**_resolved(cell), **fabric, "rank": rank, "layout": _layout_text(row)}
            # dp is layout_dp's (a float beside it that a script took for the grid's dp, where 0 is derived: a hunt)
            record.update(
                {k: _whole(v) if k.startswith("layout_") else v for k, v in row.items() if k != "dp"}
            )
            record["waits_on"] = waits_on(row, row["iteration_time"])
            record["network_cost"] = sub["network_cost"].item()
            record["ideal_iteration_time"] = sub["ideal_iteration_time"].item()
            if "ideal_layout" in sub:  # (a cube written before it was kept has none)
                record["ideal_layout"] = str(sub["ideal_layout"].item())
            for switch, change in zip(sub["switch"], sub["switch_change"]):
                record[f"flip_{switch}"] = float(
                    change
                )  # the best step with it flipped, over the best, less one
            out.append(json_ready(record))
    return out


def fabric_columns(ds: xr.Dataset) -> dict[str, Any]:
    """The fabric a plan was priced on, as its cube's attributes keep it (:meth:`LayoutGrid.per_sweep`; none
    without ``--fabric``: the grid's defaults, no tier above the hosts): ``fabric`` (a preset's name or a file's
    label, '' for none), ``leaf_hosts``, ``oversubscription``, ``sharp``, ``rail_only``. A hunt: rows planned on
    three fabrics were told apart by their step times alone."""
    unset = {  # the grid's defaults (its fields')
        "fabric": LayoutGrid.fabric_name,
        "leaf_hosts": LayoutGrid.leaf_hosts,
        "oversubscription": LayoutGrid.oversubscription[0],
        "sharp": LayoutGrid.sharp,
        "rail_only": LayoutGrid.rail_only,
    }
    return {key: _whole(ds.attrs.get(key, value)) for key, value in unset.items()}


def _resolved(cell: dict) -> dict:
    """A setting's coordinates as a script reads them: a system dim's 0 as the GPU's system's value, a gradient
    dtype's 0 as the precision's (the table prints what they stand for; a CSV or JSON row printed 0.0), whole
    numbers as integers."""
    # a host of the GPUs given has its own domain and NICs (compute.host_system), as the kernel priced it
    system = system_settings(cell["gpu"], cell.get("gpus_per_node") or 0) if cell.get("gpu") in GPUS else {}
    out = {}
    for k, v in cell.items():
        if v == 0 and k in system:
            v = system[k]
        elif v == 0 and k == "grad_bytes" and cell.get("precision") in PRECISIONS:
            v = PRECISIONS[cell["precision"]].main_grad_bytes
        out[k] = _whole(v)
    return out


def _whole(v: Any) -> Any:
    """``v`` as an int where it is a whole float (a count: 256, not 256.0)."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def plan_csv(ds: xr.Dataset) -> str:
    """:func:`plan_rows` as CSV (empty cells for NaN)."""
    import csv
    import io

    rows = plan_rows(ds)
    text = io.StringIO()
    if rows:
        writer = csv.DictWriter(text, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    return text.getvalue()


def plan_json(ds: xr.Dataset) -> str:
    """:func:`plan_rows` as JSON (null for NaN)."""
    return json.dumps(plan_rows(ds), indent=1, allow_nan=False)


def _dp(row: dict, cell: dict) -> Any:
    """A layout's dp (``row``'s ``layout_*``): its own where the grid gives one, else gpus / (tp pp cp) (``cell``'s
    GPUs); elementwise over arrays, NaN where no layout was found."""
    derived = cell["gpus"] / (row["layout_tp"] * row["layout_pp"] * row["layout_cp"])
    return np.where(row["layout_dp"] > 0, row["layout_dp"], derived)
