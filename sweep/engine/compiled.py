"""The one module that calls ``jax.jit``: fixed-shape entry points around the kernels.

Every argument that varies within a sweep, a query or a fit is a traced array;
only structural choices are static (which kernel, which axis is solved, which
parameters are fitted). Shapes are fixed per sweep (padded blocks, buckets padded
to the sweep's maximum), so a sweep compiles once per dtype, and a second sweep or
fit of the same shapes compiles nothing.
"""

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from netsweep_jax.kernels import fit, nccl
from netsweep_jax.kernels import layout as layout_kernel
from netsweep_jax.kernels.bisect import boundary
from netsweep_jax.kernels.layout_inputs import degrees
from netsweep_jax.kernels.overlap import METRICS, PAPER, Buckets, Config, Features, Workers, on_grid, on_table
from netsweep_jax.sweep.core.layout_axes import BREAKDOWN as LAYOUT_BREAKDOWN
from netsweep_jax.sweep.core.layout_axes import PARALLEL_DIMS, SETTING_DIMS
from netsweep_jax.sweep.core.layout_axes import VARIABLES as LAYOUT_VARIABLES
from netsweep_jax.sweep.core.schema import INNER, VARIABLES
from netsweep_jax.sweep.core.sweep_settings import COLUMNS as SWEEP_COLUMNS
from netsweep_jax.sweep.engine.reductions import CODES, FITS, DeviceReduction, kind_of
from netsweep_jax.sweep.model.compute import host_system
from netsweep_jax.sweep.model.fabric_constants import MIB

# The kernels keep their own names (they cannot import the schema); they must be the schema's.
if METRICS != tuple(VARIABLES) or Config._fields != INNER:
    raise ImportError(
        "kernels.overlap's METRICS or Config fields differ from sweep.core.schema's VARIABLES or INNER"
    )

Metrics = dict[str, jax.Array]

# The large-model layout kernel and NCCL's tuner compile with XLA's CPU fusion emitters off (its older loop
# emitter). On a 2-core Xeon (benchmarks/bench_layouts.py, 2026-12-04) a plan's first search took 3.86 s instead
# of 5.00 flat and 6.08 s instead of 8.17 with NCCL's pricing, the search rate unchanged within the spread (5.39e6
# against 5.35e6 layouts/s flat, 1.26e6 against 1.33e6 NCCL-priced); only the whole grid kept in memory ran
# slower (2.56e6 against 3.64e6 layouts/s flat), which the compile saved repays for grids under about 10 million
# layouts. A field of XLA's debug options that only the CPU compiler reads (not yet run on a GPU:
# benchmarks/gpu_check.sh would show it). The data-parallel family keeps XLA's default, with which its committed
# reports were made (its floats move in the last bit without it).
LAYOUT_COMPILE = {"xla_cpu_use_fusion_emitters": False}
layout_jit = functools.partial(jax.jit, compiler_options=LAYOUT_COMPILE)


@functools.partial(jax.jit, static_argnames=("kernel", "zero_latency", "features"))
def grid_metrics(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    *,
    kernel: str = "xla",
    zero_latency: bool = False,
    features: Features = PAPER,
) -> Metrics:
    """Every metric of config [C] x workers [K] (see :func:`kernels.overlap.on_grid`): dict of [K, C], in the
    compute dtype.

    ``kernel``: ``xla`` (the scan), ``pallas`` or ``pallas-interpret``;
    ``zero_latency``: a promise that every latency is 0 (Pallas skips an add; the XLA scan ignores it);
    ``features``: the model terms the sweep uses (:class:`kernels.overlap.Features`).

    All of them, whichever a sweep keeps: one compile of the kernel serves every ``--vars``, ``--store`` and
    ``--reduce`` of the block's shapes (a compile of the scan takes seconds). What a sweep does with them is a
    second, small compiled function of one output (:func:`stored`, :func:`reduced_outputs`). The cost: every
    output is materialized on the device, kept or not (:data:`sweep.engine.dispatch.DEVICE_BYTES_PER_CONFIG`
    counts all of them); only the kept ones are copied back.
    """
    if kernel == "xla":
        return on_grid(config, workers, buckets, t1, None, features)
    from netsweep_jax.kernels.pallas_overlap import on_grid_pallas  # only where asked for (heavy)

    return on_grid_pallas(
        config,
        workers,
        buckets,
        t1,
        features=features,
        interpret=kernel == "pallas-interpret",
        zero_latency=zero_latency,
    )


@functools.partial(jax.jit, static_argnames=("store",))
def stored(value: jax.Array, *, store: str) -> jax.Array:
    """One output cast to the store dtype ``store`` (a dtype name) on the device, so that only what is kept,
    in the dtype it is kept in, is copied back. One compile per shape and pair of dtypes, whichever output."""
    return value.astype(store)


def reduced_outputs(out: Metrics, reduce: DeviceReduction, *, skip_nan: bool = False) -> Metrics:
    """Each output [kb_width, ci_width] reduced on the device as ``reduce`` says: ``name`` and, for max and min,
    ``name@index`` (:func:`device_reduce`). ``skip_nan``: a NaN (a layout that cannot
    exist) is never an extreme, and a cell with nothing else is NaN (a mean over NaN stays NaN). Each output is
    its own call of :func:`reduced_output` (inside a compiled function, part of it)."""
    reduced = {}
    for name, v in out.items():
        # a layout's status and fits are codes (kind_of)
        plan = reduce._replace(kind=kind_of(name, reduce.kind))
        reduced[name], index = reduced_output(v, reduce=plan, skip_nan=skip_nan)
        if index is not None:
            reduced[f"{name}@index"] = index
    return reduced


def device_reduce(values: jax.Array, axes: tuple[int, ...], kind: str) -> tuple[jax.Array, jax.Array | None]:
    """Reduce a block tensor over ``axes`` on the device: (values, flat index of the extreme over them or None).

    ``values`` [rows, *trailing]; the flat index counts the reduced axes jointly in C order.
    """
    if not axes:
        return values, None
    keep = [a for a in range(values.ndim) if a not in axes]
    moved = jnp.transpose(values, keep + list(axes))
    flat = moved.reshape(moved.shape[: len(keep)] + (-1,))
    if kind == "mean":
        return jnp.mean(flat, axis=-1), None
    index = jnp.argmax(flat, axis=-1) if kind == "max" else jnp.argmin(flat, axis=-1)
    return jnp.take_along_axis(flat, index[..., None], axis=-1)[..., 0], index.astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("reduce", "skip_nan"))
def reduced_output(
    v: jax.Array, *, reduce: DeviceReduction, skip_nan: bool = False
) -> tuple[jax.Array, jax.Array | None]:
    """One output reduced as :func:`reduced_outputs` says: (value, flat index of the extreme or None). One
    compile per shape, dtype and reduction, whichever output."""
    (kb, ci), kind = reduce.lanes, reduce.kind
    value = v[:kb, :ci].reshape(reduce.shape)
    nan_aware = skip_nan and kind != "mean" and value.dtype.kind == "f"
    if nan_aware:
        value = jnp.where(jnp.isnan(value), -jnp.inf if kind == "max" else jnp.inf, value)
    value, index = device_reduce(value, reduce.axes, kind)
    if nan_aware:
        value = jnp.where(jnp.isinf(value), jnp.nan, value)  # no layout of the cell can exist
    return value, index


@functools.partial(jax.jit, static_argnames=("features",))
def table_metrics(
    config: Config, workers: Workers, buckets: Buckets, t1: jax.Array, *, features: Features = PAPER
) -> Metrics:
    """Metrics of config [K, C] (a configuration per cell) under workers [K]: dict of [K, C]."""
    return on_table(config, workers, buckets, t1, None, features)


def solve_on_grid(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: ArrayLike,
    target: ArrayLike,
    low: ArrayLike,
    high: ArrayLike,
    *,
    axis: str,
    iterations: int = 40,
    features: Features = PAPER,
    increasing: bool = True,
    scan: int = 0,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The boundary value of Config field ``axis`` in [low, high] where the scaling factor reaches ``target``.

    The smallest value reaching it when the scaling factor grows with ``axis``
    (``increasing``), the largest when it falls. Args as :func:`grid_metrics` (the
    ``axis`` field of ``config`` is ignored); returns (value, status, scaling factor at ``low``, at ``high``),
    each [K, C], as
    :func:`kernels.bisect.boundary` (``scan``: its points scanned first, where the metric is not monotone). The field solved is an array (:func:`solve_on_fields`): solves of
    any axis with the same shapes, features and direction share one compile.
    """
    field = jnp.asarray(Config._fields.index(axis), jnp.int32)
    return solve_on_fields(
        config,
        workers,
        buckets,
        t1,
        target,
        low,
        high,
        field,
        iterations=iterations,
        features=features,
        increasing=increasing,
        scan=scan,
    )


@functools.partial(jax.jit, static_argnames=("iterations", "features", "increasing", "scan"))
def solve_on_fields(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    target: jax.Array,
    low: jax.Array,
    high: jax.Array,
    field: jax.Array,
    *,
    iterations: int = 40,
    features: Features = PAPER,
    increasing: bool = True,
    scan: int = 0,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """:func:`solve_on_grid` of the Config field at index ``field`` (int32 scalar): every field is a select
    between the bisected value and the sweep's (exact: the kernel sees the same numbers)."""
    shape = (workers.messages.shape[0], config.bandwidth.shape[0])
    cells = Config(*(jnp.broadcast_to(v[None, :], shape) for v in config))

    def scaling(x: jax.Array) -> jax.Array:
        solved = Config(*(jnp.where(field == i, x, v) for i, v in enumerate(cells)))
        return on_table(solved, workers, buckets, t1, None, features)["scaling_factor"]

    return boundary(scaling, target, low, high, shape, config.bandwidth.dtype, iterations, increasing, scan)


@functools.partial(jax.jit, static_argnames=("spec", "measured", "steps", "features", "restarts"))
def fit_rows(
    starts: jax.Array,
    rows: fit.Rows,
    target: jax.Array,
    weights: jax.Array,
    *,
    spec: fit.FitSpec,
    measured: str,
    steps: int,
    learning_rate: float,
    softness: float,
    features: Features = PAPER,
    restarts: int = 1,
) -> tuple[jax.Array, jax.Array]:
    """Fit the parameters of ``spec`` to measured rows (see :func:`kernels.fit.fit`)."""
    return fit.fit(
        starts,
        rows,
        target,
        weights,
        spec=spec,
        measured=measured,
        steps=steps,
        learning_rate=learning_rate,
        softness=softness,
        features=features,
        restarts=restarts,
    )


@functools.partial(jax.jit, static_argnames=("spec", "features"))
def predict_rows(
    params: jax.Array, rows: fit.Rows, *, spec: fit.FitSpec, features: Features = PAPER
) -> Metrics:
    """Exact-model predictions of every row under ``params`` (see :func:`kernels.fit.predict`)."""
    return fit.predict(params, rows, spec=spec, softness=None, features=features)


@functools.partial(jax.jit, static_argnames=("spec", "measured", "features"))
def residual_jacobian(
    params: jax.Array,
    rows: fit.Rows,
    target: jax.Array,
    *,
    spec: fit.FitSpec,
    measured: str,
    features: Features = PAPER,
) -> jax.Array:
    """d residuals / d params [R, P] at ``params`` (exact model), for uncertainties."""
    return jax.jacfwd(
        lambda p: fit.residuals(
            p, rows, target, spec=spec, measured=measured, softness=None, features=features
        )
    )(params)


# --- layout sweeps (kernels.layout): a block is R outer cells by C layouts, gathered on the device ---

if layout_kernel.OUTPUTS != tuple(LAYOUT_VARIABLES) or layout_kernel.BREAKDOWN != LAYOUT_BREAKDOWN:
    raise ImportError(
        "kernels.layout's OUTPUTS or BREAKDOWN differ from sweep.core.layout_axes' VARIABLES or BREAKDOWN"
    )

# A block's inputs are two small tables built on the host (sweep.engine.layouts): one row per outer cell
# (its dims, its model's shape, its GPU and precision, its e_N) and one row per layout (its dims, its e_N
# when dp is set); the device crosses them. No gather: the compiled block is the kernel and little else.
# The GPU table's columns: the preset's, then the sweep's per-sweep settings: usable fraction of its memory, GEMM
# latency, memory efficiency (the kernel's ``hbm`` is the preset's times it: the rate memory-bound work
# achieves), Adam moments, MoE capacity and padding (they set the busiest expert's load: busiest_expert), the
# overlap switches, the flash-attention kernel's efficiency and the MoE dispatch's fp8; last the fabric's
# constants NCCL's pricing reads (``--collective nccl``: the shipped fit or ``--fabric FILE``'s) and its tier above
# the hosts (a ``--fabric`` preset's hosts a leaf, ``--oversubscription``, its SHARP and rail-only wiring), columns
# rather than compiled constants,
# so that every fabric shares one compile.
GPU_FIELDS = (
    "half",
    "fp8",
    "hbm",
    "memory",
    "nvlink",
    "domain",
    "preset_gpus_per_node",  # the preset's: the setting of that name, 0 where not given, follows it
    "nics",
    "nic_bits",
    "nccl_arch",  # kernels.nccl's architecture index of the preset's chip
    *SWEEP_COLUMNS,  # the settings of one value per sweep (sweep.core.sweep_settings), by their names
    "nccl_eta_net",
    "nccl_eta_nvl",
    "nccl_latency",  # us, as kernels.nccl.Constants
    "nccl_op_latency",  # us, as kernels.nccl.Constants: o, f and X_f (the fill's message, bytes)
    "nccl_fill",
    "nccl_fill_bytes",
    "leaf_hosts",  # the fabric's hosts under one leaf (0: no tier above the hosts)
    "oversubscription",  # the spine's (--oversubscription; 1: non-blocking)
    "sharp",  # 1: in-network reduction on (NCCL's CollNet: a fabric preset's -sharp variant)
    "rail_only",  # 1: rail-only wiring (no spine; off-rail bytes forwarded over NVLink first)
)
PRECISION_FIELDS = ("param_bytes", "precision_grad_bytes", "act_bytes", "gemm_input_bytes", "fp8_math")
OUTER_COLUMNS = (*SETTING_DIMS, *layout_kernel.Arch._fields, *GPU_FIELDS, *PRECISION_FIELDS, "e_n")
INNER_COLUMNS = (*PARALLEL_DIMS, "e_n")
if len(set(OUTER_COLUMNS)) != len(OUTER_COLUMNS):  # a name twice: the later column would hide the first
    raise ImportError("sweep.engine.compiled: OUTER_COLUMNS names a column twice")


def _crossed(
    outer: jax.Array, inner: jax.Array, collectives: int = 0
) -> tuple[layout_kernel.Arch, layout_kernel.Device, layout_kernel.Parallelism]:
    """(Arch, Device, Parallelism) of R outer cells [R, 1] by C layouts [1, C] from their tables [R, .], [C, .]."""
    o = {name: outer[:, k][:, None] for k, name in enumerate(OUTER_COLUMNS)}
    i = {name: inner[:, k][None, :] for k, name in enumerate(INNER_COLUMNS)}
    return layout_inputs(o, i, collectives)


def busiest_expert(imbalance: jax.Array, capacity: jax.Array, pad: jax.Array, ep: jax.Array) -> jax.Array:
    """The load the busiest GPU of an EP group runs, its tokens over the mean: the busiest expert's ``imbalance``;
    with a capacity factor (> 0) the tokens beyond it dropped, min(imbalance, capacity), or with padding to it
    (``pad``) the capacity, which every expert then runs (Megatron-Core's --moe-expert-capacity-factor and
    --moe-pad-expert-input-to-capacity). At ``ep`` 1 every GPU holds every expert and runs all the routed
    tokens whatever their spread: 1, or the capacity where padded (a hunt: the imbalance had paced it too)."""
    loaded = jnp.where(
        capacity > 0, jnp.where(pad > 0, capacity, jnp.minimum(imbalance, capacity)), imbalance
    )
    return jnp.where(ep > 1, loaded, jnp.where((capacity > 0) & (pad > 0), capacity, 1.0))


def layout_inputs(
    o: Mapping[str, jax.Array], i: Mapping[str, jax.Array], collectives: int = 0
) -> tuple[layout_kernel.Arch, layout_kernel.Device, layout_kernel.Parallelism]:
    """The kernel's inputs from a setting cell's columns ``o`` (:data:`OUTER_COLUMNS`: SI values, 0 for a system
    setting that follows the GPU's preset) and a layout's ``i`` (:data:`INNER_COLUMNS`), broadcastable arrays:
    the one place the fp8 peak is chosen, a precision's gradient bytes defaulted and "0 = the GPU's system"
    resolved, for a block's crossed tables (on the device) and for measured runs' rows alike. ``collectives``:
    the sweep's pricing of collectives (0 flat, 1 nccl: kernels.layout_collectives), a Python int, so that a
    compile holds only the one it uses."""
    v = {**o, **{d: i[d] for d in PARALLEL_DIMS}}
    arch = layout_kernel.Arch(*(o[f] for f in layout_kernel.Arch._fields))
    # The fields computed here; every other field of the kernel's records is the column of its own name (a layout
    # dim, a per-sweep setting or a fabric column: a new setting named as its kernel field needs no line here).
    dev = _record(
        layout_kernel.Device,
        o,
        peak=jnp.where(o["fp8_math"] > 0, o["fp8"], o["half"]),  # the precision's fp8 flag: the fp8 peak
        hbm=o["hbm"] * o["memory_efficiency"],  # the rate memory-bound work achieves
        grad_bytes=jnp.where(o["grad_bytes"] > 0, o["grad_bytes"], o["precision_grad_bytes"]),
        usable=o["usable_memory"],
        half_peak=o["half"],
    )

    def system(name: str, own: str) -> jax.Array:
        return jnp.where(v[name] > 0, v[name], o[own])

    e_n = jnp.where(i["dp"] > 0, i["e_n"], o["e_n"])
    gpus_per_node = system("gpus_per_node", "preset_gpus_per_node")
    domain, nics = host_system(o["domain"], o["preset_gpus_per_node"], o["nics"], gpus_per_node, jnp)
    lay = _record(
        layout_kernel.Parallelism,
        v,
        nvlink_domain=jnp.where(v["nvlink_domain"] > 0, v["nvlink_domain"], domain),
        nvlink_bw=system("nvlink_bw", "nvlink"),
        gpus_per_node=gpus_per_node,
        nics_per_node=jnp.where(v["nics_per_node"] > 0, v["nics_per_node"], nics),
        bandwidth=system("bandwidth", "nic_bits"),
        straggle=v["jitter"] * e_n,
        imbalance=busiest_expert(v["imbalance"], o["capacity_factor"], o["pad_to_capacity"], v["ep"]),
        eta_net=o["nccl_eta_net"],
        eta_nvl=o["nccl_eta_nvl"],
        collectives=collectives,
    )
    return arch, dev, lay


def _record(kind: Any, columns: Mapping[str, Any], **computed: Any) -> Any:
    """A kernel input record of type ``kind`` (a NamedTuple of :mod:`kernels.layout_inputs`): the ``computed``
    fields, and every other field the column of its own name."""
    assert set(computed) <= set(kind._fields)  # a misspelled field is never a silent copy
    return kind(**{f: computed[f] if f in computed else columns[f] for f in kind._fields})


@functools.partial(layout_jit, static_argnames=("collectives",))
def layout_block_outputs(outer: jax.Array, inner: jax.Array, collectives: int = 0) -> Metrics:
    """Every output of one block of outer cells [R, .] by layouts [C, .]: dict name -> [R, C]. All of them,
    whichever a sweep keeps, in the compute dtype: one compiled function serves every sweep of the block's
    shape (a compile of the layout kernel takes seconds; copying the unkept outputs back costs far less).
    A ``--reduce`` is a second, small compiled function on these outputs (:func:`layout_block_reduced`), so
    every reduction of a block shape shares this one compile of the kernel. ``collectives`` (static, one per
    sweep): 0 flat, 1 NCCL's pricing (kernels.layout_collectives), a compile of its own only where a sweep
    asks for it."""
    return _block_step(outer, inner, collectives)


def _block_step(outer: jax.Array, inner: jax.Array, collectives: int) -> Metrics:
    shape = (outer.shape[0], inner.shape[0])
    return {
        name: jnp.broadcast_to(v, shape)
        for name, v in layout_kernel.step(*_crossed(outer, inner, collectives)).items()
    }


@functools.partial(layout_jit, static_argnames=("reduce",))
def layout_block_reduced(out: Metrics, *, reduce: DeviceReduction) -> Metrics:
    """A block's outputs {name: [R, C]} (:func:`layout_block_outputs`) reduced as :func:`grid_metrics`
    reduces. A max or min is over the layouts that run, as ``sweep plan`` searches them: one that cannot exist
    (its outputs NaN, its status not 0) or does not fit in memory (``fits`` 0) is never an extreme of any
    output but the codes (:func:`~sweep.engine.reductions.kind_of`); an argmax over tp and pp named a faster
    layout that could not run (a hunt). A mean is over every layout (NaN where one cannot exist)."""
    if reduce.kind != "mean":
        runs = out[FITS] == 1
        out = {
            name: v if name in CODES or v.dtype.kind != "f" else jnp.where(runs, v, jnp.nan)
            for name, v in out.items()
        }
    return reduced_outputs(dict(out), reduce, skip_nan=True)


@functools.partial(layout_jit, static_argnames=("keep", "collectives"))
def layout_block_best(
    outer: jax.Array, inner: jax.Array, real: jax.Array, *, keep: int, collectives: int = 0
) -> tuple[jax.Array, jax.Array, Metrics]:
    """The ``keep`` fastest feasible layouts of each outer cell of one block: (score [R, K], column [R, K],
    outputs at them {name: [R, K]}). Score: tokens per second, -inf where the layout cannot exist, does not
    fit in memory, or is padding (``real`` [C]: 1 for a layout of the sweep).

    The kernel and the search in one compiled function, not a search over :func:`layout_block_outputs`: XLA
    then computes only the score's outputs for every layout and the others at the K picked ones (a search
    over every output materialized ran 30-45% slower, benchmarks/README.md, 2026-12-03)."""
    out = _block_step(outer, inner, collectives)
    feasible = (out["status"] == 0) & (out["fits"] > 0) & (real[None, :] > 0)
    score = jnp.where(feasible, out["tokens_per_s"], -jnp.inf)
    best, where = jax.lax.top_k(score, keep)
    picked = {name: jnp.take_along_axis(val, where, axis=1) for name, val in out.items()}
    return best, where, picked


@functools.partial(layout_jit, static_argnames=("collectives",))
def layout_rows(
    arch: layout_kernel.Arch, dev: layout_kernel.Device, lay: layout_kernel.Parallelism, collectives: int = 0
) -> Metrics:
    """:func:`kernels.layout.step` on arrays of one shape (one configuration per element): measured runs,
    each with its own layout, and fits that try many constants per run at once. ``collectives`` (static: 0
    flat, 1 nccl) replaces ``lay.collectives``, so that a compile holds only the pricing it uses."""
    return layout_kernel.step(arch, dev, lay._replace(collectives=collectives))


@layout_jit
def layout_rows_status(o: Mapping[str, jax.Array], i: Mapping[str, jax.Array]) -> jax.Array:
    """Only the rules a layout must meet to exist (:func:`kernels.layout_inputs.degrees`' status, the kernel's
    ``status`` output) for rows of setting and layout columns as :func:`layout_inputs` takes them: a compile of
    a few dozen comparisons, where the whole kernel's takes seconds (a runs file is checked as it is read)."""
    arch, _, lay = layout_inputs(o, i)
    return degrees(arch, lay).status


# --- the layout model's constants fitted to measured runs (sweep.analysis.llm_fit), by kernels.fit's fitter ---

# A measured run's metric from the layout kernel's outputs (its code in ``metric``): the model FLOP/s per GPU the
# kernel counts, the iteration time, or a count per step (``count``: tokens, or TFLOP as the run's source counts
# them, per GPU) over the iteration time.
LAYOUT_RUN_METRICS = ("tflops_per_gpu", "iteration_time", "count_per_s")


def layout_run_metrics(
    values: jax.Array,
    cell: Mapping[str, jax.Array],
    layout: Mapping[str, jax.Array],
    die: jax.Array,
    metric: jax.Array,
    count: jax.Array,
) -> jax.Array:
    """[R] measured runs' metrics under the layout model's fitted constants ``values`` [P]: ``values[0]`` the NIC
    utilization (1), ``values[1]`` the memory efficiency (1), ``values[2 + d]`` the matrix efficiency (1) of
    GPU die d. Not jitted: the model :func:`fit_layout_runs` fits.

    Args:
      cell: each run's setting-cell columns (:data:`OUTER_COLUMNS`, SI, 0 for a system setting that follows the
        GPU's preset): name -> [R]; ``efficiency``, ``utilization`` and ``memory_efficiency`` are replaced by
        the constants.
      layout: each run's layout columns (:data:`INNER_COLUMNS`): name -> [R].
      die: [R] int, the die whose efficiency each run uses; metric: [R] int, an index into
        :data:`LAYOUT_RUN_METRICS`; count: [R] what ``count_per_s`` divides by the iteration time (tokens, or
        TFLOP, per GPU and step), else 0.
    """
    cell = {
        **cell,
        "efficiency": values[2 + die],
        "utilization": jnp.broadcast_to(values[0], die.shape),
        "memory_efficiency": jnp.broadcast_to(values[1], die.shape),
    }
    out = layout_kernel.step(*layout_inputs(cell, layout))
    time = out["iteration_time"]
    per_step = jnp.where(
        metric == LAYOUT_RUN_METRICS.index("count_per_s"), count / time, out["tflops_per_gpu"]
    )
    return jnp.where(metric == LAYOUT_RUN_METRICS.index("iteration_time"), time, per_step)


@functools.partial(layout_jit, static_argnames=("steps",))
def fit_layout_runs(
    starts: jax.Array,
    cell: Mapping[str, jax.Array],
    layout: Mapping[str, jax.Array],
    die: jax.Array,
    metric: jax.Array,
    count: jax.Array,
    target: jax.Array,
    weights: jax.Array,
    lows: jax.Array,
    highs: jax.Array,
    *,
    steps: int,
    learning_rate: float,
) -> tuple[jax.Array, jax.Array]:
    """The layout model's constants (as :func:`layout_run_metrics`) fitted to measured metrics ``target`` [R] by
    least squares on log(predicted / measured) over the rows of nonzero ``weights`` [R]: :func:`kernels.fit.
    fit_model` from ``starts`` [S, P] (unconstrained) within ``lows``, ``highs`` [P] (equal: held there),
    ``steps`` Adam steps. Returns ([P] unconstrained parameters, scalar exact loss). The layout kernel has no
    max to smooth: the descent follows the exact model."""
    return _fitted_on_log_ratio(
        lambda values: layout_run_metrics(values, cell, layout, die, metric, count),
        starts,
        target,
        weights,
        lows,
        highs,
        steps=steps,
        learning_rate=learning_rate,
    )


def _fitted_on_log_ratio(
    model: Callable[[jax.Array], jax.Array],
    starts: jax.Array,
    target: jax.Array,
    weights: jax.Array,
    lows: jax.Array,
    highs: jax.Array,
    *,
    steps: int,
    learning_rate: float,
) -> tuple[jax.Array, jax.Array]:
    """:func:`kernels.fit.fit_model` of ``model`` (parameters [P] -> predictions [R], exact: no max to smooth)
    by least squares on log(predicted / measured), inside the caller's compiled function."""
    return fit.fit_model(
        lambda values, smooth: model(values),
        starts,
        target,
        weights,
        lows=lows,
        highs=highs,
        residual="log",
        steps=steps,
        learning_rate=learning_rate,
    )


def nccl_busbw(values: jax.Array, rows: Mapping[str, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """nccl-tests' busbw (GB/s) [R] of measured rows under the fabric constants ``values`` [6] (eta_net,
    eta_nvl, latency in us, op latency in us, fill in us, the fill's message in MiB:
    :data:`sweep.model.nccl_fabric.NAMES`), with the algorithm and protocol NCCL runs [R] (:mod:`kernels.nccl`). ``rows``:
    ``coll``, ``bytes``, ``gpus_per_node``, ``nodes``, ``domain``, ``nvlink`` (datasheet bytes/s), ``nics``,
    ``nic_gbps``, ``arch``, ``nvswitch``, ``collnet``, ``algorithm``, ``protocol``, each [R], and optionally
    ``net_latency`` [R] (us), the network plugin's reported latency, which NCCL adds to the graph's latency
    across nodes as the latency ``values[2]`` enters (:mod:`sweep.model.nccl_fabric`)."""
    fabric = nccl.Fabric(
        rows["gpus_per_node"],
        rows["nodes"],
        rows["domain"],
        nccl.nvlink_gbs(rows["nvlink"], rows["arch"]),
        rows["nics"],
        rows["nic_gbps"] / 8.0,
        rows["arch"],
        rows["nvswitch"],
        rows["collnet"],
    )
    eta_net, eta_nvl, latency = values[0], values[1], values[2]
    if "net_latency" in rows:
        latency = latency + rows["net_latency"]
    t = nccl.collective(
        rows["coll"],
        rows["bytes"],
        fabric,
        nccl.Constants(eta_net, eta_nvl, latency, values[3], values[4], values[5] * MIB),
        rows["algorithm"],
        rows["protocol"],
    )
    ranks = rows["gpus_per_node"] * rows["nodes"]
    busbw = rows["bytes"] / t.seconds / 1e9 * nccl.bus_factor(rows["coll"], ranks)
    return busbw, t.algorithm, t.protocol


nccl_predict = layout_jit(nccl_busbw)


@functools.partial(layout_jit, static_argnames=("steps",))
def fit_nccl(
    starts: jax.Array,
    rows: Mapping[str, jax.Array],
    target: jax.Array,
    weights: jax.Array,
    lows: jax.Array,
    highs: jax.Array,
    *,
    steps: int,
    learning_rate: float,
) -> tuple[jax.Array, jax.Array]:
    """The fabric constants (as :func:`nccl_busbw`) fitted to measured busbw ``target`` [R] by least squares on
    log(predicted / measured) over the rows of nonzero ``weights`` [R] (:func:`kernels.fit.fit_model` from
    ``starts`` [S, 6] within ``lows``, ``highs`` [6], ``steps`` Adam steps). Returns ([6] unconstrained
    parameters, scalar exact loss). Nothing to smooth: the choice of algorithm is NCCL's, on its own model."""
    return _fitted_on_log_ratio(
        lambda values: nccl_busbw(values, rows)[0],
        starts,
        target,
        weights,
        lows,
        highs,
        steps=steps,
        learning_rate=learning_rate,
    )
