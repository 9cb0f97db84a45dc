"""``sweep plan``: the fastest feasible layouts of a large model on a cluster, per network setting.

The layout dims (dp, tp, pp, cp, ep, micro-batch, schedule, recompute, sequence
parallelism, ZeRO) not given are searched over :func:`search_space`; every other dim
is kept. :func:`sweep.engine.layouts.best_layouts` keeps the ``keep`` fastest layouts
that can exist and fit in memory (tokens per second) of each kept cell on the device,
so no layout is written. The result is a cube over the kept dims and ``rank``, each
layout's coordinates and outputs its variables, and a table that says, for each
layout, what the step waits on and whether the network is the bottleneck.
"""

import math

import numpy as np
import xarray as xr

from netsweep_jax.sweep.core.layout_axes import AXES, INNER, OUTER, VARIABLES, coordinate_attrs, waits_on
from netsweep_jax.sweep.engine.layouts import LayoutGrid, best_layouts
from netsweep_jax.sweep.model.llms import LLM

# What the network must cost for it to be called the bottleneck: the share of the step spent waiting
# on traffic that leaves the NVLink domain.
BOTTLENECK_SHARE = 0.2


def search_space(models: tuple[LLM, ...]) -> dict[str, str]:
    """The layouts ``sweep plan`` searches when an option is not given (value syntax per dim)."""
    layers = min(m.layers for m in models)
    experts = max(m.experts for m in models)
    pp = ",".join(str(2**i) for i in range(7) if 2**i <= layers)
    ep = ",".join(str(2**i) for i in range(7) if 2**i <= max(experts, 1)) if experts else "1"
    return {"tp": "1,2,4,8", "pp": pp, "cp": "1,2,4", "ep": ep, "micro_batch": "1,2,4,8", "zero": "0,1,3",
            "sequence_parallel": "1"}


SEARCHED_TEXT = {"schedule": "1f1b,interleaved:2", "recompute": "none,selective,full"}


def plan(grid: LayoutGrid, keep: int = 3, progress=None) -> xr.Dataset:
    """The ``keep`` fastest feasible layouts of every kept cell, as a Dataset over the kept dims and ``rank``."""
    best = best_layouts(grid, keep=keep, progress=progress)
    keep = best["score"].shape[1]
    kept = list(OUTER)
    kept_shape = tuple(grid.sizes[d] for d in kept)
    coords = grid.coords()
    inner_sizes = [grid.sizes[d] for d in INNER]
    found = best["layout"] >= 0
    index = np.unravel_index(np.where(found, best["layout"], 0), inner_sizes)
    dims = (*kept, "rank")
    data: dict[str, xr.Variable] = {}
    for d, idx in zip(INNER, index):
        values = coords[d][idx]
        if values.dtype.kind == "f":
            values = np.where(found, values, np.nan)
        else:
            values = np.where(found, values, "")
        data[f"layout_{d}"] = xr.Variable(dims, values.reshape(*kept_shape, keep), coordinate_attrs(d))
    for name in VARIABLES:
        units, long_name = VARIABLES[name]
        data[name] = xr.Variable(dims, best[name].reshape(*kept_shape, keep), {"units": units, "long_name": long_name})
    out_coords = {d: xr.Variable(d, coords[d], coordinate_attrs(d)) for d in kept}
    out_coords["rank"] = xr.Variable("rank", np.arange(1, keep + 1), {"units": "1", "long_name": "place by tokens/s"})
    attrs = {"family": "layouts", "planned": f"the {keep} fastest layouts that can exist and fit in memory",
             "searched": ", ".join(f"{d} ({grid.sizes[d]})" for d in INNER if grid.sizes[d] > 1),
             "assumed": "; ".join(grid.assumed), "dtype": grid.dtype,
             "models": "; ".join(f"{n}: {m.describe()} [{m.source}]" for n, m in zip(grid.names["model"],
                                                                                       grid.models))}
    return xr.Dataset(data, coords=out_coords, attrs=attrs)


def _layout_text(row: dict) -> str:
    parts = [f"tp{_i(row['layout_tp'])}", f"pp{_i(row['layout_pp'])}"]
    if row["layout_cp"] > 1:
        parts.append(f"cp{_i(row['layout_cp'])}")
    if row["layout_ep"] > 1:
        parts.append(f"ep{_i(row['layout_ep'])}")
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
    return str(int(value))


def _setting(ds: xr.Dataset, cell: dict) -> str:
    """The kept coordinates that vary in this plan, as ``--bw 100 --nics-per-node 8``."""
    parts = []
    for d, value in cell.items():
        if ds.sizes[d] > 1:
            option = AXES[d].option if d in AXES else f"--{d.replace('_', '-')}"
            parts.append(f"{option} {value if isinstance(value, str) else f'{value:g}'}")
    return " ".join(parts) or "(one setting)"


def plan_table(ds: xr.Dataset) -> str:
    """The plan as text: per kept setting, each ranked layout with its speed, memory and what it waits on."""
    kept = list(OUTER)
    lines = []
    header = (f"  {'#':>1} {'layout':<34} {'tokens/s':>10} {'MFU':>5} {'TF/GPU':>6} {'mem GB':>6} {'free':>5} "
              f"{'network':>7}  waits on")
    shape = [ds.sizes[d] for d in kept]
    for flat in range(math.prod(shape)):
        idx = dict(zip(kept, np.unravel_index(flat, shape)))
        cell = {d: ds[d].values[i].item() for d, i in idx.items()}
        lines.append(_setting(ds, cell) + ":")
        lines.append(header)
        sub = ds.isel(idx)
        for r in range(ds.sizes["rank"]):
            row = {k: sub[k].values[r].item() for k in sub.data_vars}
            if not np.isfinite(row["tokens_per_s"]):
                lines.append(f"  {r + 1} (no other layout can exist and fit in memory)")
                break
            row["dp"] = _dp(row, cell)
            waits = waits_on(row, row["iteration_time"])
            share = row["network_fraction"]
            flag = " <- network-bound" if share >= BOTTLENECK_SHARE else ""
            lines.append(f"  {r + 1} {_layout_text(row):<34} {row['tokens_per_s']:>10,.0f} {row['mfu']:>5.2f} "
                         f"{row['tflops_per_gpu']:>6.0f} {row['memory_gb']:>6.1f} {row['memory_free_gb']:>5.1f} {share:>7.0%}  "
                         f"{waits}{flag}")
        lines.append("")
    verdict = ds["network_fraction"].isel(rank=0)
    bound = int((verdict >= BOTTLENECK_SHARE).sum())
    lines.append(f"network-bound (>= {BOTTLENECK_SHARE:.0%} of the best layout's step waits on traffic that leaves "
                 f"the NVLink domain): {bound} of {verdict.size} settings")
    return "\n".join(lines)


def _dp(row: dict, cell: dict) -> float:
    if row["layout_dp"] > 0:
        return row["layout_dp"]
    return cell["gpus"] / (row["layout_tp"] * row["layout_pp"] * row["layout_cp"])
