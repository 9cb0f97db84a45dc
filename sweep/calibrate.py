"""Calibration: infer the network utilization (and latency) that measurements imply.

Given measured scaling factors (or iteration times) of real data-parallel runs, fit
the utilization u in (0, 1] (and, optionally, the per-message latency a >= 0, us)
so that the model reproduces them. Parameters are unconstrained (u = sigmoid(p),
a = softplus(q) us); the fit starts from the best point of a coarse exact scan and
refines by gradient descent (optax Adam) through the JAX kernel, with the FIFO max
smoothed (softness 1e-4 x T1) so the gradient does not vanish where communication
is just hidden. The reported fit and residuals use the exact model.

Measurements CSV: columns ``nodes,gpus_per_node,bandwidth`` (Gbit/s) and
``scaling_factor`` or ``iteration_time`` (s); optional ``model``; optional fixed
axes ``ratio``, ``latency`` (us), ``utilization``, ``collective``, ``fusion_buffer``
(MiB), ``fusion_timeout`` (ms).
"""

import csv
import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from kernels.fit import TRANSFORMS, Rows
from kernels.overlap import Buckets, Config, Layout
from sweep.axes import si_values
from sweep.collectives import coefficients
from sweep.engine import precision
from sweep.errors import InputError, where
from sweep.fusion import fuse
from sweep.grid import DEFAULT_INTRA_GBPS
from sweep.reduce_cost import default_table
from sweep.schema import COLLECTIVES, NUMERIC_AXES
from sweep.textfile import read_lines

REQUIRED = ("nodes", "gpus_per_node", "bandwidth")
MEASURED = ("scaling_factor", "iteration_time")
OPTIONAL_NUMERIC = ("ratio", "latency", "utilization", "fusion_buffer", "fusion_timeout")
FITTABLE = ("utilization", "latency")
STEPS = 400
LEARNING_RATE = 0.05
SOFTNESS = 1e-4  # of T1: the smoothed max's width while descending


@dataclasses.dataclass
class Measurements:
    """Rows of a measurements file. ``columns``: name -> list; ``lines``: file line numbers."""

    path: str
    columns: dict
    lines: list
    measured: str  # "scaling_factor" or "iteration_time"

    def __len__(self):
        return len(self.lines)


def read_measurements(path):
    """Read and validate a measurements CSV; errors name the file and line."""
    path = Path(path)
    rows = list(csv.reader(read_lines(path, "measurements file")))
    if not rows:
        raise InputError(f"{path}: empty file; expected a header and rows")
    header = [c.strip() for c in rows[0]]
    missing = [c for c in REQUIRED if c not in header]
    measured = [c for c in MEASURED if c in header]
    if missing or len(measured) != 1:
        need = ", ".join(missing) if missing else "exactly one of scaling_factor, iteration_time"
        raise InputError(f"{where(path, 1)}: missing column(s) {need}; header is {','.join(header)}")
    known = set(REQUIRED + MEASURED + OPTIONAL_NUMERIC + ("model", "collective"))
    unknown = [c for c in header if c not in known]
    if unknown:
        raise InputError(f"{where(path, 1)}: unknown column {unknown[0]!r}; known: {', '.join(sorted(known))}")
    columns = {c: [] for c in header}
    lines = []
    for lineno, cells in enumerate(rows[1:], start=2):
        if not "".join(cells).strip():
            continue
        if len(cells) != len(header):
            raise InputError(f"{where(path, lineno)}: expected {len(header)} cells, got {len(cells)}")
        for name, cell in zip(header, cells):
            columns[name].append(_cell(name, cell.strip(), path, lineno))
        lines.append(lineno)
    if not lines:
        raise InputError(f"{path}: no measurement rows after the header")
    return Measurements(str(path), columns, lines, measured[0])


def _cell(name, text, path, lineno):
    if name in ("model", "collective"):
        if not text:
            raise InputError(f"{where(path, lineno)}: empty {name}")
        return text
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where(path, lineno)}: {name} {text!r} is not a number") from None
    if name == "scaling_factor" and not (0 < value <= 1):
        raise InputError(f"{where(path, lineno)}: scaling_factor {text} must be in (0, 1]")
    if name == "iteration_time" and not (value > 0 and math.isfinite(value)):
        raise InputError(f"{where(path, lineno)}: iteration_time {text} must be > 0 seconds")
    if name in NUMERIC_AXES:
        try:
            NUMERIC_AXES[name].check(value)
        except InputError as e:
            raise InputError(f"{where(path, lineno)}: {name} {text}: {NUMERIC_AXES[name].rule()}") from e
    return value


def _rows(meas, profiles, default_model, reduce_table, intra_bandwidth):
    """The measured runs as :class:`kernels.fit.Rows` (float64, buckets padded to the longest)."""
    n = len(meas)
    col = meas.columns
    models = col.get("model", [default_model] * n)
    known = {p.model: p for p in profiles}
    for i, m in enumerate(models):
        if m not in known:
            raise InputError(f"{where(meas.path, meas.lines[i])}: model {m!r} is not among {', '.join(known)}")
    collectives = col.get("collective", ["ring"] * n)
    for i, c in enumerate(collectives):
        if c not in COLLECTIVES:
            raise InputError(f"{where(meas.path, meas.lines[i])}: collective {c!r} unknown; "
                             f"known: {', '.join(COLLECTIVES)}")
    knobs = ("fusion_buffer", "fusion_timeout")
    fusion = list(zip(*(si_values(d, col.get(d, [float(NUMERIC_AXES[d].default)] * n)) for d in knobs)))
    fused = {(models[i], fusion[i]): fuse(known[models[i]], *fusion[i]) for i in range(n)}
    length = max(len(b) for b in fused.values())
    buckets = np.zeros((3, n, length))
    layout = np.zeros((3, n))
    reduce = np.zeros((n, length))
    intra_bits = float(si_values("bandwidth", intra_bandwidth))
    for i in range(n):
        b = fused[models[i], fusion[i]]
        buckets[:, i, : len(b)] = (b.ready, b.nbytes, np.ones(len(b)))
        c = coefficients(collectives[i], [col["nodes"][i]], [col["gpus_per_node"][i]], buckets[1, i],
                         reduce_table, intra_bits)
        layout[:, i] = (c.transfer[0], c.wire[0], c.messages[0])
        reduce[i] = c.reduce[0]
    config = Config(
        bandwidth=si_values("bandwidth", col["bandwidth"]),
        utilization=np.asarray(col.get("utilization", [1.0] * n), np.float64),
        ratio=np.asarray(col.get("ratio", [1.0] * n), np.float64),
        latency=si_values("latency", col.get("latency", [0.0] * n)),
    )
    t1 = np.array([known[m].t1 for m in models])
    return Rows(config, Layout(*layout, reduce), Buckets(*buckets), t1), models


def _starts(fit_axes):
    """Starting points of a coarse exact scan, unconstrained: dict name -> [S]."""
    u = np.geomspace(1e-3, 0.999, 60)
    grids = {"utilization": np.log(u / (1 - u)), "latency": np.log(np.expm1([0.5, 2.0, 10.0, 50.0]))}
    mesh = np.meshgrid(*(grids[a] for a in fit_axes), indexing="ij")
    return {a: m.ravel() for a, m in zip(fit_axes, mesh)}


# Unconstrained values far apart in each parameter's domain, to see which rows depend on it.
EXTREMES = {"utilization": (np.log(1e-3 / (1 - 1e-3)), np.log(0.999 / 0.001)),
            "latency": (np.log(np.expm1(0.01)), 1e4)}  # softplus: 0.01 us and 10^4 us


def _check_identifiable(meas, rows, fitted, predict_rows):
    """Refuse a fit whose parameters the rows cannot determine.

    A row informs a parameter when its prediction changes between the parameter's
    extremes (the others held at their middles); each parameter needs at least one
    such row, and together they need at least as many informative rows as parameters.
    """
    middle = {a: np.float64(sum(EXTREMES[a]) / 2) for a in fitted}
    informative = np.zeros(len(meas), bool)
    for a in fitted:
        lo, hi = ({**middle, a: np.float64(x)} for x in EXTREMES[a])
        changed = np.abs(np.asarray(predict_rows(lo, rows, fitted=fitted)[meas.measured])
                         - np.asarray(predict_rows(hi, rows, fitted=fitted)[meas.measured])) > 1e-12
        if not changed.any():
            raise InputError(f"{a}: no row depends on it (every run has a single worker, or nothing is "
                             f"exposed); measure runs on several nodes to fit it", param="fit")
        informative |= changed
    if informative.sum() < len(fitted):
        raise InputError(f"{','.join(fitted)}: {len(fitted)} parameters need at least {len(fitted)} rows that "
                         f"depend on them; the file has {int(informative.sum())}", param="fit")


def fit(meas, profiles, default_model, fit_axes=("utilization",), steps=STEPS, learning_rate=LEARNING_RATE,
        reduce_table=None, intra_bandwidth=DEFAULT_INTRA_GBPS):
    """Fit ``fit_axes`` to the measurements. Returns a result dict (exact-model numbers)."""
    for axis in fit_axes:
        if axis not in FITTABLE:
            raise InputError(f"{axis!r}: can fit {', '.join(FITTABLE)}", param="fit")
        if axis in meas.columns:
            raise InputError(f"{axis}: the file also fixes {axis} in a column; drop one", param="fit")
    table = default_table() if reduce_table is None else reduce_table
    rows, models = _rows(meas, profiles, default_model, table, intra_bandwidth)
    fitted = tuple(fit_axes)
    target = np.array(meas.columns[meas.measured], np.float64)
    if meas.measured == "iteration_time":
        below = np.flatnonzero(target < rows.t1 * (1 - 1e-12))
        if below.size:
            i = below[0]
            raise InputError(f"{where(meas.path, meas.lines[i])}: iteration_time {target[i]:g} s is below the "
                             f"single-GPU time T1 = {rows.t1[i]:g} s of {models[i]}; the model never runs faster "
                             f"than one GPU")
    with precision("float64"):
        from sweep.compiled import fit_rows, predict_rows

        _check_identifiable(meas, rows, fitted, predict_rows)
        best, _ = fit_rows(_starts(fitted), rows, target, fitted=fitted, measured=meas.measured, steps=steps,
                           learning_rate=learning_rate, softness=SOFTNESS)
        pred = predict_rows(best, rows, fitted=fitted)
        values = {a: float(TRANSFORMS[a](best[a])) for a in fitted}
    predicted = np.asarray(pred[meas.measured])
    res = (predicted - target) / (1.0 if meas.measured == "scaling_factor" else target)
    u = np.full(len(meas), values["utilization"]) if "utilization" in fitted else np.asarray(rows.config.utilization)
    col = meas.columns
    out = {
        "measurements": meas.path, "measured": meas.measured, "fitted": list(fitted),
        "rmse": float(np.sqrt(np.mean(res**2))),
        "rows": [
            {"line": meas.lines[i], "model": models[i],
             "nodes": int(col["nodes"][i]), "gpus_per_node": int(col["gpus_per_node"][i]),
             "bandwidth_gbps": col["bandwidth"][i], "measured": float(target[i]),
             "predicted": float(predicted[i]), "residual": float(res[i]),
             "effective_bandwidth_gbps": col["bandwidth"][i] * float(u[i])}
            for i in range(len(meas))
        ],
    }
    if "utilization" in fitted:
        out["utilization"] = values["utilization"]
    if "latency" in fitted:
        out["latency_us"] = values["latency"] * 1e6
    return out


def calibrate_file(measurements, fit_axes="utilization", *, out=None, force=False, model="resnet50",
                   profile=None, iteration_time=None):
    """Read a measurements CSV, fit, and write the result as JSON to ``out`` (if given).

    ``model`` names the default profile(s); a ``model`` column may name other
    built-ins. ``profile`` (a file) replaces them.
    """
    from sweep.axes import parse_names
    from sweep.builtin import builtin_names
    from sweep.grid import resolve_models
    from sweep.outputs import check_new_file, write_atomically

    if out is not None:
        check_new_file(out, force=force, suffixes=(".json",))
    axes = parse_names(fit_axes, "fit", FITTABLE)
    meas = read_measurements(measurements)
    if profile is None:
        names = parse_names(model, "model", builtin_names())
        model = list(dict.fromkeys(names + [m for m in meas.columns.get("model", []) if m in builtin_names()]))
    profiles = resolve_models(model, profile, iteration_time)
    result = fit(meas, profiles, profiles[0].model, axes)
    if out is not None:
        write_atomically(out, lambda path: path.write_text(json.dumps(result, indent=2) + "\n"))
    return result


def report_text(result):
    """Human-readable fit summary."""
    lines = []
    if "utilization" in result:
        lines.append(f"utilization: {result['utilization']:.4f}")
    if "latency_us" in result:
        lines.append(f"latency: {result['latency_us']:.3f} us per message")
    unit = "" if result["measured"] == "scaling_factor" else " (relative)"
    lines.append(f"rmse: {result['rmse']:.4g}{unit} over {len(result['rows'])} rows")
    lines.append(f"{'line':>5} {'model':<10} {'nodes':>5} {'gpus':>4} {'Gbit/s':>7} {'effective':>9} "
                 f"{'measured':>9} {'predicted':>9} {'residual':>9}")
    for r in result["rows"]:
        lines.append(f"{r['line']:>5} {r['model']:<10} {r['nodes']:>5} {r['gpus_per_node']:>4} "
                     f"{r['bandwidth_gbps']:>7g} {r['effective_bandwidth_gbps']:>9.3g} {r['measured']:>9.4g} "
                     f"{r['predicted']:>9.4g} {r['residual']:>+9.2e}")
    return "\n".join(lines)
