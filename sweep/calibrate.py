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
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kernels import collective_coefficients, last_bucket_end
from sweep.axes import NUMERIC_AXES
from sweep.errors import InputError, where
from sweep.fusion import fuse
from sweep.grid import make_grid

REQUIRED = ("nodes", "gpus_per_node", "bandwidth")
MEASURED = ("scaling_factor", "iteration_time")
OPTIONAL_NUMERIC = ("ratio", "latency", "utilization", "fusion_buffer", "fusion_timeout")
FITTABLE = ("utilization", "latency")


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
    if not path.is_file():
        raise InputError(f"{path}: measurements file not found")
    rows = list(csv.reader(path.read_text().splitlines()))
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


def _groups(meas, profiles, default_model):
    """Rows grouped by (model, collective, fusion): bucket arrays and per-row layout."""
    n = len(meas)
    col = meas.columns
    models = col.get("model", [default_model] * n)
    known = {p.model: p for p in profiles}
    for i, m in enumerate(models):
        if m not in known:
            raise InputError(f"{where(meas.path, meas.lines[i])}: model {m!r} is not among {', '.join(known)}")
    keys = [(models[i], col.get("collective", ["ring"] * n)[i],
             col.get("fusion_buffer", [64.0] * n)[i], col.get("fusion_timeout", [5.0] * n)[i]) for i in range(n)]
    groups = []
    for key in dict.fromkeys(keys):
        rows = np.array([i for i in range(n) if keys[i] == key])
        grid = make_grid(known[key[0]], collective=key[1], bandwidth=1.0)  # validates the collective
        b = fuse(known[key[0]], key[2] * 2**20, key[3] * 1e-3)
        ready, nbytes, valid = (jnp.asarray(a) for a in b.padded(len(b), np.float64))
        nodes = jnp.asarray(np.array(col["nodes"])[rows])
        gpus = jnp.asarray(np.array(col["gpus_per_node"])[rows])
        table = tuple(jnp.asarray(t) for t in grid.reduce_table)
        a, bc, lc, fixed = collective_coefficients(key[1], nodes, gpus, nbytes, *table, grid.intra_bandwidth * 1e9)
        groups.append((rows, a, bc, lc, fixed, ready, nbytes, valid, known[key[0]].t1))
    return groups


def make_predictor(meas, profiles, default_model):
    """predict(u, latency_us, softness) -> [rows] (scaling factor, iteration time)."""
    col = meas.columns
    n = len(meas)
    bw = jnp.asarray(np.array(col["bandwidth"]) * 1e9)
    ratio = jnp.asarray(np.array(col.get("ratio", [1.0] * n)))
    groups = _groups(meas, profiles, default_model)

    def predict(u, latency_us, softness):
        sf = jnp.zeros(n)
        it = jnp.zeros(n)
        for rows, a, bc, lc, fixed, ready, nbytes, valid, t1 in groups:
            alpha = (a + bc / (bw[rows] * u[rows])) / ratio[rows]
            lat = lc * latency_us[rows] * 1e-6
            end = jax.vmap(last_bucket_end, in_axes=(0, 0, None, None, 0, None, None))(
                alpha, lat, ready, nbytes, fixed, valid, softness * t1)
            r_last = ready[-1]
            exposed = (jnp.maximum(r_last, end) if softness == 0 else
                       softness * t1 * jnp.logaddexp(r_last / (softness * t1), end / (softness * t1))) - r_last
            sf = sf.at[rows].set(t1 / (t1 + exposed))
            it = it.at[rows].set(t1 + exposed)
        return sf, it

    return predict


def fit(meas, profiles, default_model, fit_axes=("utilization",), steps=400, learning_rate=0.05):
    """Fit ``fit_axes`` to the measurements. Returns a result dict (exact-model numbers)."""
    for axis in fit_axes:
        if axis not in FITTABLE:
            raise InputError(f"--fit {axis!r}: can fit {', '.join(FITTABLE)}")
        if axis in meas.columns:
            raise InputError(f"--fit {axis}: the file also fixes {axis} in a column; drop one")
    with jax.enable_x64(True):
        return _fit(meas, profiles, default_model, tuple(fit_axes), steps, learning_rate)


def _fit(meas, profiles, default_model, fit_axes, steps, learning_rate):
    n = len(meas)
    col = meas.columns
    predict = make_predictor(meas, profiles, default_model)
    target = jnp.asarray(np.array(col[meas.measured]))
    fixed_u = jnp.asarray(np.array(col.get("utilization", [1.0] * n)))
    fixed_lat = jnp.asarray(np.array(col.get("latency", [0.0] * n)))
    which = 0 if meas.measured == "scaling_factor" else 1

    def unpack(params):
        u = jax.nn.sigmoid(params["u"]) * jnp.ones(n) if "utilization" in fit_axes else fixed_u
        lat = jax.nn.softplus(params["a"]) * jnp.ones(n) if "latency" in fit_axes else fixed_lat
        return u, lat

    def residuals(params, softness):
        pred = predict(*unpack(params), softness)[which]
        return (pred - target) / (1.0 if which == 0 else target)

    def loss(params, softness):
        return jnp.mean(residuals(params, softness) ** 2)

    exact_loss = jax.jit(lambda p: loss(p, 0.0))
    # Coarse exact scan for a starting point (the loss can be flat far from the answer).
    u_grid = np.log(np.geomspace(1e-3, 0.999, 60) / (1 - np.geomspace(1e-3, 0.999, 60)))
    a_grid = np.log(np.expm1(np.array([0.5, 2.0, 10.0, 50.0]))) if "latency" in fit_axes else [0.0]
    starts = [{"u": jnp.asarray(pu), "a": jnp.asarray(pa)} for pu in u_grid for pa in a_grid]
    params = min(starts, key=lambda p: float(exact_loss(p)))
    opt = optax.adam(learning_rate)
    state = opt.init(params)
    grad = jax.jit(jax.grad(lambda p: loss(p, 1e-4)))

    @jax.jit
    def step(params, state):
        updates, state = opt.update(grad(params), state)
        return optax.apply_updates(params, updates), state

    best, best_loss = params, float(exact_loss(params))
    for _ in range(steps):
        params, state = step(params, state)
        current = float(exact_loss(params))
        if current < best_loss:
            best, best_loss = params, current
    u, lat = unpack(best)
    sf, it = predict(u, lat, 0.0)
    res = residuals(best, 0.0)
    out = {
        "measurements": meas.path, "measured": meas.measured, "fitted": list(fit_axes),
        "rmse": float(jnp.sqrt(jnp.mean(res**2))),
        "rows": [
            {"line": meas.lines[i], "model": col.get("model", [default_model] * n)[i],
             "nodes": int(col["nodes"][i]), "gpus_per_node": int(col["gpus_per_node"][i]),
             "bandwidth_gbps": col["bandwidth"][i], "measured": float(target[i]),
             "predicted": float(sf[i] if which == 0 else it[i]),
             "residual": float(res[i]), "effective_bandwidth_gbps": col["bandwidth"][i] * float(u[i])}
            for i in range(n)
        ],
    }
    if "utilization" in fit_axes:
        out["utilization"] = float(u[0])
    if "latency" in fit_axes:
        out["latency_us"] = float(lat[0])
    return out


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
