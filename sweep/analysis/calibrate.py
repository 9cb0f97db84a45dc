"""Calibration: the model parameters that measured runs imply, and how well they predict others.

Given measured scaling factors (or iteration times) of real data-parallel runs
(:mod:`sweep.io.measurements`), fit any subset of utilization, latency, overhead,
slowdown and jitter (:mod:`kernels.overlap`), each within bounds, shared by all
rows or one per value of a label column (``per``: one overhead per framework, one
utilization per network). The fit starts from the best point of a coarse exact scan
and refines by gradient descent (optax Adam) through the JAX kernel with the max
smoothed (:mod:`kernels.fit`); the reported values and residuals use the exact model.

``train`` (a row filter) fits on some rows and predicts the rest: the held-out
error is the headline number of a calibration. Each fitted value gets a standard
error from the curvature at the optimum (Gauss-Newton: s^2 (J^T J)^-1 with
s^2 = RSS / (rows - parameters), mapped through the bounds' transform). A fit the
rows cannot determine is refused: every parameter needs a training row whose
prediction depends on it, and there must be at least as many such rows as
parameters; a parameter whose standard error is undefined or larger than its bounds
gets a warning.
"""

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.fit import FitSpec, Rows, residual
from netsweep_jax.kernels.overlap import Features
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import (
    BUCKETINGS,
    COLLECTIVES,
    DEFAULTS,
    FITTABLE,
    INNER,
    NUMERIC_AXES,
    default_value,
    show,
)
from netsweep_jax.sweep.core.values import json_ready, parse_names, si_values
from netsweep_jax.sweep.engine.compiled import fit_rows, predict_rows, residual_jacobian
from netsweep_jax.sweep.engine.dispatch import precision
from netsweep_jax.sweep.engine.grid import FOLLOWING, assumed_text, resolve_models, workload_defaults
from netsweep_jax.sweep.engine.inputs import BUCKET_PAD, row_inputs
from netsweep_jax.sweep.io.measurements import Measurements, read_measurements, select
from netsweep_jax.sweep.io.paths import check_new_file, write_atomically
from netsweep_jax.sweep.model.builtin import builtin_names
from netsweep_jax.sweep.model.profile import Profile, load_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS
from netsweep_jax.sweep.model.vector_add import default_table

# The fittable axes and their default bounds are the schema's (AxisSpec.fit); starting values for the scan:
STARTS = {
    "utilization": np.geomspace(1e-3, 0.999, 12),
    "latency": (0.5, 5.0, 50.0),
    "overhead": (0.0, 2.0, 10.0, 50.0),
    "slowdown": (0.0, 0.03, 0.1),
    "jitter": (0.0, 0.02, 0.05, 0.1),
}
STEPS = 400
LEARNING_RATE = 0.05
ROW_QUANTUM = (
    8  # fits pad their rows to a multiple of this (and buckets as sweeps do): one compile serves many
)
SOFTNESS = 1e-4  # of T1: the smoothed max's width while descending
__all__ = ["FITTABLE", "Settings", "calibrate", "calibrate_file", "read_measurements", "report_text"]


@dataclasses.dataclass(frozen=True)
class Settings:
    """Model settings for rows whose file does not give them (each may also be a column).
    ``collective``, ``bucketing`` and ``intra_bandwidth`` None: they follow the workload, as
    ``sweep grid``'s (:func:`sweep.engine.grid.workload_defaults`)."""

    collective: str | None = None
    bucketing: str | None = None
    reduce_table: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None
    intra_bandwidth: float | None = None
    nics_per_node: float = default_value("nics_per_node")
    fusion_buffer: float = default_value("fusion_buffer")
    fusion_timeout: float = default_value("fusion_timeout")


Array = npt.NDArray[Any]
Params = list[tuple[str, Any]]  # (fitted axis, group label or None), one per parameter


def _profile_for(meas: Measurements, i: int, known: dict[Any, Profile], default_model: str) -> Profile:
    """Row ``i``'s profile: its ``model`` (a built-in, a transformer, or a profile file), its compute
    scaled to the row's own ``t1`` if it has one, exactly as for built-ins (a profile file with an
    iteration time of its own is scaled from it; one without, as .csv and .bk.log, takes the row's
    ``t1`` as its T1)."""
    name = meas.column("model", default_model)[i]
    t1 = meas.column("t1", None)[i]
    if name not in known and name in TRANSFORMERS:  # a transformer named plainly: its resolved workload
        matches = [p for key, p in known.items() if isinstance(key, str) and key.startswith(f"{name}@")]
        known[name] = matches[0] if len(matches) == 1 else resolve_models(name)[0]
    if name not in known:
        path = Path(meas.path).parent / name
        if not path.is_file():
            raise InputError(
                f"{meas.where(i)}: model {name!r} is neither among "
                f"{', '.join(k for k in known if isinstance(k, str))} nor a profile file next to "
                f"{Path(meas.path).name}"
            )
        try:
            known[name] = load_profile(path, model=name)  # with its own T1
        except InputError as e:
            if e.param != "iteration_time":  # anything but a format without an iteration time
                raise
            if t1 is None:
                raise InputError(
                    f"{meas.where(i)}: profile {name} has no single-GPU iteration time; give this "
                    f"row's in a t1 column"
                ) from None
            if (name, t1) not in known:
                known[(name, t1)] = load_profile(path, t1=t1, model=name)
            return known[(name, t1)]
    return known[name] if t1 is None else known[name].scaled_to(t1, meas.where(i))


def build_rows(
    meas: Measurements,
    profiles: Sequence[Profile],
    default_model: str,
    settings: Settings,
    assumed: list[str] | None = None,
) -> tuple[Rows, list[str], Features]:
    """The measured runs as :class:`kernels.fit.Rows` (float64, built by the engine's
    :func:`~sweep.engine.inputs.row_inputs`), the models' names per row, and the
    :class:`~kernels.overlap.Features` they need. Settings left None follow the rows'
    workload; ``assumed`` (a list) receives the line saying so, if any."""
    n = len(meas)
    known: dict[Any, Profile] = {p.model: p for p in profiles}
    runs = [_profile_for(meas, i, known, default_model) for i in range(n)]
    settings, text = _following(settings, list({p.model: p for p in runs}.values()))
    if text and assumed is not None:
        assumed.append(text)
    collectives = meas.column("collective", settings.collective)
    for i, c in enumerate(collectives):
        if c not in COLLECTIVES:
            raise InputError(f"{meas.where(i)}: collective {c!r} unknown; known: {', '.join(COLLECTIVES)}")
    bucketing = meas.column("bucketing", settings.bucketing)
    for i, b in enumerate(bucketing):
        if b not in BUCKETINGS:
            raise InputError(f"{meas.where(i)}: bucketing {b!r} unknown; known: {', '.join(BUCKETINGS)}")
    rows, features = row_inputs(
        runs,
        bucketing=bucketing,
        collective=collectives,
        fusion_buffer=meas.column("fusion_buffer", settings.fusion_buffer),
        fusion_timeout=meas.column("fusion_timeout", settings.fusion_timeout),
        nodes=meas.columns["nodes"],
        gpus_per_node=meas.columns["gpus_per_node"],
        nics_per_node=meas.column("nics_per_node", settings.nics_per_node),
        inner={d: meas.column(d, None if d == "bandwidth" else default_value(d)) for d in INNER},
        reduce_table=default_table() if settings.reduce_table is None else settings.reduce_table,
        intra_bandwidth=float(settings.intra_bandwidth),  # type: ignore[arg-type]  # set by _following
    )
    return rows, [p.model for p in runs], features


def _following(settings: Settings, profiles: Sequence[Profile]) -> tuple[Settings, str]:
    """``settings`` with those left None set as the workload has them, and the line that says so."""
    values, _ = workload_defaults(profiles)
    chosen = {k: values[k] for k in FOLLOWING if getattr(settings, k) is None}
    return dataclasses.replace(settings, **chosen), assumed_text(profiles, chosen)


def _groups(meas: Measurements, fit_axes: Sequence[str], per: Mapping[str, str]) -> tuple[Params, Any]:
    """The parameters: [(family, group label or None)], and [R, F] the parameter each row uses."""
    params: Params = []
    index = np.zeros((len(meas), len(fit_axes)), np.int32)
    for f, axis in enumerate(fit_axes):
        column = per.get(axis)
        labels = meas.columns[column] if column else [None] * len(meas)
        first = len(params)
        order = list(dict.fromkeys(labels))
        params += [(axis, label) for label in order]
        index[:, f] = [first + order.index(label) for label in labels]
    return params, index


def _starts(params: Params, spec: FitSpec, fit_axes: Sequence[str], count: int = 4096) -> Array:
    """Starting points [S, P], unconstrained: the product of each family's start values
    (a family's groups start together), thinned evenly past ``count``."""
    mesh = np.meshgrid(*(np.asarray(STARTS[a], np.float64) for a in fit_axes), indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)  # [S, F] in stored units
    if len(points) > count:
        points = points[np.linspace(0, len(points) - 1, count).astype(int)]
    out = np.empty((len(points), len(params)))
    for j, (axis, _) in enumerate(params):
        f = fit_axes.index(axis)
        lo, hi = spec.lows[f], spec.highs[f]
        frac = np.clip((si_values(axis, points[:, f]) - lo) / (hi - lo), 1e-6, 1 - 1e-6)
        out[:, j] = np.log(frac / (1 - frac))
    return out


def _padded(rows: Rows, target: Array, weights: Array) -> tuple[Rows, Array, Array]:
    """``rows``, ``target`` and ``weights`` padded to a multiple of ROW_QUANTUM rows (copies of
    row 0 with weight 0) and BUCKET_PAD buckets (empty ones, which change nothing), so
    fits of similar sizes share one compiled kernel; outputs are sliced back to the real rows."""
    n, length = len(target), rows.buckets.nbytes.shape[1]
    extra_rows = -n % ROW_QUANTUM
    extra_buckets = -length % BUCKET_PAD

    def rows_of(x: Any) -> Any:
        return None if x is None else np.concatenate([x, np.repeat(x[:1], extra_rows, axis=0)])

    def buckets_of(x: Any) -> Any:
        if x is None or np.ndim(x) < 2:
            return rows_of(x)
        return np.pad(rows_of(x), [(0, 0), (0, extra_buckets)] + [(0, 0)] * (np.ndim(x) - 2))

    rows = rows._replace(
        config=type(rows.config)(*map(rows_of, rows.config)),
        layout=type(rows.layout)(*map(buckets_of, rows.layout)),
        buckets=type(rows.buckets)(*map(buckets_of, rows.buckets)),
        t1=rows_of(rows.t1),
        index=rows_of(rows.index),
    )
    return rows, rows_of(target), np.concatenate([weights, np.zeros(extra_rows)])


def _check_identifiable(
    params: Params, spec: FitSpec, rows: Rows, keep: Array, measured: str, features: Features
) -> None:
    """Refuse parameters no training row depends on, or more parameters than such rows."""
    middle = np.zeros(len(params))
    informative = np.zeros(len(keep), bool)
    for j, (axis, label) in enumerate(params):
        lo, hi = middle.copy(), middle.copy()
        lo[j], hi[j] = -12.0, 12.0
        changed = (
            np.abs(
                np.asarray(predict_rows(lo, rows, spec=spec, features=features)[measured])
                - np.asarray(predict_rows(hi, rows, spec=spec, features=features)[measured])
            )
            > 1e-12
        )
        changed &= keep
        if not changed.any():
            which = f"{axis}" + (f" for {label}" if label is not None else "")
            raise InputError(
                f"{which}: no training row depends on it (one worker, nothing exposed, or no row "
                f"of that group); measure runs on several nodes, or fit fewer parameters",
                param="fit",
            )
        informative |= changed
    if informative.sum() < len(params):
        raise InputError(
            f"{len(params)} parameters need at least {len(params)} training rows that depend on them; "
            f"there are {int(informative.sum())}",
            param="fit",
        )


def _standard_errors(
    best: Array,
    params: Params,
    spec: FitSpec,
    rows: Rows,
    target: Array,
    res: Array,
    keep: Array,
    measured: str,
    features: Features,
    fit_axes: Sequence[str],
    blank: Array | None = None,
) -> tuple[Array, Array]:
    """[P] standard errors of the fitted values (stored units), NaN where undefined, and [R]
    standard errors of the predictions of the ``blank`` rows (delta method: g^T cov g with g the
    prediction's gradient in the fit's unconstrained parameters), NaN elsewhere or where undefined.

    ``rows``, ``target``: possibly padded past the R real rows (:func:`_padded`), the blank rows'
    target 1 (so their residual's gradient is the prediction's); ``res`` [R]: the residuals at
    ``best``; ``keep`` [R]: the training rows.
    """
    n = len(keep)
    blank = np.zeros(n, bool) if blank is None else blank
    none = (np.full(len(params), np.nan), np.full(n, np.nan))
    full = np.asarray(residual_jacobian(best, rows, target, spec=spec, measured=measured, features=features))[
        :n
    ]
    jac = full[keep]
    dof = jac.shape[0] - len(params)
    if dof <= 0:
        return none
    s2 = float(np.sum(res[keep] ** 2)) / dof
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return none
    spread = np.full(n, np.nan)
    if blank.any():
        g = full[blank]
        var = np.einsum("rp,pq,rq->r", g, cov, g)
        spread[blank] = np.where(var >= 0, np.sqrt(np.maximum(var, 0.0)), np.nan)
    out = np.empty(len(params))
    for j, (axis, _) in enumerate(params):
        f = fit_axes.index(axis)
        sig = 1.0 / (1.0 + np.exp(-best[j]))
        slope = (spec.highs[f] - spec.lows[f]) * sig * (1 - sig) / NUMERIC_AXES[axis].to_si
        out[j] = abs(slope) * np.sqrt(cov[j, j]) if cov[j, j] >= 0 else np.nan
    return out, spread


def calibrate(
    meas: Measurements,
    profiles: Sequence[Profile],
    default_model: str,
    fit_axes: Sequence[str] = ("utilization",),
    *,
    per: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    train: str | npt.ArrayLike | None = None,
    settings: Settings = Settings(),
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
) -> dict[str, Any]:
    """Fit ``fit_axes`` (one value per group of ``per[axis]``'s column, else shared) to the
    rows ``train`` selects (a filter expression or a row mask; all rows without it) and
    predict every row. Returns a result dict."""
    per, bounds = dict(per or {}), dict(bounds or {})
    fit_axes = tuple(fit_axes)
    _check_settings(settings)
    for axis in fit_axes:
        if axis not in FITTABLE:
            raise InputError(f"{axis!r}: can fit {', '.join(FITTABLE)}", param="fit")
        if axis in meas.columns:
            raise InputError(f"{axis}: the file also fixes {axis} in a column; drop one", param="fit")
    for axis, column in per.items():
        if axis not in fit_axes:
            raise InputError(f"{axis}={column}: {axis} is not fitted (--fit)", param="per")
        if column not in meas.columns:
            raise InputError(f"{axis}={column}: no column {column!r} in {meas.path}", param="per")
    for axis in bounds:
        if axis not in fit_axes:
            raise InputError(
                f"{axis}: {axis!r} is not fitted (--fit {','.join(fit_axes)}); bounds apply to a "
                f"fitted parameter",
                param="bounds",
            )
    lows, highs = [], []
    for axis in fit_axes:
        default = NUMERIC_AXES[axis].fit
        assert default is not None  # FITTABLE: the axes with fit bounds
        lo, hi = bounds.get(axis, default)
        if not (NUMERIC_AXES[axis].low <= lo < hi <= NUMERIC_AXES[axis].high):
            raise InputError(
                f"{axis}={show(lo)}:{show(hi)}: needs {show(NUMERIC_AXES[axis].low)} <= low < high <= "
                f"{show(NUMERIC_AXES[axis].high)}",
                param="bounds",
            )
        lows.append(float(si_values(axis, lo)))
        highs.append(float(si_values(axis, hi)))
    spec = FitSpec(fit_axes, tuple(lows), tuple(highs))
    blank = np.array([v is None for v in meas.columns[meas.measured]], bool)  # rows to predict, not fit
    if blank.all():
        raise InputError(f"{meas.path}: every {meas.measured} is blank; give measured rows to fit")
    if train is None:
        keep = ~blank
    elif isinstance(train, str):
        keep = np.array(select(meas, train, rows=~blank))
    else:  # a row mask, from a program (sweep validate)
        keep = np.asarray(train, bool) & ~blank
    weights = keep.astype(np.float64)
    assumed: list[str] = []
    rows, models, features = build_rows(meas, profiles, default_model, settings, assumed)
    params, index = _groups(meas, fit_axes, per)
    rows = rows._replace(index=index)
    target = np.array([np.nan if v is None else v for v in meas.columns[meas.measured]], np.float64)
    if meas.measured == "iteration_time":
        below = np.flatnonzero(target < rows.t1 * (1 - 1e-12))
        if below.size:
            i = below[0]
            raise InputError(
                f"{meas.where(i)}: iteration_time {target[i]:g} s is below the single-GPU time "
                f"T1 = {rows.t1[i]:g} s of {models[i]}; the model never runs faster than one GPU"
            )
    n = len(meas)
    padded, padded_target, padded_weights = _padded(rows, np.where(blank, 1.0, target), weights)
    padded_keep = padded_weights > 0
    with precision("float64"):
        _check_identifiable(params, spec, padded, padded_keep, meas.measured, features)
        best, _ = fit_rows(
            _starts(params, spec, fit_axes),
            padded,
            padded_target,
            padded_weights,
            spec=spec,
            measured=meas.measured,
            steps=steps,
            learning_rate=learning_rate,
            softness=SOFTNESS,
            features=features,
        )
        best = np.asarray(best)
        predicted = np.asarray(predict_rows(best, padded, spec=spec, features=features)[meas.measured])[:n]
        res = np.asarray(residual(predicted, target, meas.measured))
        errors, spread = _standard_errors(
            best, params, spec, padded, padded_target, res, keep, meas.measured, features, fit_axes, blank
        )
    result = _result(
        meas, models, params, spec, fit_axes, best, errors, predicted, res, target, keep, rows, blank, spread
    )
    if assumed:
        result["assumed"] = assumed[0]
    return result


def _check_settings(settings: Settings) -> None:
    """Refuse settings ``sweep grid`` would refuse (one line naming the option)."""
    intra = settings.intra_bandwidth
    if intra is not None and (
        isinstance(intra, bool)
        or not isinstance(intra, (int, float))
        or not (np.isfinite(intra) and intra > 0)
    ):
        shown = show(intra) if isinstance(intra, (int, float)) else repr(intra)
        raise InputError(
            f"{shown}: intra-node bandwidth must be a number > 0 Gbit/s", param="intra_bandwidth"
        )
    for name, values in (("collective", COLLECTIVES), ("bucketing", BUCKETINGS)):
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, str) or value not in values):
            raise InputError(f"{value!r}: calibrate takes one of {', '.join(values)}", param=name)
    for name in ("nics_per_node", "fusion_buffer", "fusion_timeout"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{value!r}: expected one number", param=name)
        NUMERIC_AXES[name].check(float(value))


Z95 = 1.959963984540054  # two-sided 95% normal quantile: the blank rows' intervals


def _interval(measured: str, value: float, spread: float) -> list[float] | None:
    """A blank row's 95% interval from the fit's uncertainty (None where it is undefined)."""
    if not np.isfinite(spread):
        return None
    lo, hi = value - Z95 * spread, value + Z95 * spread
    if measured == "scaling_factor":
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return [max(lo, 0.0), hi]


def _result(
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
    dof = int(keep.sum()) - len(params)
    fitted, warnings = [], []
    for j, (axis, label) in enumerate(params):
        f = fit_axes.index(axis)
        value = float(spec.value(f, best[j])) / NUMERIC_AXES[axis].to_si
        lo, hi = spec.lows[f] / NUMERIC_AXES[axis].to_si, spec.highs[f] / NUMERIC_AXES[axis].to_si
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
        if dof <= 0:
            continue
        if not np.isfinite(errors[j]) or errors[j] > (hi - lo):
            warnings.append(
                f"{which} is not identifiable from these rows (its standard error is undefined or "
                f"wider than its bounds)"
            )
    if dof <= 0:
        warnings.append(
            f"{len(params)} parameters from {int(keep.sum())} training rows: they fit exactly, with no "
            f"residual left to estimate their standard errors"
            + (" (nor the blank rows' intervals)" if blank.any() else "")
        )
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
                "nodes": int(col["nodes"][i]),
                "gpus_per_node": int(col["gpus_per_node"][i]),
                "gpus": int(col["nodes"][i]) * int(col["gpus_per_node"][i]),
                "bandwidth_gbps": col["bandwidth"][i],
                "measured": None if blank[i] else float(target[i]),
                "predicted": float(predicted[i]),
                "residual": None if blank[i] else float(res[i]),
                "train": bool(keep[i]),
                "effective_bandwidth_gbps": col["bandwidth"][i] * float(utilization[i]),
                **(
                    {"interval": _interval(meas.measured, float(predicted[i]), float(spread[i]))}
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


def _text(text: str, item: str) -> str:
    return text


def parse_pairs(
    items: Iterable[str] | None, param: str, value: Callable[[str, str], Any] = _text
) -> dict[str, Any]:
    """``["overhead=framework"]`` -> {"overhead": "framework"} (``value(text, item)`` parses the right side)."""
    out = {}
    if isinstance(items, str):
        items = [items]
    for item in items or ():
        if not isinstance(item, str):
            raise InputError(f"{item!r}: expected NAME=VALUE text", param=param)
        name, sep, rest = item.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise InputError(f"{item!r}: expected NAME=VALUE", param=param)
        if name.strip() not in FITTABLE:
            raise InputError(
                f"{item!r}: {name.strip()!r} is not a parameter calibrate fits; known: {', '.join(FITTABLE)}",
                param=param,
            )
        if name.strip() in out:
            raise InputError(f"{item!r}: {name.strip()} is given twice", param=param)
        out[name.strip()] = value(rest.strip(), item)
    return out


def _bounds(text: str, item: str) -> tuple[float, float]:
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError(text)
        return float(lo), float(hi)
    except ValueError:
        raise InputError(f"{item!r}: expected NAME=LOW:HIGH, e.g. overhead=0:50", param="bounds") from None


def calibrate_file(
    measurements: str | Path,
    fit_axes: str | Sequence[str] = "utilization",
    *,
    out: str | Path | None = None,
    force: bool = False,
    model: str = DEFAULTS.model,
    profile: str | Path | Sequence[str | Path] | None = None,
    iteration_time: float | None = None,
    per: Iterable[str] | None = (),
    bounds: Iterable[str] | None = (),
    train: str | None = None,
    settings: Settings = Settings(),
    gpu: str | None = None,
    precision: str | None = None,
    batch: int | str | None = None,
    seq_len: int | str | None = None,
) -> dict[str, Any]:
    """Read a measurements CSV, calibrate, and write the result as JSON to ``out`` (if given).

    ``model`` names the default profile(s) (a comma list of built-ins: the paper's CNNs or
    transformers, whose workload ``gpu``, ``precision``, ``batch`` and ``seq_len`` set, one value
    each, as ``sweep grid``'s); a ``model`` column may name other built-ins or profile files.
    ``profile`` (files) replaces them. ``per`` and ``bounds`` are ``NAME=COLUMN`` and
    ``NAME=LOW:HIGH`` items. Rows whose measured value is blank are predicted, not fitted, each
    with a 95% interval from the fit's uncertainty. The JSON has ``null`` where a number is undefined.
    """
    if out is not None:
        check_new_file(out, force=force, suffixes=(".json",))
    _check_settings(settings)
    axes = parse_names(fit_axes, "fit", FITTABLE)
    per_map = parse_pairs(per, "per")
    bounds_map = parse_pairs(bounds, "bounds", _bounds)
    for name in bounds_map:
        if name not in axes:
            raise InputError(
                f"{name}: {name!r} is not fitted (--fit {','.join(axes)}); bounds apply to a fitted "
                f"parameter",
                param="bounds",
            )
    if train is not None and not isinstance(train, str):
        raise InputError(f"{train!r}: expected a row filter such as 'gpus <= 16'", param="train")
    workload: dict[str, Any] = {
        k: v
        for k, v in dict(gpu=gpu, precision=precision, batch=batch, seq_len=seq_len).items()
        if v is not None
    }
    for name, value in workload.items():
        if isinstance(value, str) and "," in value or isinstance(value, (list, tuple)):
            raise InputError(
                f"{value if isinstance(value, str) else list(value)}: calibrate takes one value", param=name
            )
    meas = read_measurements(measurements)
    if profile:
        if workload:
            name = next(iter(workload))
            raise InputError(
                f"{workload[name]}: only for built-in transformers, not with --profile", param=name
            )
        profiles = tuple(
            p
            for path in ([profile] if isinstance(profile, (str, Path)) else profile)
            for p in resolve_models(profile=path, iteration_time=iteration_time)
        )
    else:
        if not isinstance(model, str):
            raise InputError(f"{model!r}: expected built-in model name(s), a comma list", param="model")
        known = builtin_names() + tuple(TRANSFORMERS)
        names = parse_names(model, "model", known)
        names = list(dict.fromkeys(names + [m for m in meas.column("model", names[0]) if m in known]))
        profiles = resolve_models(names, iteration_time=iteration_time, **workload)
    result = calibrate(
        meas,
        profiles,
        profiles[0].model,
        axes,
        per=per_map,
        bounds=bounds_map,
        train=train,
        settings=settings,
    )
    if out is not None:
        text = json.dumps(json_ready(result), indent=2, allow_nan=False) + "\n"
        write_atomically(out, lambda path: path.write_text(text))
    return result


def report_text(result: Mapping[str, Any]) -> str:
    """Human-readable calibration: fitted values with standard errors, errors, rows."""
    lines = []
    for p in result["fitted"]:
        units = "" if p["units"] == "1" else f" {p['units']}"
        name = p["name"] + (f" [{p['group']}]" if p["group"] is not None else "")
        err = f" +/- {p['stderr']:.2g}" if np.isfinite(p["stderr"]) else ""
        lines.append(f"{name}: {p['value']:.4g}{err}{units}")
    unit = "" if result["measured"] == "scaling_factor" else " (relative)"
    lines.append(f"rmse: {result['rmse']:.4g}{unit} over {result['train_rows']} rows")
    if "heldout_rmse" in result:
        held = len(result["rows"]) - result["train_rows"] - result.get("predicted_rows", 0)
        lines.append(
            f"held-out rmse: {result['heldout_rmse']:.4g}{unit} over {held} rows "
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
