"""A calibration's result: the dict :func:`~sweep.analysis.calibrate.calibrate` returns (fitted
values with standard errors and warnings, errors on the training and held-out rows, every row's
prediction, a blank row's 95% interval), and its text for the terminal."""

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from netsweep_jax.kernels.fit import FitSpec, Rows
from netsweep_jax.sweep.analysis.calibration_fit import Array, Params
from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.engine.dispatch import precision
from netsweep_jax.sweep.io.measurements import Measurements


@functools.cache
def t975(dof: int) -> float:
    """Student's t quantile t_{0.975} of ``dof`` degrees of freedom: a 95% interval's half-width in units of an
    estimated spread (1.96 is the normal's, right only for many rows: with 2 degrees of freedom a +/-1.96 interval
    holds 81% of runs, a review). From the t distribution's CDF, F(t) = 1 - I_x(dof/2, 1/2) / 2 with
    x = dof / (dof + t^2) (the regularized incomplete beta, jax.scipy.special.betainc): I_x = 0.05 solved for x
    by bisection (I_x grows with x), then t = sqrt(dof (1 - x) / x). 12.71 at 1, 4.303 at 2, 2.228 at 10."""
    from jax.scipy.special import betainc

    low, high = 0.0, 1.0
    with precision("float64"):  # float32's betainc is off by 5e-5 at 1000 degrees of freedom
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if float(betainc(dof / 2, 0.5, mid)) < 0.05 else (low, mid)
    x = (low + high) / 2
    return float(np.sqrt(dof * (1 - x) / x))


def _interval(measured: str, value: float, spread: float, dof: int) -> list[float] | None:
    """A blank row's 95% interval, a new run's: +/- :func:`t975` ``spread``
    (:func:`~sweep.analysis.calibration_fit.standard_errors`: the fit's uncertainty and the rows' scatter about
    the model, estimated with ``dof`` degrees of freedom), None where it is undefined."""
    if not np.isfinite(spread):
        return None
    half = t975(dof) * spread
    lo, hi = value - half, value + half
    if measured == "scaling_factor":
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return [max(lo, 0.0), hi]


def calibration_result(
    meas: Measurements,
    models: Sequence[str],
    params: Params,
    spec: FitSpec,
    fit_axes: Sequence[str],
    best: Array,
    errors: Array,
    predicted: Array,
    res: Array,
    target: Array,
    keep: Array,
    rows: Rows,
    blank: Array,
    spread: Array,
) -> dict[str, Any]:
    """The result dict of a fit at ``best`` (unconstrained [P'], padded past the P parameters): fitted values in
    stored units with their ``errors`` and bounds, warnings, training and held-out errors, and every row's
    measured and ``predicted`` value, residual ``res`` and set (``keep``: trained on; ``blank``: predicted, with an
    interval from ``spread``)."""
    fitted, warnings = _fitted(params, spec, fit_axes, best, errors, int(keep.sum()), bool(blank.any()))
    dof = int(keep.sum()) - len(
        params
    )  # the residual's degrees of freedom (none left: no spread, no interval)
    labels = [
        c
        for c in meas.columns
        if c not in NUMERIC_AXES and c not in ("model", "collective", "t1", meas.measured)
    ]
    u_index = fit_axes.index("utilization") if "utilization" in fit_axes else None
    utilization = (
        np.asarray(spec.value(u_index, best[rows.index[:, u_index]]))
        if u_index is not None
        else np.asarray(rows.config.utilization)
    )
    col = meas.columns
    out = {
        "measurements": meas.path,
        "measured": meas.measured,
        "fitted": fitted,
        "warnings": warnings,
        "rmse": float(np.sqrt(np.mean(res[keep] ** 2))),
        "train_rows": int(keep.sum()),
        "rows": [
            {
                "line": meas.lines[i],
                "model": models[i],
                **{c: col[c][i] for c in labels},
                **_row_values(meas, i),
                "measured": None if blank[i] else float(target[i]),
                "predicted": float(predicted[i]),
                "residual": None if blank[i] else float(res[i]),
                "train": bool(keep[i]),
                "effective_bandwidth_gbps": col["bandwidth"][i] * float(utilization[i]),
                **(
                    {"interval": _interval(meas.measured, float(predicted[i]), float(spread[i]), dof)}
                    if blank[i]
                    else {}
                ),
            }
            for i in range(len(meas))
        ],
    }
    if blank.any():
        out["predicted_rows"] = int(blank.sum())
    if not (keep | blank).all():
        held = res[~keep & ~blank]
        out["heldout_rmse"] = float(np.sqrt(np.mean(held**2)))
        out["heldout_max_abs"] = float(np.max(np.abs(held)))
    for axis, unit_key in (("utilization", "utilization"), ("latency", "latency_us")):  # one shared value
        shared = [p for p in fitted if p["name"] == axis]
        if len(shared) == 1 and shared[0]["group"] is None:
            out[unit_key] = shared[0]["value"]
    return out


def _fitted(
    params: Params,
    spec: FitSpec,
    fit_axes: Sequence[str],
    best: Array,
    errors: Array,
    trained: int,
    blank: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(each fitted parameter's value in stored units, standard error, units and bounds; the warnings: a
    parameter the rows cannot identify, one at a bound (:func:`_at_bound`), or as many parameters as ``trained``
    rows)."""
    dof = trained - len(params)
    fitted, warnings = [], []
    for j, (axis, label) in enumerate(params):
        f = fit_axes.index(axis)
        value = float(spec.value(f, best[j])) / NUMERIC_AXES[axis].to_si
        # Back in the units given, as given: 1e-3 s / 1e-6 is 1000, not 1000.0000000000001.
        lo, hi = (float(f"{end / NUMERIC_AXES[axis].to_si:.12g}") for end in (spec.lows[f], spec.highs[f]))
        fitted.append(
            {
                "name": axis,
                "group": label,
                "value": value,
                "stderr": float(errors[j]),
                "units": NUMERIC_AXES[axis].units,
                "bounds": [lo, hi],
            }
        )
        which = axis + (f" for {label}" if label is not None else "")
        edge = _at_bound(value, lo, hi, axis)
        if edge:  # the rows may pull it past the bound, which the fit cannot reach: said, never a plain value
            own = NUMERIC_AXES[axis]
            limit = lo == own.low if edge == "lower" else hi == own.high  # the model's own range ends there
            beyond = "the model's range (another cause?)" if limit else "it; widen it with --bounds to see"
            warnings.append(
                f"{which} = {value:.4g} is at its {edge} bound ({lo:g} to {hi:g}): the rows may want a value "
                f"beyond {beyond}"
            )
        if dof > 0 and (not np.isfinite(errors[j]) or errors[j] > (hi - lo)):
            warnings.append(
                f"{which} is not identifiable from these rows (its standard error is undefined or "
                f"wider than its bounds)"
            )
    if dof <= 0:
        warnings.append(
            f"{counted(len(params), 'parameter')} from {counted(trained, 'training row')}: no residual is left "
            + ("to estimate its standard error" if len(params) == 1 else "to estimate their standard errors")
            + (" (nor the blank rows' intervals)" if blank else "")
        )
    return fitted, warnings


AT_BOUND = 1e-3  # a fitted value within this share of its range from an end is said to be at that bound


def _at_bound(value: float, lo: float, hi: float, axis: str) -> str:
    """``lower`` or ``upper`` where ``value`` is within :data:`AT_BOUND` of the range ``[lo, hi]`` from that end,
    else ''. A floor of 0 is no bound to report (no overhead, latency, slowdown or jitter is a value the rows
    may well hold)."""
    span = AT_BOUND * (hi - lo)
    if value <= lo + span and not lo == 0 == NUMERIC_AXES[axis].low:
        return "lower"
    return "upper" if value >= hi - span else ""


def _row_values(meas: Measurements, i: int) -> dict[str, Any]:
    """Row ``i``'s layout and link in the result's units (nodes, GPUs, Gbit/s)."""
    col = meas.columns
    return {
        "nodes": int(col["nodes"][i]),
        "gpus_per_node": int(col["gpus_per_node"][i]),
        "gpus": int(col["nodes"][i]) * int(col["gpus_per_node"][i]),
        "bandwidth_gbps": col["bandwidth"][i],
    }


def report_text(result: Mapping[str, Any]) -> str:
    """Human-readable calibration: fitted values with standard errors, errors, rows."""
    lines = []
    for p in result["fitted"]:
        units = "" if p["units"] == "1" else f" {p['units']}"
        name = p["name"] + (f" [{p['group']}]" if p["group"] is not None else "")
        err = f" +/- {p['stderr']:.2g}" if np.isfinite(p["stderr"]) else ""
        lines.append(f"{name}: {p['value']:.4g}{err}{units}")
    unit = "" if result["measured"] == "scaling_factor" else " (relative)"
    lines.append(f"rmse: {result['rmse']:.4g}{unit} over {counted(result['train_rows'], 'row')}")
    if "heldout_rmse" in result:
        held = len(result["rows"]) - result["train_rows"] - result.get("predicted_rows", 0)
        lines.append(
            f"held-out rmse: {result['heldout_rmse']:.4g}{unit} over {counted(held, 'row')} "
            f"(largest |residual| {result['heldout_max_abs']:.3g})"
        )
    lines += [f"warning: {w}" for w in result["warnings"]]
    sets = "heldout_rmse" in result or "predicted_rows" in result
    lines.append(
        f"{'line':>5} {'model':<10} {'nodes':>5} {'gpus':>4} {'Gbit/s':>7} {'effective':>9} "
        f"{'measured':>9} {'predicted':>9} {'residual':>9}" + ("  set" if sets else "")
    )
    for r in result["rows"]:
        blank = r["measured"] is None
        interval = r.get("interval")
        where = (
            "  predicted" + (f", 95% interval {interval[0]:.4g} to {interval[1]:.4g}" if interval else "")
            if blank
            else "  train"
            if r["train"]
            else "  held out"
        )
        lines.append(
            f"{r['line']:>5} {r['model']:<10} {r['nodes']:>5} {r['nodes'] * r['gpus_per_node']:>4} "
            f"{r['bandwidth_gbps']:>7g} {r['effective_bandwidth_gbps']:>9.3g} "
            f"{'-' if blank else format(r['measured'], '.4g'):>9} "
            f"{r['predicted']:>9.4g} {'-' if blank else format(r['residual'], '+.2e'):>9}"
            + (where if sets else "")
        )
    return "\n".join(lines)
