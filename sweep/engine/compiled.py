"""The one module that calls ``jax.jit``: fixed-shape entry points around the kernels.

Every argument that varies within a sweep, a query or a fit is a traced array;
only structural choices are static (which kernel, which axis is solved, which
parameters are fitted). Shapes are fixed per sweep (padded blocks, buckets padded
to the sweep's maximum), so a sweep compiles once per dtype, and a second sweep or
fit of the same shapes compiles nothing.
"""

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from netsweep_jax.kernels import fit
from netsweep_jax.kernels import layout as layout_kernel
from netsweep_jax.kernels.bisect import boundary
from netsweep_jax.kernels.overlap import METRICS, PAPER, Buckets, Config, Features, Layout, on_grid, on_table
from netsweep_jax.sweep.core.layout_axes import DIMS as LAYOUT_DIMS
from netsweep_jax.sweep.core.layout_axes import INNER as LAYOUT_INNER
from netsweep_jax.sweep.core.layout_axes import OUTER as LAYOUT_OUTER
from netsweep_jax.sweep.core.schema import INNER, VARIABLES
from netsweep_jax.sweep.engine.reductions import DevicePlan, device_reduce

# The kernels keep their own names (they cannot import the schema); they must be the schema's.
if METRICS != tuple(VARIABLES) or Config._fields != INNER:
    raise ImportError("kernels.overlap's METRICS or Config fields differ from sweep.core.schema's "
                      "VARIABLES or INNER")

Metrics = dict[str, jax.Array]


@functools.partial(jax.jit, static_argnames=("kernel", "zero_latency", "features", "variables", "store", "reduce"))
def grid_metrics(config: Config, layout: Layout, buckets: Buckets, t1: jax.Array, *, kernel: str = "xla",
                 zero_latency: bool = False, features: Features = PAPER, variables: Sequence[str] | None = None,
                 store: str | None = None, reduce: DevicePlan | None = None) -> Metrics:
    """Metrics of config [C] x layout [K] (see :func:`kernels.overlap.on_grid`): dict of [K, C].

    ``kernel``: ``xla`` (the scan), ``pallas`` or ``pallas-interpret``;
    ``zero_latency``: a promise that every latency is 0 (Pallas skips an add);
    ``features``: the model terms the sweep uses (:class:`kernels.overlap.Features`);
    ``variables``: the metrics to return (None: all), cast on the device to ``store``
    (a dtype name; None: the compute dtype), so only what is kept is copied back;
    ``reduce``: (block tensor shape, axes, family) to reduce each output over on the device
    (:func:`sweep.engine.reductions.device_reduce`), giving ``name`` and ``name@index`` (None: no reduction).
    """
    if kernel == "xla":
        out = on_grid(config, layout, buckets, t1, None, features)
    else:
        from netsweep_jax.kernels.pallas_overlap import on_grid_pallas  # only where asked for (heavy)

        out = on_grid_pallas(config, layout, buckets, t1, features=features, interpret=kernel == "pallas-interpret",
                             zero_latency=zero_latency)
    if reduce is not None:
        shape, axes, family = reduce
        reduced = {}
        for name in variables or out:
            value, index = device_reduce(out[name].reshape(shape), axes, family)
            reduced[name] = value
            if index is not None:
                reduced[f"{name}@index"] = index
        return reduced
    return {name: out[name] if store is None else out[name].astype(store) for name in (variables or out)}


@functools.partial(jax.jit, static_argnames=("features",))
def table_metrics(config: Config, layout: Layout, buckets: Buckets, t1: jax.Array, *,
                  features: Features = PAPER) -> Metrics:
    """Metrics of config [K, C] (a configuration per cell) under layout [K]: dict of [K, C]."""
    return on_table(config, layout, buckets, t1, None, features)


@functools.partial(jax.jit, static_argnames=("axis", "iterations", "features", "increasing"))
def solve_on_grid(config: Config, layout: Layout, buckets: Buckets, t1: jax.Array, target: jax.Array,
                  low: jax.Array, high: jax.Array, *, axis: str, iterations: int = 40, features: Features = PAPER,
                  increasing: bool = True) -> tuple[jax.Array, jax.Array]:
    """The boundary value of Config field ``axis`` in [low, high] where the scaling factor reaches ``target``.

    The smallest value reaching it when the scaling factor grows with ``axis``
    (``increasing``), the largest when it falls. Args as :func:`grid_metrics` (the
    ``axis`` field of ``config`` is ignored); returns (value [K, C], status [K, C]) as
    :func:`kernels.bisect.boundary`.
    """
    shape = (layout.messages.shape[0], config.bandwidth.shape[0])
    cells = Config(*(jnp.broadcast_to(v[None, :], shape) for v in config))

    def scaling(x: jax.Array) -> jax.Array:
        return on_table(cells._replace(**{axis: x}), layout, buckets, t1, None, features)["scaling_factor"]

    return boundary(scaling, target, low, high, shape, config.bandwidth.dtype, iterations, increasing)


@functools.partial(jax.jit, static_argnames=("spec", "measured", "steps", "features"))
def fit_rows(starts: jax.Array, rows: fit.Rows, target: jax.Array, weights: jax.Array, *, spec: fit.FitSpec,
             measured: str, steps: int, learning_rate: float, softness: float,
             features: Features = PAPER) -> tuple[jax.Array, jax.Array]:
    """Fit the parameters of ``spec`` to measured rows (see :func:`kernels.fit.fit`)."""
    return fit.fit(starts, rows, target, weights, spec=spec, measured=measured, steps=steps,
                   learning_rate=learning_rate, softness=softness, features=features)


@functools.partial(jax.jit, static_argnames=("spec", "features"))
def predict_rows(params: jax.Array, rows: fit.Rows, *, spec: fit.FitSpec, features: Features = PAPER) -> Metrics:
    """Exact-model predictions of every row under ``params`` (see :func:`kernels.fit.predict`)."""
    return fit.predict(params, rows, spec=spec, softness=None, features=features)


@functools.partial(jax.jit, static_argnames=("spec", "measured", "features"))
def residual_jacobian(params: jax.Array, rows: fit.Rows, target: jax.Array, *, spec: fit.FitSpec, measured: str,
                      features: Features = PAPER) -> jax.Array:
    """d residuals / d params [R, P] at ``params`` (exact model), for uncertainties."""
    return jax.jacfwd(lambda p: fit.residuals(p, rows, target, spec=spec, measured=measured, softness=None,
                                              features=features))(params)


# --- layout sweeps (kernels.layout): a block is R outer cells by C layouts, gathered on the device ---

# The columns of the GPU table (sweep.engine.layouts builds it from sweep.model.compute.GPUS).
GPU_FIELDS = ("half", "fp8", "hbm", "memory", "nvlink", "domain", "gpus_per_node", "nics", "nic_bits")


def _unravel(flat: jax.Array, sizes: tuple[int, ...]) -> list[jax.Array]:
    out = []
    for size in reversed(sizes):
        out.append(flat % size)
        flat = flat // size
    return out[::-1]


def _gather(outer_start, inner_start, values, tables, *, rows, cols, outer_sizes, inner_sizes, dtype):
    """(Arch, Device, Layout) of a block: rows outer cells [R, 1] by cols layouts [1, C]."""
    total_outer = math.prod(outer_sizes)
    total_inner = math.prod(inner_sizes)
    o = jnp.minimum(outer_start + jnp.arange(rows, dtype=jnp.int32), total_outer - 1)[:, None]
    i = jnp.minimum(inner_start + jnp.arange(cols, dtype=jnp.int32), total_inner - 1)[None, :]
    idx = dict(zip(LAYOUT_OUTER, _unravel(o, outer_sizes))) | dict(zip(LAYOUT_INNER, _unravel(i, inner_sizes)))
    v = {d: values[d].astype(dtype)[idx[d]] for d in LAYOUT_DIMS}
    arch_row = tables["arch"].astype(dtype)[idx["model"][..., 0]]
    arch = layout_kernel.Arch(*(arch_row[..., j][..., None] for j in range(len(layout_kernel.Arch._fields))))
    gpu = tables["gpu"].astype(dtype)[idx["gpu"][..., 0]][:, None, :]
    g = dict(zip(GPU_FIELDS, (gpu[..., j] for j in range(len(GPU_FIELDS)))))
    prec = tables["precision"].astype(dtype)[idx["precision"][..., 0]][:, None, :]
    peak = jnp.where(prec[..., 3] > 0, g["fp8"], g["half"])
    dev = layout_kernel.Device(peak=peak, hbm=g["hbm"], memory=g["memory"], param_bytes=prec[..., 0],
                        grad_bytes=prec[..., 1], act_bytes=prec[..., 2])

    def system(name, own):
        return jnp.where(v[name] > 0, v[name], own)

    gpus = v["gpus"]
    model_parallel = v["tp"] * v["pp"] * v["cp"]
    n = jnp.where(v["dp"] > 0, v["dp"] * model_parallel, gpus)
    log_n = jnp.log2(jnp.maximum(n, 1.0))
    e_n = jnp.interp(log_n, tables["log_n"].astype(dtype), tables["e_n"].astype(dtype))
    lay = layout_kernel.Layout(
        gpus=gpus, tp=v["tp"], pp=v["pp"], cp=v["cp"], ep=v["ep"], dp=v["dp"], micro_batch=v["micro_batch"],
        global_batch=v["global_batch"], chunks=v["schedule"], recompute=v["recompute"],
        sequence_parallel=v["sequence_parallel"], zero=v["zero"], flash=v["attention"],
        nvlink_domain=system("nvlink_domain", g["domain"]), nvlink_bw=system("nvlink_bw", g["nvlink"]),
        gpus_per_node=system("gpus_per_node", g["gpus_per_node"]), nics_per_node=system("nics_per_node", g["nics"]),
        bandwidth=system("bandwidth", g["nic_bits"]), utilization=v["utilization"], latency=v["latency"],
        collective=v["collective"], efficiency=v["efficiency"], overhead=v["overhead"], slowdown=v["slowdown"],
        straggle=v["jitter"] * e_n, imbalance=v["imbalance"])
    return arch, dev, lay


@functools.partial(jax.jit, static_argnames=("rows", "cols", "outer_sizes", "inner_sizes", "dtype", "variables"))
def layout_block_outputs(outer_start, inner_start, values, tables, *, rows, cols, outer_sizes, inner_sizes, dtype,
                  variables):
    """Every kept output of one block: dict name -> [rows, cols]."""
    arch, dev, lay = _gather(outer_start, inner_start, values, tables, rows=rows, cols=cols,
                             outer_sizes=outer_sizes, inner_sizes=inner_sizes, dtype=dtype)
    out = layout_kernel.step(arch, dev, lay)
    return {name: out[name] for name in variables}


@functools.partial(jax.jit, static_argnames=("rows", "cols", "outer_sizes", "inner_sizes", "dtype", "keep"))
def layout_block_best(outer_start, inner_start, values, tables, *, rows, cols, outer_sizes, inner_sizes, dtype, keep):
    """The ``keep`` fastest feasible layouts of each outer cell in one block: (score [R, K], column [R, K],
    outputs at them {name: [R, K]}). Score: tokens per second, -inf where the layout cannot exist or
    does not fit in memory."""
    arch, dev, lay = _gather(outer_start, inner_start, values, tables, rows=rows, cols=cols,
                             outer_sizes=outer_sizes, inner_sizes=inner_sizes, dtype=dtype)
    out = layout_kernel.step(arch, dev, lay)
    col = inner_start + jnp.arange(cols, dtype=jnp.int32)[None, :]
    feasible = (out["status"] == 0) & (out["fits"] > 0) & (col < math.prod(inner_sizes))
    score = jnp.where(feasible, out["tokens_per_s"], -jnp.inf)
    best, where = jax.lax.top_k(score, keep)
    picked = {name: jnp.take_along_axis(jnp.broadcast_to(val, score.shape), where, axis=1)
              for name, val in out.items()}
    return best, where + inner_start, picked
