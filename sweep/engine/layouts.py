"""Layout sweeps: large transformers over TP x PP x CP x EP x DP layouts and networks, evaluated in blocks.

A :class:`LayoutGrid` is the outer product of its dims (:mod:`sweep.core.layout_axes`),
in two groups: the *outer* dims (what is trained and what it runs on: model, GPU,
GPU count, network, ...) and the *layout* dims (dp, tp, pp, cp, ep, micro-batch,
schedule, recompute, sequence parallelism, ZeRO), the ones ``sweep plan`` searches.
A block is ``R`` outer cells by ``C`` layouts: the host hands the device one small
table of the cells (their dims, model shape, GPU, precision) and one of the layouts
(their dims), and the device crosses them, so the work per block on the host grows
with R + C while the device's grows with R x C. Blocks have power-of-two shapes (at
least 8 x 1,024), so a sweep compiles once and sweeps of similar sizes share it.

Values stored as 0 in ``gpus`` / ``dp`` mean "derived" (gpus = tp pp cp dp, or
dp = gpus / (tp pp cp)); 0 in ``nvlink_domain``, ``nvlink_bw``, ``gpus_per_node``,
``nics_per_node`` or ``bandwidth`` means "the GPU preset's system" (resolved per
cell, so a sweep over GPUs gets each one's own links), as the ``assumed`` line says.
"""

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import (
    ATTENTIONS,
    AXES,
    DIMS,
    INNER,
    LAYOUT_COLLECTIVES,
    LAYOUT_PRECISIONS,
    OUTER,
    OVERLAP_DEFAULT,
    OVERLAP_HELP,
    PER_SWEEP,
    RECOMPUTE_HELP,
    SYSTEM_DIMS,
    VARIABLES,
    coordinate_attrs,
    overlap_code,
    overlap_mode,
    recompute_code,
    recompute_mode,
)
from netsweep_jax.sweep.core.schema import option_of, show
from netsweep_jax.sweep.core.values import parse_names, parse_values, whole_number
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS, layout_block_best, layout_block_outputs
from netsweep_jax.sweep.engine.compiled import layout_rows as layout_block_rows
from netsweep_jax.sweep.model.collectives import expected_max_normal
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS
from netsweep_jax.sweep.model.llms import LLM, LLMS, parse_arch, resolve_llm

BLOCK_CONFIGS = 2**18  # configurations per block on a CPU
MAX_COLUMNS = 2**16
# Sweeps of up to 8192 layouts share one block shape, and its compile (seconds for the layout kernel);
# the padding costs milliseconds.
MIN_COLUMNS = 2**13
MAX_CELLS_IN_MEMORY = 5 * 10**7  # a larger grid must be reduced (sweep plan)
ROWS_BLOCK = 2**14  # (run, candidate constants) pairs per call of the rows kernel: one compiled shape

# Precision -> (parameter bytes, gradient bytes, activation bytes, bytes of a GEMM input kept for the
# backward, matrix peak: "half" or "fp8").
# The gradient bytes are the precision's default, which --grad-bytes overrides: Megatron-LM keeps bf16
# models' gradients in fp32 (main_grad) and reduces them in fp32 (``accumulate_allreduce_grads_in_fp32``
# is on for bf16 unless --grad-reduce-in-bf16, megatron/training/arguments.py); fp16 gradients stay 2
# bytes. fp8 runs the matrix products in fp8 (Transformer Engine) with bf16 weights and activations, and
# keeps each GEMM's input as its fp8 cast for the backward.
PRECISION_BYTES = {
    "bf16": (2.0, 4.0, 2.0, 2.0, "half"),
    "fp16": (2.0, 2.0, 2.0, 2.0, "half"),
    "fp8": (2.0, 4.0, 2.0, 1.0, "fp8"),
}
# e_N on a log grid of N (1/16 octave up to 2^30), interpolated on the device for each cell's GPU count.
_STRAGGLE_N = 2.0 ** (np.arange(0, 30 * 16 + 1) / 16.0)


@functools.lru_cache(maxsize=1)
def straggle_table() -> tuple[np.ndarray, np.ndarray]:
    """(log2 N [Q], e_N [Q]): the expected maximum of N standard normals (:mod:`sweep.model.collectives`),
    interpolated in log2 N for each cell's GPU count (error < 1e-4)."""
    return np.log2(_STRAGGLE_N), expected_max_normal(_STRAGGLE_N)


def parse_schedule(text: str) -> float:
    """``1f1b`` -> 1, ``interleaved:V`` -> V (model chunks per pipeline stage, V >= 2)."""
    name, _, chunks = text.strip().lower().partition(":")
    if name == "1f1b" and not chunks:
        return 1.0
    count = whole_number(chunks)
    if name == "interleaved" and count is not None and 2 <= count <= 1024:
        return float(count)
    raise InputError(f"{text!r}: must be 1f1b or interleaved:V with V from 2 to 1024", param="schedule")


@dataclasses.dataclass(frozen=True)
class LayoutGrid:
    """A validated layout sweep.

    Attributes:
      models: the transformers, one per ``model`` coordinate.
      names: {text dim: coordinate names} for model, gpu, precision, attention, schedule, recompute,
        collective.
      values: {numeric dim: float64 values in stored units}; 0 where derived or the GPU's.
      dtype: compute dtype.
      usable_memory: the fraction of each GPU's memory training can fill (one per sweep).
      gemm_latency: the fixed time of one matrix kernel, us (one per sweep).
      moment_bytes: bytes of each Adam moment, 4 or 2 (one per sweep).
      overlap: the stack's overlap switches on, canonical (one per sweep).
      assumed: what was assumed that the user did not set, one phrase each.
      variables: the outputs to keep.
    """

    models: tuple[LLM, ...]
    names: dict[str, tuple[str, ...]]
    values: dict[str, np.ndarray]
    dtype: str = "float32"
    assumed: tuple[str, ...] = ()
    variables: tuple[str, ...] = tuple(VARIABLES)
    usable_memory: float = float(AXES["usable_memory"].default)
    gemm_latency: float = float(AXES["gemm_latency"].default)
    moment_bytes: float = float(AXES["moment_bytes"].default)
    overlap: str = OVERLAP_DEFAULT

    def per_sweep(self) -> dict[str, float | str]:
        """The settings that take one value per sweep, as a cube's attributes keep them."""
        return {
            "usable_memory": self.usable_memory,
            "gemm_latency_us": self.gemm_latency,
            "moment_bytes": self.moment_bytes,
            "overlap": self.overlap,
        }

    def coords(self) -> dict[str, np.ndarray]:
        """Each dim's coordinate values, in cube order."""
        return {d: np.asarray(self.names[d]) if d in self.names else self.values[d] for d in DIMS}

    @property
    def sizes(self) -> dict[str, int]:
        return {d: len(v) for d, v in self.coords().items()}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.sizes.values())

    def size_text(self, dims: Sequence[str]) -> str:
        """What makes the sweep as large as it is: each of ``dims`` with several values, largest first, as the
        options that set them (``--bw 1,000 x --util 1,000``)."""
        many = sorted((d for d in dims if self.sizes[d] > 1), key=lambda d: -self.sizes[d])
        return " x ".join(f"{option_of(d)} {self.sizes[d]:,}" for d in many) or "one value each"

    @property
    def outer_size(self) -> int:
        return math.prod(self.sizes[d] for d in OUTER)

    @property
    def inner_size(self) -> int:
        return math.prod(self.sizes[d] for d in INNER)

    def codes(self) -> dict[str, np.ndarray]:
        """Each dim's values as the kernel reads them (SI units; text dims as codes)."""
        out = {}
        for d in DIMS:
            if d == "model" or d == "gpu" or d == "precision":
                out[d] = np.arange(self.sizes[d], dtype=np.float64)
            elif d == "schedule":
                out[d] = np.array([parse_schedule(s) for s in self.names[d]])
            elif d == "recompute":
                out[d] = np.array([recompute_code(s) for s in self.names[d]], np.float64)
            elif d == "attention":
                out[d] = np.array([float(s == "flash") for s in self.names[d]])
            elif d == "collective":
                out[d] = np.array([LAYOUT_COLLECTIVES.index(s) for s in self.names[d]], np.float64)
            else:
                out[d] = self.values[d] * AXES[d].to_si
        return out

    def tables(self) -> dict[str, np.ndarray]:
        """Per-model, per-GPU and per-precision constants (rows in coordinate order) that blocks take their
        outer cells' columns from."""
        arch = np.array([[getattr(_arch_row(m), f) for f in kernel.Arch._fields] for m in self.models])
        latency = self.gemm_latency * AXES["gemm_latency"].to_si
        gpus = np.array(
            [
                (*_gpu_row(g), self.usable_memory, latency, self.moment_bytes, overlap_code(self.overlap))
                for g in self.names["gpu"]
            ]
        )
        precision = np.array(
            [PRECISION_BYTES[p][:4] + (PRECISION_BYTES[p][4] == "fp8",) for p in self.names["precision"]],
            np.float64,
        )
        return {"arch": arch, "gpu": gpus, "precision": precision}


def _arch_row(m: LLM) -> kernel.Arch:
    return kernel.Arch(
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        q_width=m.heads * m.head_dim,
        kv_width=m.kv_heads * m.head_dim,
        v_width=m.kv_heads * m.v_head_dim,
        q_rank=m.q_rank,
        kv_rank=m.kv_rank,
        rope_width=m.rope_dim,
        ffn=m.ffn,
        vocab=m.vocab,
        seq=m.seq,
        experts=m.experts,
        top_k=m.top_k,
        expert_ffn=m.expert_ffn,
        shared_experts=m.shared_experts,
        moe_layers=m.moe_layers,
        gated=float(m.mlp == "swiglu"),
        tied=float(m.tied),
        dropout=float(bool(m.dropout)),
    )


def _gpu_row(name: str) -> tuple[float, ...]:
    g = GPUS[name]
    return (g.half, g.fp8, g.hbm, g.memory, g.nvlink, g.domain, g.gpus_per_node, g.nics, g.nic_gbps * 1e9)


def _values(name: str, given: object, default: str | None) -> np.ndarray:
    spec = AXES[name]
    text = given if given is not None else default
    if text is None or text == "":
        return np.zeros(1)
    if isinstance(text, (int, float, np.integer, np.floating)):
        text = show(float(text))
    elif not isinstance(text, str) and isinstance(text, Iterable):
        text = ",".join(show(float(v)) for v in text)
    return parse_values(text, spec)


def make_layout_grid(
    model: str | None = None,
    *,
    arch: str | None = None,
    gpu: str = "h100",
    precision: str = "bf16",
    attention: str = "flash",
    grad_bytes: object = None,
    usable_memory: object = None,
    gemm_latency: object = None,
    moment_bytes: object = None,
    overlap: str | None = None,
    offload_layers: object = None,
    gpus: object = None,
    dp: object = None,
    tp: object = None,
    pp: object = None,
    cp: object = None,
    ep: object = None,
    micro_batch: object = None,
    global_batch: object = None,
    schedule: str = "1f1b",
    recompute: str = "none",
    sequence_parallel: object = None,
    zero: object = None,
    nvlink_domain: object = None,
    nvlink_bw: object = None,
    gpus_per_node: object = None,
    nics_per_node: object = None,
    bandwidth: object = None,
    utilization: object = None,
    latency: object = None,
    collective: str = "nccl",
    efficiency: object = None,
    attention_efficiency: object = None,
    imbalance: object = None,
    overhead: object = None,
    slowdown: object = None,
    jitter: object = None,
    dtype: str = "float32",
    search: dict[str, str] | None = None,
) -> LayoutGrid:
    """A validated :class:`LayoutGrid`. Every numeric option takes the value syntax (``1,2,4``, ``1..8``).

    ``search``: defaults for the layout dims the caller did not set (``sweep plan``'s search space).
    """
    models: list[LLM] = []
    model_names: list[str] = []
    if arch is not None:
        models.append(parse_arch(arch))
        model_names.append("arch")
    if model is not None:
        for name in parse_names(model.lower(), "model", tuple(LLMS)):
            models.append(resolve_llm(name))
            model_names.append(name.lower())
    if not models:
        raise InputError("name a model (sweep models lists them) or give --arch", param="model")
    names = {
        "model": tuple(model_names),
        # Names are case-insensitive (--gpu H100): presets are spelled in lower case.
        "gpu": tuple(parse_names(gpu.lower(), "gpu", tuple(GPUS))),
        "precision": tuple(parse_names(precision.lower(), "precision", LAYOUT_PRECISIONS)),
        "attention": tuple(parse_names(attention.lower(), "attention", ATTENTIONS)),
        "schedule": tuple(_schedules(schedule)),
        "recompute": tuple(_recomputes(recompute)),
        "collective": tuple(parse_names(collective.lower(), "collective", LAYOUT_COLLECTIVES)),
    }
    for g in names["gpu"]:
        if "fp8" in names["precision"] and GPUS[g].fp8 == 0:
            raise InputError(
                f"fp8: the {g} has no fp8 tensor cores (fp8 needs h100 or newer)", param="precision"
            )
    if gpus is None and dp is None:
        raise InputError("give the GPU count (--gpus) or the data-parallel degree (--dp)", param="gpus")
    if global_batch is None:
        raise InputError("give the global batch in samples (e.g. --global-batch 1024)", param="global_batch")
    search = search or {}
    given = dict(
        grad_bytes=grad_bytes,
        usable_memory=usable_memory,
        gemm_latency=gemm_latency,
        moment_bytes=moment_bytes,
        offload_layers=offload_layers,
        gpus=gpus,
        dp=dp,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        micro_batch=micro_batch,
        global_batch=global_batch,
        sequence_parallel=sequence_parallel,
        zero=zero,
        nvlink_domain=nvlink_domain,
        nvlink_bw=nvlink_bw,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        bandwidth=bandwidth,
        utilization=utilization,
        latency=latency,
        efficiency=efficiency,
        attention_efficiency=attention_efficiency,
        imbalance=imbalance,
        overhead=overhead,
        slowdown=slowdown,
        jitter=jitter,
    )
    values = {}
    for name, value in given.items():
        default = search.get(name, AXES[name].default)
        if name in SYSTEM_DIMS:
            default = ""  # the GPU preset's, resolved per cell
        if name == "efficiency":
            default = show(EFFICIENCY)
        values[name] = _values(name, value, default)
    for bad in (v for v in values["grad_bytes"] if v not in (0.0, 2.0, 4.0)):
        raise InputError(
            f"{show(bad)}: must be 0 (the precision's), 2 (bf16) or 4 (fp32)", param="grad_bytes"
        )
    for bad in (v for v in values["moment_bytes"] if v not in (2.0, 4.0)):
        raise InputError(f"{show(bad)}: must be 4 (fp32) or 2 (bf16)", param="moment_bytes")
    per_sweep = {}
    for name in PER_SWEEP:  # one value per sweep: a property of the stack, not a dim
        one = values.pop(name)
        if one.size != 1:
            raise InputError(f"{given[name]}: give one value", param=name)
        per_sweep[name] = float(one[0])
    assumed = _assumed(given, names, models, search, overlap_given=overlap is not None)
    return LayoutGrid(
        tuple(models),
        names,
        values,
        dtype,
        assumed,
        usable_memory=per_sweep["usable_memory"],
        gemm_latency=per_sweep["gemm_latency"],
        moment_bytes=per_sweep["moment_bytes"],
        overlap=_overlap(overlap),
    )


def _overlap(text: str | None) -> str:
    if text is None:
        return OVERLAP_DEFAULT
    mode = overlap_mode(str(text))
    if mode is None:
        raise InputError(f"{text!r}: one mode, {OVERLAP_HELP} (e.g. grad_reduce+tp_comm)", param="overlap")
    return mode


def _recomputes(text: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        raise InputError(f"'': give a recompute mode ({RECOMPUTE_HELP})", param="recompute")
    modes = [recompute_mode(item) for item in items]
    for item, mode in zip(items, modes):
        if mode is None:
            raise InputError(f"{item!r}: unknown; known: {RECOMPUTE_HELP}", param="recompute")
    # One spelling per mode (moe_act+mlp is mlp+moe_act), so a repeat is found.
    if len(set(modes)) != len(modes):
        raise InputError(f"{text!r}: a recompute mode appears twice", param="recompute")
    return [str(mode) for mode in modes]


def _schedules(text: str) -> list[str]:
    items = [s.strip().lower() for s in str(text).split(",") if s.strip()]
    if not items:
        raise InputError("'': give a schedule (1f1b or interleaved:V)", param="schedule")
    # One spelling per schedule (interleaved:02 is interleaved:2), so a repeat is found.
    items = [
        "1f1b" if parse_schedule(item) == 1 else f"interleaved:{int(parse_schedule(item))}" for item in items
    ]
    if len(set(items)) != len(items):
        raise InputError(f"{text!r}: a schedule appears twice", param="schedule")
    return items


def _assumed(
    given: dict, names: dict, models: list[LLM], search: dict, overlap_given: bool = True
) -> tuple[str, ...]:
    out = []
    for g in names["gpu"]:
        spec = GPUS[g]
        parts = [
            f"{AXES[d].option.lstrip('-')} {v}"
            for d, v in (
                ("nvlink_domain", show(spec.domain)),
                ("nvlink_bw", f"{show(spec.nvlink / 1e9)} GB/s"),
                ("gpus_per_node", show(spec.gpus_per_node)),
                ("nics_per_node", show(spec.nics)),
                ("bandwidth", f"{show(spec.nic_gbps)} Gbit/s"),
            )
            if given[d] is None
        ]
        if parts:
            out.append(f"{g}: {spec.system} ({', '.join(parts)})")
    if given["efficiency"] is None:
        out.append(f"matrix efficiency {show(EFFICIENCY)}")
    if given["gemm_latency"] is None:
        out.append(f"GEMM latency {AXES['gemm_latency'].default} us")
    if given["attention_efficiency"] is None:
        out.append(f"flash-attention efficiency {AXES['attention_efficiency'].default}")
    if given["utilization"] is None:
        out.append("utilization 1 (the links' full rate)")
    if given["grad_bytes"] is None:
        kinds: dict[str, list[str]] = {}  # gradient dtype -> the precisions whose default it is
        for p in names["precision"]:
            kinds.setdefault("fp32" if PRECISION_BYTES[p][1] == 4 else p, []).append(f"{p}'s")
        out.append("gradients " + ", ".join(f"{k} ({', '.join(ps)})" for k, ps in kinds.items()))
    if given["usable_memory"] is None:
        out.append(f"usable memory {AXES['usable_memory'].default}")
    if given["moment_bytes"] is None:
        out.append("Adam moments fp32")
    if not overlap_given:
        out.append(f"overlap {OVERLAP_DEFAULT}")
    searched = [
        f"{AXES[d].option.lstrip('-')} {search[d]}" for d in INNER if given.get(d) is None and d in search
    ]
    for d in ("tp", "pp", "cp", "micro_batch", "zero", "sequence_parallel"):
        if given[d] is None and d not in search:
            out.append(f"{AXES[d].option} {AXES[d].default}")
    if searched:
        out.append("searched: " + ", ".join(searched))
    return tuple(out)


# --- evaluation ----------------------------------------------------------------------------------------


def _pow2(n: int, low: int) -> int:
    """The smallest power of two that holds ``n`` and is at least ``low`` (a power of two)."""
    return 1 << max(low.bit_length() - 1, (max(n, 1) - 1).bit_length())


def _e_n(n: np.ndarray) -> np.ndarray:
    """e_N for GPU counts ``n``, interpolated in log2 N on :func:`straggle_table`."""
    log_n, e_n = straggle_table()
    return np.interp(np.log2(np.maximum(n, 1.0)), log_n, e_n)


class BlockTables:
    """The host tables a block crosses on the device: one row per outer cell, one per layout
    (:data:`sweep.engine.compiled.OUTER_COLUMNS`, :data:`~sweep.engine.compiled.INNER_COLUMNS`)."""

    def __init__(self, grid: LayoutGrid):
        self.grid = grid
        self.codes = grid.codes()
        self.outer_sizes = [len(self.codes[d]) for d in OUTER]
        self.inner_sizes = [len(self.codes[d]) for d in INNER]
        tables = grid.tables()
        self.arch, self.gpu, self.precision = tables["arch"], tables["gpu"], tables["precision"]

    def outer(self, start: int, rows: int) -> np.ndarray:
        """[rows, OUTER_COLUMNS] for outer cells start.. (past the last: the last repeated)."""
        flat = np.minimum(np.arange(start, start + rows), self.grid.outer_size - 1)
        idx = dict(zip(OUTER, np.unravel_index(flat, self.outer_sizes)))
        gpus = self.codes["gpus"][idx["gpus"]]
        columns = [self.codes[d][idx[d]] for d in OUTER]
        columns += list(self.arch[idx["model"]].T) + list(self.gpu[idx["gpu"]].T)
        columns += list(self.precision[idx["precision"]].T) + [_e_n(gpus)]
        return np.stack(columns, axis=1)

    def inner(self, start: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
        """([cols, INNER_COLUMNS] for layouts start.., [cols] 1 for a layout of the sweep, 0 for padding)."""
        flat = np.arange(start, start + cols)
        real = (flat < self.grid.inner_size).astype(np.float64)
        idx = dict(zip(INNER, np.unravel_index(np.minimum(flat, self.grid.inner_size - 1), self.inner_sizes)))
        v = {d: self.codes[d][idx[d]] for d in INNER}
        columns = [v[d] for d in INNER] + [_e_n(v["dp"] * v["tp"] * v["pp"] * v["cp"])]
        return np.stack(columns, axis=1), real


def _block_shape(grid: LayoutGrid, block_configs: int) -> tuple[int, int]:
    """(rows, cols) of a block: powers of two, so sweeps of similar sizes share one compiled block."""
    cols = min(_pow2(grid.inner_size, MIN_COLUMNS), MAX_COLUMNS, _pow2(block_configs, 8))
    rows = max(1, min(_pow2(grid.outer_size, 8), block_configs // cols))
    return rows, cols


def check_in_memory(grid: LayoutGrid) -> None:
    """Refuse, before any work, a grid of more configurations than it can keep, naming what made it large."""
    if grid.outer_size * grid.inner_size > MAX_CELLS_IN_MEMORY:
        raise InputError(
            f"{grid.outer_size * grid.inner_size:,} configurations ({grid.size_text(DIMS)}) are too many to "
            f"keep (at most {MAX_CELLS_IN_MEMORY:,}); give fewer values, or search them with sweep plan (it "
            f"keeps the best layouts only)"
        )


def evaluate_layouts_arrays(
    grid: LayoutGrid, block_configs: int = BLOCK_CONFIGS, progress: Callable[[int], object] | None = None
) -> dict:
    """Every output over the whole grid: dict name -> array of ``grid.shape``."""
    check_in_memory(grid)
    rows, cols = _block_shape(grid, block_configs)
    full = {
        name: np.empty(
            (grid.outer_size, grid.inner_size), np.int32 if name == "status" else np.dtype(grid.dtype)
        )
        for name in grid.variables
    }
    tables = BlockTables(grid)
    with jax.enable_x64(grid.dtype == "float64"):
        dtype = jnp.float64 if grid.dtype == "float64" else jnp.float32
        for i in range(0, grid.inner_size, cols):
            inner = jnp.asarray(tables.inner(i, cols)[0], dtype)
            for o in range(0, grid.outer_size, rows):
                out = layout_block_outputs(jnp.asarray(tables.outer(o, rows), dtype), inner)
                r = min(rows, grid.outer_size - o)
                c = min(cols, grid.inner_size - i)
                for name in grid.variables:
                    full[name][o : o + r, i : i + c] = np.asarray(out[name])[:r, :c]
                if progress:
                    progress(r * c)
    return {name: a.reshape(grid.shape) for name, a in full.items()}


def layouts_dataset(grid: LayoutGrid, arrays: dict) -> xr.Dataset:
    """The grid's outputs as an ``xarray.Dataset`` with units, the status rules and what was assumed."""
    coords = {d: xr.Variable(d, v, coordinate_attrs(d)) for d, v in grid.coords().items()}
    data = {}
    for name, a in arrays.items():
        units, long_name = VARIABLES[name]
        attrs = {"units": units, "long_name": long_name}
        if name == "status":
            attrs["rules"] = "; ".join(f"{i}: {rule}" for i, rule in enumerate(kernel.STATUS))
        data[name] = xr.Variable(DIMS, a, attrs)
    cube_attrs: dict[str, float | str] = {
        "family": "layouts",
        "dtype": grid.dtype,
        "assumed": "; ".join(grid.assumed),
        **grid.per_sweep(),
        "models": "; ".join(
            f"{n}: {m.describe()} [{m.source}]" for n, m in zip(grid.names["model"], grid.models)
        ),
    }
    return xr.Dataset(data, coords=coords, attrs=cube_attrs)


def best_layouts(
    grid: LayoutGrid,
    keep: int = 3,
    block_configs: int = BLOCK_CONFIGS,
    progress: Callable[[int], object] | None = None,
    columns: int | None = None,
) -> dict:
    """The ``keep`` fastest feasible layouts of every outer cell.

    Returns dict: ``score`` [O, K] tokens/s (-inf: fewer feasible layouts), ``layout`` [O, K] flat
    layout index, and every output at them [O, K] (O = the outer cells in cube order). ``columns``
    caps the layouts each block searches (a power of two; the rest of the block is padding, so the compiled
    shape is the same)."""
    keep = min(keep, grid.inner_size)
    rows, cols = _block_shape(grid, block_configs)
    cols = max(cols, keep)
    step = cols if columns is None else max(min(cols, _pow2(columns, 8)), keep)
    # Searches keeping 1 to 4 layouts share one compiled block (top_k's k is a shape); the extra are cut off.
    compiled_keep = min(_pow2(keep, 4), cols)
    # Not yet found: score -inf at a layout index past the last, so a real layout of equal score sorts first.
    best = {
        "score": np.full((grid.outer_size, keep), -np.inf),
        "layout": np.full((grid.outer_size, keep), grid.inner_size, np.int64),
    }
    picked: dict[str, np.ndarray] = {}
    tables = BlockTables(grid)
    with jax.enable_x64(grid.dtype == "float64"):
        dtype = jnp.float64 if grid.dtype == "float64" else jnp.float32
        for i in range(0, grid.inner_size, step):
            inner, real = tables.inner(i, cols)
            real[step:] = 0.0  # the next block's layouts
            inner_d, real_d = jnp.asarray(inner, dtype), jnp.asarray(real, dtype)
            for o in range(0, grid.outer_size, rows):
                r = min(rows, grid.outer_size - o)
                score, where, out = layout_block_best(
                    jnp.asarray(tables.outer(o, rows), dtype), inner_d, real_d, keep=compiled_keep
                )
                score = np.asarray(score, np.float64)[:r, :keep]
                where = np.asarray(where, np.int64)[:r, :keep] + i
                out = {k: np.asarray(v)[:r, :keep] for k, v in out.items()}
                _merge(best, picked, slice(o, o + r), score, where, out, keep)
                if progress:
                    progress(r * min(step, grid.inner_size - i))
    missing = ~np.isfinite(best["score"])  # fewer feasible layouts than asked for
    best["layout"][missing] = -1
    for v in picked.values():
        if v.dtype.kind == "f":
            v[missing] = np.nan
    return best | picked


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


# --- one configuration per row: measured runs, each with its own layout ---------------------------------


@dataclasses.dataclass(frozen=True)
class LayoutRow:
    """One training run to evaluate: a model, a GPU, a precision and a layout (stored units, as the CLI's).

    ``None`` for a system setting means the GPU preset's; ``dp`` 0 means gpus / (tp pp cp).
    """

    llm: LLM
    gpu: str
    precision: str
    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 0
    micro_batch: int = 1
    global_batch: int = 1
    chunks: int = 1
    recompute: str = "none"
    grad_bytes: int = 0
    offload_layers: int = 0
    attention_efficiency: float = float(AXES["attention_efficiency"].default)
    usable_memory: float = float(AXES["usable_memory"].default)
    gemm_latency: float = float(AXES["gemm_latency"].default)
    moment_bytes: float = float(AXES["moment_bytes"].default)
    overlap: str = OVERLAP_DEFAULT
    sequence_parallel: int = 1
    zero: int = 0
    attention: str = "flash"
    collective: str = "nccl"
    nvlink_domain: float | None = None
    nvlink_bw: float | None = None
    gpus_per_node: float | None = None
    nics_per_node: float | None = None
    bandwidth: float | None = None
    latency: float = 0.0
    overhead: float = 0.0
    imbalance: float = 1.0


def evaluate_rows(
    rows: list[LayoutRow],
    efficiency: np.ndarray,
    utilization: np.ndarray,
    outputs: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Every output of :mod:`kernels.layout` (or those named in ``outputs``) for each row and candidate
    constant, in float64.

    ``efficiency`` and ``utilization``: [R, K] (K candidates per row, broadcast as arrays), or [R].
    Returns dict name -> [R, K] (or [R]); a fit asks for the outputs it needs, so the host holds those only."""
    efficiency, utilization = np.broadcast_arrays(
        np.asarray(efficiency, np.float64), np.asarray(utilization, np.float64)
    )
    one = efficiency.ndim == 1
    if one:
        efficiency, utilization = efficiency[:, None], utilization[:, None]
    asked = efficiency.shape

    def column(values: list[float]) -> np.ndarray:  # [R]: one value per row
        return np.asarray(values, np.float64)

    arch = {f: column([getattr(_arch_row(r.llm), f) for r in rows]) for f in kernel.Arch._fields}
    gpu = [dict(zip(GPU_FIELDS, _gpu_row(r.gpu))) for r in rows]
    bytes_ = [PRECISION_BYTES[r.precision] for r in rows]
    dev = dict(
        peak=column([g["fp8"] if b[4] == "fp8" else g["half"] for g, b in zip(gpu, bytes_)]),
        hbm=column([g["hbm"] for g in gpu]),
        memory=column([g["memory"] for g in gpu]),
        param_bytes=column([b[0] for b in bytes_]),
        grad_bytes=column([r.grad_bytes or b[1] for r, b in zip(rows, bytes_)]),
        act_bytes=column([b[2] for b in bytes_]),
        usable=column([r.usable_memory for r in rows]),
        gemm_input_bytes=column([b[3] for b in bytes_]),
        half_peak=column([g["half"] for g in gpu]),
        gemm_latency=column([r.gemm_latency * AXES["gemm_latency"].to_si for r in rows]),
        moment_bytes=column([r.moment_bytes for r in rows]),
    )

    def system(name: str, own: str, factor: float) -> np.ndarray:
        return column(
            [g[own] if getattr(r, name) is None else getattr(r, name) * factor for r, g in zip(rows, gpu)]
        )

    lay = dict(
        gpus=column([r.gpus for r in rows]),
        tp=column([r.tp for r in rows]),
        pp=column([r.pp for r in rows]),
        cp=column([r.cp for r in rows]),
        ep=column([r.ep for r in rows]),
        dp=column([r.dp for r in rows]),
        micro_batch=column([r.micro_batch for r in rows]),
        global_batch=column([r.global_batch for r in rows]),
        chunks=column([r.chunks for r in rows]),
        recompute=column([recompute_code(r.recompute) for r in rows]),
        sequence_parallel=column([r.sequence_parallel for r in rows]),
        zero=column([r.zero for r in rows]),
        flash=column([float(r.attention == "flash") for r in rows]),
        nvlink_domain=system("nvlink_domain", "domain", 1.0),
        nvlink_bw=system("nvlink_bw", "nvlink", 1e9),
        gpus_per_node=system("gpus_per_node", "gpus_per_node", 1.0),
        nics_per_node=system("nics_per_node", "nics", 1.0),
        bandwidth=system("bandwidth", "nic_bits", 1e9),
        utilization=column([0.0] * len(rows)),  # per candidate: set block by block below
        latency=column([r.latency * 1e-6 for r in rows]),
        collective=column([LAYOUT_COLLECTIVES.index(r.collective) for r in rows]),
        efficiency=column([0.0] * len(rows)),
        overhead=column([r.overhead * 1e-3 for r in rows]),
        slowdown=column([0.0] * len(rows)),
        straggle=column([0.0] * len(rows)),
        imbalance=column([r.imbalance for r in rows]),
        offload_layers=column([r.offload_layers for r in rows]),
        attention_efficiency=column([r.attention_efficiency for r in rows]),
        overlap=column([overlap_code(r.overlap) for r in rows]),
    )
    # The R x K (row, candidate) pairs, flattened, in blocks of ROWS_BLOCK (the last one padded by repeating
    # its last pair): every fit, validation and check calls one compiled shape, whatever R and K, and holds
    # one block's inputs at a time.
    n = efficiency.size
    flat = {"efficiency": efficiency.ravel(), "utilization": utilization.ravel()}
    result: dict[str, np.ndarray] = {}
    with jax.enable_x64(True):
        for start in range(0, n, ROWS_BLOCK):
            pair = np.minimum(np.arange(start, start + ROWS_BLOCK), n - 1)
            row = pair // asked[1]
            per_pair = {k: v[pair] for k, v in flat.items()}
            out = layout_block_rows(
                kernel.Arch(**{k: jnp.asarray(v[row]) for k, v in arch.items()}),
                kernel.Device(**{k: jnp.asarray(v[row]) for k, v in dev.items()}),
                kernel.Layout(**{k: jnp.asarray(per_pair.get(k, v[row])) for k, v in lay.items()}),
            )
            for k in outputs or out:
                result.setdefault(k, np.empty(n, np.float64))[start : start + ROWS_BLOCK] = np.asarray(
                    out[k], np.float64
                )[: n - start]
    result = {k: v.reshape(asked) for k, v in result.items()}
    return {k: v[:, 0] for k, v in result.items()} if one else result
