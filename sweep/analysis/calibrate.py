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

The pieces live beside it: the rows and their settings in :mod:`sweep.analysis.calibration_rows`,
the fit's parameters, padding and standard errors in :mod:`sweep.analysis.calibration_fit`, the
result and its text in :mod:`sweep.analysis.calibration_report`.
"""

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.fit import FitSpec, residual
from netsweep_jax.sweep.analysis.calibration_fit import (
    LEARNING_RATE,
    RESTARTS,
    SOFTNESS,
    STEPS,
    check_identifiable,
    padded_rows,
    parameter_groups,
    standard_errors,
    starting_points,
)
from netsweep_jax.sweep.analysis.calibration_report import calibration_result
from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows, check_settings
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, show
from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.schema import DEFAULTS, FITTABLE
from netsweep_jax.sweep.core.values import NOTATION, decimal, json_ready, parse_names, si_values
from netsweep_jax.sweep.engine.compiled import fit_rows, predict_rows
from netsweep_jax.sweep.engine.dispatch import precision
from netsweep_jax.sweep.engine.workloads import resolve_models
from netsweep_jax.sweep.io.measurements import Measurements, read_measurements, select
from netsweep_jax.sweep.io.paths import check_new_file, write_atomically
from netsweep_jax.sweep.io.provenance import provenance
from netsweep_jax.sweep.model.builtin import builtin_names
from netsweep_jax.sweep.model.profile import Profile, ShortIterationTime
from netsweep_jax.sweep.model.transformers import TRANSFORMERS

__all__ = ["calibrate", "calibrate_file"]


def calibrate(
    meas: Measurements,
    profiles: Sequence[Profile],
    default_model: str,
    fit_axes: Sequence[str] = ("utilization",),
    *,
    per: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    train: str | npt.ArrayLike | None = None,
    settings: Settings = Settings(),  # noqa: B008  (a frozen dataclass, immutable)
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    iteration_time: float | None = None,
) -> dict[str, Any]:
    """Fit ``fit_axes`` (one value per group of ``per[axis]``'s column, else shared) to the
    rows ``train`` selects (a filter expression or a row mask; all rows without it) and
    predict every row. Returns a result dict. ``iteration_time``: T1 (s) of a profile file the ``model``
    column names, as ``--iteration-time`` is for ``--profile``'s."""
    per, bounds = dict(per or {}), dict(bounds or {})
    fit_axes = tuple(fit_axes)
    check_settings(settings)
    spec = _fit_spec(meas, fit_axes, per, bounds)
    blank = np.array([v is None for v in meas.columns[meas.measured]], bool)  # rows to predict, not fit
    keep = _training_rows(meas, train, blank)
    weights = keep.astype(np.float64)
    assumed: list[str] = []
    rows, models, features = build_rows(meas, profiles, default_model, settings, assumed, iteration_time)
    params, index = parameter_groups(meas, fit_axes, per)
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
    padded, padded_target, padded_weights = padded_rows(rows, np.where(blank, 1.0, target), weights)
    padded_keep = padded_weights > 0
    with precision("float64"):
        check_identifiable(params, spec, padded, padded_keep, meas.measured, features)
        best, _ = fit_rows(
            starting_points(params, spec, fit_axes),
            padded,
            padded_target,
            padded_weights,
            spec=spec,
            measured=meas.measured,
            steps=steps,
            learning_rate=learning_rate,
            softness=SOFTNESS,
            features=features,
            restarts=RESTARTS,
        )
        best = np.asarray(best)
        predicted = np.asarray(predict_rows(best, padded, spec=spec, features=features)[meas.measured])[:n]
        res = np.asarray(residual(predicted, target, meas.measured))
        errors, spread = standard_errors(
            best,
            params,
            spec,
            padded,
            padded_target,
            res,
            keep,
            meas.measured,
            features,
            fit_axes,
            blank,
            predicted,
        )
    result = calibration_result(
        meas, models, params, spec, fit_axes, best, errors, predicted, res, target, keep, rows, blank, spread
    )
    if assumed:
        result["assumed"] = assumed[0]
    return result


def _profile_file(meas: Measurements, path: str | Path, iteration_time: float | None) -> tuple[Profile, ...]:
    """``--profile``'s file at ``iteration_time``; a file that keeps no T1 (.csv, .bk.log) without it, where every
    row gives its own t1, at the rows' longest (each row's then replaces it: :meth:`Profile.at_run_t1`; a review:
    such a file had needed --iteration-time, which those rows refuse)."""
    try:
        return tuple(resolve_models(profile=path, iteration_time=iteration_time))
    except InputError as e:
        t1s = meas.column("t1", None)
        if not (e.param == "t1" and iteration_time is None and all(t is not None for t in t1s)):
            raise
        longest = int(np.argmax(t1s))
        try:
            return tuple(resolve_models(profile=path, iteration_time=t1s[longest]))
        except ShortIterationTime as short:  # said at the row whose t1 it is (a review: no line named)
            raise InputError(f"{meas.where(longest)}: {short}") from None


def _profiles(
    meas: Measurements,
    model: Any,
    profile: str | Path | Sequence[str | Path] | None,
    iteration_time: float | None,
    workload: Mapping[str, Any],
) -> tuple[Profile, ...]:
    """The profiles a measurements file is priced with: ``profile``'s files, else the built-in ``model`` (a
    comma list) and every built-in its ``model`` column names, with the transformers' ``workload``."""
    if profile:
        if workload:
            name = next(iter(workload))
            raise InputError(
                f"{literal(str(workload[name]))}: only for built-in transformers, not with {{0}}",
                param=name,
                names=("profile",),
            )
        paths = [profile] if isinstance(profile, (str, Path)) else list(profile)
        _one_without_a_model_column(meas, [str(p) for p in paths], "profile")
        given = tuple(p for path in paths for p in _profile_file(meas, path, iteration_time))
        # the model cells as rows read them (a built-in's name in any case: ResNet50 is a resnet50 profile's)
        named = {str(c).lower() for c in meas.column("model", None)} if "model" in meas.columns else None
        for path, p in zip(paths, given):  # one no row names would be dropped in silence
            if named is not None and p.model.lower() not in named:
                raise InputError(
                    f"{literal(str(path))}: no row of {literal(str(meas.path))} names its model "
                    f"{literal(repr(p.model))} in the model column; name it there, or leave {{0}} out",
                    param="profile",
                    names=("profile",),
                )
        return given
    if not isinstance(model, str):
        raise InputError(f"{model!r}: expected built-in model name(s), a comma list", param="model")
    known = builtin_names() + tuple(TRANSFORMERS)
    names = parse_names(model, "model", known)
    _one_without_a_model_column(meas, names, "model")
    # The file's model cells in any case, as the option takes them.
    cells = [m.lower() for m in meas.column("model", names[0]) if isinstance(m, str)]
    names = list(dict.fromkeys(names + [m for m in cells if m in known]))
    return tuple(resolve_models(names, iteration_time=iteration_time, **workload))


def _one_without_a_model_column(meas: Measurements, named: Sequence[str], param: str) -> None:
    """Refuse several models for a file with no ``model`` column: its every row is the first (the rest were
    dropped in silence)."""
    if len(named) > 1 and "model" not in meas.columns:
        raise InputError(
            f"{','.join(named)}: {meas.path} has no model column, so its rows are one model; give one, or name "
            "each row's in a model column",
            param=param,
        )


def _fit_spec(
    meas: Measurements,
    fit_axes: tuple[str, ...],
    per: Mapping[str, str],
    bounds: Mapping[str, tuple[float, float]],
) -> FitSpec:
    """The fit's axes and their bounds in SI units, after refusing an axis that cannot be fitted or that the
    file fixes, a ``per`` column or ``bounds`` of an axis not fitted, and bounds outside the axis's range."""
    for axis in fit_axes:
        if axis not in FITTABLE:
            raise InputError(f"{axis!r}: can fit {', '.join(FITTABLE)}", param="fit")
        if axis in meas.columns:
            raise InputError(f"{axis}: the file also fixes {axis} in a column; drop one", param="fit")
    for axis, column in per.items():
        if axis not in fit_axes:
            raise InputError(
                f"{literal(f'{axis}={column}')}: {literal(axis)} is not fitted ({{0}})",
                param="per",
                names=("fit",),
            )
        if column not in meas.columns:
            raise InputError(f"{axis}={column}: no column {column!r} in {meas.path}", param="per")
    for axis in bounds:
        if axis not in fit_axes:
            raise InputError(
                f"{literal(f'{axis}: {axis!r}')} is not fitted ({{0}} {','.join(fit_axes)}); bounds apply to a "
                f"fitted parameter",
                param="bounds",
                names=("fit",),
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
    return FitSpec(fit_axes, tuple(lows), tuple(highs))


def _training_rows(meas: Measurements, train: str | npt.ArrayLike | None, blank: np.ndarray) -> np.ndarray:
    """[R] bool: the measured rows the fit trains on (``train``: a filter expression or a row mask; all
    measured rows without it); a file whose every measured value is ``blank`` is refused."""
    if blank.all():
        raise InputError(f"{meas.path}: every {meas.measured} is blank; give measured rows to fit")
    if train is None:
        return ~blank
    if isinstance(train, str):
        return np.array(select(meas, train, rows=~blank))
    return np.asarray(train, bool) & ~blank  # a row mask, from a program (sweep validate)


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
        return decimal(lo), decimal(hi)
    except ValueError:
        raise InputError(
            f"{item!r}: expected NAME=LOW:HIGH, e.g. overhead=0:50 (numbers: {NOTATION})", param="bounds"
        ) from None


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
    settings: Settings = Settings(),  # noqa: B008  (a frozen dataclass, immutable)
    gpu: str | None = None,
    precision: str | None = None,
    batch: int | str | None = None,
    seq_len: int | str | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Read a measurements CSV, calibrate, and write the result as JSON to ``out`` (if given; with ``command``,
    its provenance as a cube keeps it: netsweep's version, the command line, the time and the device).

    ``model`` names the default profile(s) (a comma list of built-ins: the paper's CNNs or
    transformers, whose workload ``gpu``, ``precision``, ``batch`` and ``seq_len`` set, one value
    each, as ``sweep grid``'s); a ``model`` column may name other built-ins or profile files.
    ``profile`` (files) replaces them. ``per`` and ``bounds`` are ``NAME=COLUMN`` and
    ``NAME=LOW:HIGH`` items. Rows whose measured value is blank are predicted, not fitted, each
    with a 95% interval from the fit's uncertainty. The JSON has ``null`` where a number is undefined.
    """
    if out is not None:
        check_new_file(out, force=force, suffixes=(".json",), reads={measurements: "measurements file"})
    check_settings(settings)
    axes = parse_names(fit_axes, "fit", FITTABLE)
    per_map = parse_pairs(per, "per")
    bounds_map = parse_pairs(bounds, "bounds", _bounds)
    for name in bounds_map:
        if name not in axes:
            raise InputError(
                f"{literal(f'{name}: {name!r}')} is not fitted ({{0}} {','.join(axes)}); bounds apply to a fitted "
                f"parameter",
                param="bounds",
                names=("fit",),
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
    profiles = _profiles(meas, model, profile, iteration_time, workload)
    result = calibrate(
        meas,
        profiles,
        profiles[0].model,
        axes,
        per=per_map,
        bounds=bounds_map,
        train=train,
        settings=settings,
        iteration_time=iteration_time,
    )
    if out is not None:
        made = {} if command is None else provenance(command)  # the version, command, time and device
        text = json.dumps(json_ready({**made, **result}), indent=2, allow_nan=False) + "\n"
        write_atomically(out, lambda path: path.write_text(text))
    return result
