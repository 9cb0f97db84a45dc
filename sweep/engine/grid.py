"""A sweep grid: the profiles, the axes and the fixed settings of one sweep.

The grid's dimension order is :data:`sweep.core.schema.DIMS` and is the cube's.
:func:`make_grid` is the typed specification of a sweep that the Python API
(:func:`sweep.evaluate`, :func:`sweep.solve`) and the CLI share: one keyword per
numeric axis and per setting, each a key of :class:`GridOptions` (PEP 692 ``**options``,
defined once and shared with ``evaluate`` through :class:`SweepOptions`), each
defaulting to the schema's registry.
"""

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict, Unpack

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import (
    BUCKETINGS,
    COLLECTIVES,
    DEFAULT_VARIABLES,
    DEFAULTS,
    DIMS,
    DTYPES,
    NUMERIC_AXES,
    STORE_DTYPES,
    VARIABLES,
    in_cube_order,
    refuse_unknown_keywords,
    show,
)
from netsweep_jax.sweep.core.values import coerce_axis, parse_names
from netsweep_jax.sweep.engine.reductions import Reduction, parse_reductions
from netsweep_jax.sweep.model.builtin import builtin_names, builtin_profile
from netsweep_jax.sweep.model.collectives import ONE_LINK_PER_WORKER
from netsweep_jax.sweep.model.compressors import (
    NONE,
    Compressor,
    codec_cost_for,
    codec_overrides,
    parse_compressors,
    parse_factors,
    tensor_codec,
)
from netsweep_jax.sweep.model.compute import GPUS, Workload, transformer_profile
from netsweep_jax.sweep.model.profile import MAX_SECONDS, MIN_SECONDS, Profile, load_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS
from netsweep_jax.sweep.model.vector_add import default_table, read_table

# What the specification accepts (see make_grid).
AxisValues = float | str | Sequence[float] | npt.NDArray[Any]  # a number, a sequence or value syntax
Names = str | Sequence[str]  # a name, a comma list or a sequence
Models = str | Profile | Sequence[str | Profile]
WorkloadValues = str | int | Sequence[str | int] | None  # a transformer workload setting
ReduceTable = str | Path | tuple[npt.ArrayLike, npt.ArrayLike] | None
Table = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


class SweepOptions(TypedDict, total=False):
    """The keywords of a sweep that :func:`make_grid` and :func:`sweep.evaluate` share, each optional.

    ``bandwidth`` and the kept variables are the two each of them spells itself: ``make_grid``
    (:class:`GridOptions`) takes ``bandwidth`` with a default and ``variables``, ``evaluate``
    requires ``bandwidth`` and calls the variables ``vars`` (as ``--vars``). A key not given
    takes its registry's default (:data:`sweep.core.schema.NUMERIC_AXES`, :data:`sweep.core.schema.DEFAULTS`).

    Keys:
      fusion_buffer: tensor fusion buffer size, MiB.
      fusion_timeout: tensor fusion timeout, ms.
      nodes: number of nodes (integer).
      gpus_per_node: GPUs per node (integer).
      nics_per_node: network interfaces per node, shared by its GPUs (integer).
      utilization: fraction of link bandwidth the transport achieves, in [1e-4, 1].
      ratio: gradient compression ratio (>= 1).
      latency: per-message latency, us.
      overhead: time per iteration nothing overlaps when N > 1, ms.
      slowdown: compute stretched by 1 + slowdown when N > 1.
      jitter: coefficient of variation of a worker's compute time.
      accum: micro-batches of compute per gradient synchronization (integer).
        Each numeric axis takes a number, a sequence, or a value-syntax string (``"1..100@10"``)
        in those units; its bounds and default are :data:`sweep.core.schema.NUMERIC_AXES`'s
        (None: the default).
      collective: a name, comma list or sequence of names from :data:`sweep.core.schema.COLLECTIVES`
        (None: follows the workload, :func:`workload_defaults`: ``ring`` for the paper's CNNs,
        ``nccl-ring`` for transformers).
      bucketing: ``horovod``, ``ddp`` and/or ``fsdp`` (:mod:`sweep.model.fusion`), likewise (None:
        ``horovod`` for the paper's CNNs, ``ddp`` for transformers).
      reduce_table: ([T] bytes, [T] seconds), a ``bytes,seconds`` file, or None for
        the default V100 model.
      intra_bandwidth: Gbit/s, intra-node links (``hierarchical`` and ``nccl-*``) (None: the
        NVLink of the models' GPU preset, 1200 for the paper's V100 runs).
      dtype: ``"float32"`` or ``"float64"`` (compute).
      store: storage dtype, ``float16``, ``float32`` or ``float64`` (None: the compute dtype).
      gpu, precision, batch, seq_len: a transformer's workload, each a value or a comma list
        (:func:`resolve_models`, :mod:`sweep.model.compute`); only for transformer models.
      compressor: a spec, comma list or sequence (:mod:`sweep.model.compressors`: ``none``, ``fp16``,
        ``int8``, ``topk:D``, ``randomk:D``, ``signsgd``, ``powersgd:R``).
      iterations_factor: ``topk:0.01=1.3,...`` or a dict: iterations each compressor needs to
        reach the same accuracy, relative to none (default 1).
      codec_cost: a JSON file or a dict overriding the codec throughput model.
      reduce: ``OP:DIM[,DIM...]`` or a list of them (:mod:`sweep.engine.reductions`): reduce on
        the device; the result keeps the other dims.
    """

    fusion_buffer: AxisValues | None
    fusion_timeout: AxisValues | None
    nodes: AxisValues | None
    gpus_per_node: AxisValues | None
    nics_per_node: AxisValues | None
    utilization: AxisValues | None
    ratio: AxisValues | None
    latency: AxisValues | None
    overhead: AxisValues | None
    slowdown: AxisValues | None
    jitter: AxisValues | None
    accum: AxisValues | None
    collective: Names | None
    bucketing: Names | None
    reduce_table: ReduceTable
    intra_bandwidth: float | None
    dtype: str
    store: str | None
    gpu: WorkloadValues
    precision: WorkloadValues
    batch: WorkloadValues
    seq_len: WorkloadValues
    compressor: Names
    iterations_factor: str | Mapping[Any, float | str] | None
    codec_cost: str | Path | Mapping[str, float] | None
    reduce: str | Sequence[str] | None


class GridOptions(SweepOptions, total=False):
    """The keywords of :func:`make_grid`: those of :class:`SweepOptions`, and these two.

    Keys:
      bandwidth: Gbit/s, a numeric axis as the others (None or not given: the schema's default).
      variables: the variables to keep: a comma list or sequence from :data:`sweep.core.schema.VARIABLES`
        (None: the first four, and ``time_to_accuracy`` when some compressor is not ``none``).
    """

    bandwidth: AxisValues | None
    variables: Names | None


# Every key of GridOptions -> its default: the registries' where they hold one, else None (not given).
_REGISTRY = {**dataclasses.asdict(DEFAULTS), **{name: spec.default for name, spec in NUMERIC_AXES.items()}}
_DEFAULTS: dict[str, Any] = {key: _REGISTRY.get(key) for key in GridOptions.__annotations__}
FOLLOWING = ("intra_bandwidth", "collective", "bucketing")  # None: follow the workload (workload_defaults)
_DEFAULTS.update(dict.fromkeys(FOLLOWING))
FLAGS = {"intra_bandwidth": "--intra-bw", "collective": "--collective", "bucketing": "--bucketing"}


def _gpu_of(profile: Profile) -> str | None:
    """The GPU preset a profile ran on (by its device's name), or None."""
    device = str(profile.device or "").strip().lower()
    for key, gpu in GPUS.items():
        if device in (key, gpu.name.lower()):
            return key
    return None


def is_transformer(profile: Profile) -> bool:
    """A built-in transformer's profile (``gpt2-xl@h100-bf16-b8``)."""
    return "@" in profile.model and profile.model.split("@")[0] in TRANSFORMERS


def workload_defaults(profiles: Sequence[Profile]) -> tuple[dict[str, Any], str]:
    """The settings that follow the workload, and what they rest on (text).

    ``intra_bandwidth``: the NVLink of the models' GPU preset (:data:`sweep.model.compute.GPUS`,
    one direction, in Gbit/s; the lowest where the models' GPUs differ; the V100's 1200 for a
    profile on an unknown GPU); ``collective`` and ``bucketing``: ``nccl-ring`` and PyTorch
    ``ddp`` buckets when every model is a transformer (what their stacks use), else the paper's
    ``ring`` and Horovod fusion (the paper's CNNs keep the paper's model).
    """
    gpus = [_gpu_of(p) or "v100" for p in profiles]
    links = {g: GPUS[g].nvlink * 8 / 1e9 for g in gpus}
    gpu = min(links, key=lambda g: links[g]) if links else "v100"
    transformers = bool(profiles) and all(is_transformer(p) for p in profiles)
    values = {
        "intra_bandwidth": links.get(gpu, DEFAULTS.intra_bandwidth),
        "collective": "nccl-ring" if transformers else DEFAULTS.collective,
        "bucketing": "ddp" if transformers else DEFAULTS.bucketing,
    }
    names = sorted({p.model.split("@")[0] for p in profiles})
    where = f"{','.join(names)} on {','.join(dict.fromkeys(gpus))}"
    return values, where


def assumed_text(profiles: Sequence[Profile], chosen: Mapping[str, Any]) -> str:
    """One line of what a sweep assumed that the user did not set (``chosen``: setting -> value
    filled in), empty where nothing departs from the paper's defaults (its CNNs on a V100)."""
    if not chosen:
        return ""
    values, where = workload_defaults(profiles)
    paper = {
        "intra_bandwidth": DEFAULTS.intra_bandwidth,
        "collective": DEFAULTS.collective,
        "bucketing": DEFAULTS.bucketing,
    }
    if all(values[k] == paper[k] for k in chosen):
        return ""
    gpus = [_gpu_of(p) or "v100" for p in profiles]
    low = min(gpus, key=lambda g: GPUS[g].nvlink)
    parts = []
    for key in FOLLOWING:
        if key in chosen:
            value = chosen[key]
            note = f" ({low.upper()} NVLink)" if key == "intra_bandwidth" else ""
            parts.append(
                f"{FLAGS[key]} {value:g}{note}" if isinstance(value, float) else f"{FLAGS[key]} {value}"
            )
    return f"{where}: {', '.join(parts)}"


@dataclasses.dataclass(frozen=True)
class Grid:
    """Everything that determines a sweep's results.

    Attributes:
      profiles: tuple of :class:`~sweep.model.profile.Profile`, the ``model`` axis.
      collectives: tuple of collective names, the ``collective`` axis.
      values: dict axis name -> float64 [n] values in stored units (numeric axes).
      reduce_table: ([T] bytes, [T] seconds) reduce-cost table.
      reduce_source: where the table came from (text).
      intra_bandwidth: intra-node bandwidth (Gbit/s) for ``hierarchical``.
      dtype: ``"float32"`` or ``"float64"``, the compute precision.
      variables: the variables the cube keeps (a subset of :data:`sweep.core.schema.VARIABLES`, in its order).
      store: the storage dtype (``float16``, ``float32``, ``float64``; empty: the compute dtype).
      compressors: tuple of :class:`~sweep.model.compressors.Compressor`, the ``compressor`` axis.
      factors: compressor name -> iterations to the same accuracy relative to none.
      codec_overrides: :class:`~sweep.model.compressors.CodecCost` fields set by ``--codec-cost``.
      reduction: what ``--reduce`` reduces on the device (None: nothing).
      assumed: what the sweep assumed that the user did not set (:func:`assumed_text`; empty: nothing
        beyond the paper's defaults).
    """

    profiles: tuple[Profile, ...]
    collectives: tuple[str, ...]
    bucketings: tuple[str, ...]
    values: dict[str, npt.NDArray[np.float64]]
    reduce_table: Table
    reduce_source: str = "default V100 model"
    intra_bandwidth: float = DEFAULTS.intra_bandwidth
    dtype: str = DEFAULTS.dtype
    variables: tuple[str, ...] = DEFAULT_VARIABLES
    store: str = ""
    compressors: tuple[Compressor, ...] = (NONE,)
    factors: dict[str, float] = dataclasses.field(default_factory=lambda: {"none": 1.0})
    codec_overrides: dict[str, float] = dataclasses.field(default_factory=dict)
    reduction: Reduction | None = None  # under --reduce
    assumed: str = ""

    @property
    def compresses(self) -> bool:
        """True when some compressor is not ``none``."""
        return any(c.method != "none" for c in self.compressors)

    @property
    def store_dtype(self) -> str:
        """The dtype the cube stores (the compute dtype unless ``store`` says otherwise)."""
        return self.store or self.dtype

    @property
    def sizes(self) -> dict[str, int]:
        """dim -> extent, in cube order."""
        return {d: self.size_of(d) for d in DIMS}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.sizes.values())

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def size_of(self, dim: str) -> int:
        if dim == "model":
            return len(self.profiles)
        if dim == "collective":
            return len(self.collectives)
        if dim == "bucketing":
            return len(self.bucketings)
        if dim == "compressor":
            return len(self.compressors)
        return len(self.values[dim])

    def coords(self) -> dict[str, npt.NDArray[Any]]:
        """dim -> coordinate values as typed (str array for model/collective)."""
        out: dict[str, npt.NDArray[Any]] = {
            "model": np.array([p.model for p in self.profiles]),
            "collective": np.array(self.collectives),
            "bucketing": np.array(self.bucketings),
            "compressor": np.array([c.name for c in self.compressors]),
        }
        for d in DIMS:
            if d not in NUMERIC_AXES:
                continue
            v = self.values[d]
            out[d] = v.astype(np.int64) if NUMERIC_AXES[d].integer else v
        return out

    def fingerprint(self) -> str:
        """SHA-256 of everything that determines the results (for --resume)."""
        payload: dict[str, object] = {
            "profiles": [p.content_hash() for p in self.profiles],
            "models": [p.model for p in self.profiles],
            "collectives": list(self.collectives),
            "bucketings": list(self.bucketings),
            "values": {k: np.asarray(v).tolist() for k, v in sorted(self.values.items())},
            "reduce": [np.asarray(t).tolist() for t in self.reduce_table],
            "intra": self.intra_bandwidth,
            "dtype": self.dtype,
            "variables": list(self.variables),
            "store": self.store_dtype,
        }
        if self.reduction is not None:
            r = self.reduction
            payload["reduce"] = [r.family, list(r.dims), list(r.labelled)]
        if self.compresses:  # absent otherwise, so the fingerprints of earlier cubes hold
            payload["compression"] = {
                "compressors": [c.name for c in self.compressors],
                "factors": self.factors,
                "codec": self.codec_overrides,
                "shapes": [repr(p.shape) for p in self.profiles],
            }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def resolve_models(
    model: Models = DEFAULTS.model,
    profile: str | Path | None = None,
    iteration_time: float | None = None,
    *,
    gpu: WorkloadValues = None,
    precision: WorkloadValues = None,
    batch: WorkloadValues = None,
    seq_len: WorkloadValues = None,
) -> tuple[Profile, ...]:
    """The profiles a sweep runs on: a profile file, or built-in names.

    Args:
      model: a built-in name or comma list of them (the paper's CNNs, or a
        transformer of :data:`sweep.model.transformers.TRANSFORMERS`), a :class:`Profile`,
        or a sequence of either (ignored when ``profile`` is given).
      profile: a profile file (.json, .csv, .bk.log), or None.
      iteration_time: T1 in seconds: for a profile file that has none, or to put a
        built-in model on other hardware (its compute scaled to this T1).
      gpu, precision, batch, seq_len: for transformers, each a value or a comma list
        (every combination becomes a profile, named like ``gpt2-xl@h100-bf16-b8``);
        see :mod:`sweep.model.compute`.
    """
    if profile is not None:
        return (load_profile(profile, t1=iteration_time),)
    names: list[str | Profile]
    if not (
        isinstance(model, (str, Profile))
        or isinstance(model, (list, tuple))
        and all(isinstance(m, (str, Profile)) for m in model)
    ):
        raise InputError(
            f"{model!r}: expected a built-in name, a comma list, a Profile or a list of them", param="model"
        )
    if isinstance(model, str):
        names = list(parse_names(model, "model", builtin_names() + tuple(TRANSFORMERS)))
    else:
        names = [model] if isinstance(model, Profile) else list(model)
    workload = {"gpu": gpu, "precision": precision, "batch": batch, "seq_len": seq_len}
    given = {k: v for k, v in workload.items() if v is not None}
    if given and not any(isinstance(n, str) and n in TRANSFORMERS for n in names):
        raise InputError(
            f"{_text(next(iter(given.values())))}: only for transformer models "
            f"({', '.join(TRANSFORMERS)}); the CNN profiles are the paper's V100 runs "
            f"(--iteration-time scales them)",
            param=next(iter(given)),
        )
    found: list[Profile] = []
    for n in names:
        if isinstance(n, str) and n in TRANSFORMERS:
            found += _workloads(n, given)
        else:
            found.append(builtin_profile(n) if isinstance(n, str) else n)
    models = tuple(found)
    if iteration_time is None:
        return models
    if isinstance(iteration_time, bool) or not (
        isinstance(iteration_time, (int, float)) and MIN_SECONDS <= iteration_time <= MAX_SECONDS
    ):
        shown = show(iteration_time) if isinstance(iteration_time, (int, float)) else repr(iteration_time)
        raise InputError(f"{shown}: must be a number of seconds in [1e-6, 1e4]", param="iteration_time")
    return tuple(p.scaled_to(iteration_time, "--iteration-time") for p in models)


def _table(value: object) -> Table:
    """A ([T] bytes, [T] seconds) pair, checked as a ``bytes,seconds`` file is."""
    try:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ValueError
        nbytes, seconds = (np.asarray(v, np.float64) for v in value)
    except (TypeError, ValueError):
        raise InputError(
            f"{str(value)[:60]}: expected ([bytes, ...], [seconds, ...]) or a bytes,seconds file",
            param="reduce_table",
        ) from None
    if nbytes.ndim != 1 or nbytes.shape != seconds.shape or nbytes.size == 0:
        raise InputError(
            "expected two flat sequences of the same length, at least one row", param="reduce_table"
        )
    if not (
        np.all(np.isfinite(nbytes))
        and np.all(np.isfinite(seconds))
        and np.all(nbytes >= 0)
        and np.all(seconds >= 0)
        and np.all(np.diff(nbytes) > 0)
        and np.all(seconds <= MAX_SECONDS)
    ):
        raise InputError(
            f"bytes must increase, seconds be in [0, {MAX_SECONDS:g}], all finite", param="reduce_table"
        )
    return nbytes, seconds


def _reductions(value: object) -> Any:
    if (
        value is not None
        and not isinstance(value, str)
        and not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))
    ):
        raise InputError(f"{value!r}: expected OP:DIM[,DIM...] text or a list of them", param="reduce")
    return value


def _text(value: object) -> str:
    return (
        value
        if isinstance(value, str)
        else ",".join(map(str, value))
        if isinstance(value, (list, tuple))
        else str(value)
    )


def _values(value: object, param: str, integer: bool) -> list[Any]:
    """A comma list or a sequence -> list; integers checked."""
    items = (
        value.split(",")
        if isinstance(value, str)
        else list(value)
        if isinstance(value, (list, tuple))
        else [value]
    )
    out: list[Any] = []
    for item in items:
        item = item.strip().lower() if isinstance(item, str) else item  # presets: H100 is h100, BF16 is bf16
        if integer:
            try:
                number = float(item)  # type: ignore[arg-type]  # anything: what float() refuses is reported
            except (TypeError, ValueError):
                raise InputError(f"{item!r}: not a number", param=param) from None
            if not number.is_integer():
                raise InputError(f"{show(number)}: must be an integer", param=param)
            item = int(number)
        out.append(item)
    return out


def _workloads(name: str, given: Mapping[str, object]) -> list[Profile]:
    """Every combination of the transformer workload settings, as profiles."""
    axes = {k: _values(v, k, k in ("batch", "seq_len")) for k, v in given.items()}
    keys = list(axes)
    return [
        transformer_profile(Workload(name, **dict(zip(keys, combo))))
        for combo in itertools.product(*(axes[k] for k in keys))
    ]


@refuse_unknown_keywords
def make_grid(model: Models = DEFAULTS.model, **options: Unpack[GridOptions]) -> Grid:
    """Build a validated :class:`Grid`.

    Args:
      model: as :func:`resolve_models`; ``gpu``, ``precision``, ``batch``, ``seq_len``
        set a transformer's workload there.
      **options: the keys of :class:`GridOptions` (each documented there, with its units);
        one not given takes the registry's default (:data:`sweep.core.schema.NUMERIC_AXES`,
        :data:`sweep.core.schema.DEFAULTS`), and so does a numeric axis given as None.

    Raises:
      InputError naming the parameter, the value and the rule (also for a keyword it does not take).
    """
    o: dict[str, Any] = {**_DEFAULTS, **options}
    profiles = resolve_models(
        model, gpu=o["gpu"], precision=o["precision"], batch=o["batch"], seq_len=o["seq_len"]
    )
    if not profiles:
        raise InputError("[]: give at least one model or profile", param="model")
    following, _ = workload_defaults(profiles)
    chosen = {k: following[k] for k in FOLLOWING if o[k] is None}
    o.update(chosen)
    collective, compressor, intra_bandwidth, dtype, store = (
        o["collective"],
        o["compressor"],
        o["intra_bandwidth"],
        o["dtype"],
        o["store"],
    )
    names = [p.model for p in profiles]
    if len(set(names)) != len(names):
        raise InputError(f"{', '.join(names)}: names repeat; each profile needs its own name", param="model")
    collectives = tuple(parse_names(collective, "collective", COLLECTIVES))
    bucketings = tuple(parse_names(o["bucketing"], "bucketing", BUCKETINGS))
    values = {
        name: coerce_axis(name, spec.default if o[name] is None else o[name])
        for name, spec in NUMERIC_AXES.items()
    }
    if "fsdp" in bucketings and np.any(values["accum"] > 1):
        raise InputError(
            "fsdp with accum > 1: gradient accumulation is modelled for all-reduce schedules only",
            param="bucketing",
        )
    if (
        isinstance(intra_bandwidth, bool)
        or not isinstance(intra_bandwidth, (int, float))
        or not (math.isfinite(intra_bandwidth) and intra_bandwidth > 0)
    ):
        raise InputError(
            f"{show(intra_bandwidth) if isinstance(intra_bandwidth, (int, float)) else repr(intra_bandwidth)}"
            f": intra-node bandwidth must be a number > 0 Gbit/s",
            param="intra_bandwidth",
        )
    if dtype not in DTYPES:
        raise InputError(f"{dtype!r}: must be float32 or float64", param="dtype")
    compressors = parse_compressors(compressor)
    compresses = any(c.method != "none" for c in compressors)
    if compresses and "fsdp" in bucketings:
        named = ",".join(c.name for c in compressors)
        raise InputError(
            f"{named} with fsdp: compression is modelled for all-reduce schedules (horovod, ddp)",
            param="compressor",
        )
    for c in compressors:  # refuse now what the engine could not build later
        if c.method == "powersgd":
            for p in profiles:
                tensor_codec(c, p, codec_cost_for(p))
    factors = parse_factors(o["iterations_factor"], compressors)
    overrides = codec_overrides(o["codec_cost"])
    variables = o["variables"]
    if variables is None:
        variables = DEFAULT_VARIABLES + (("time_to_accuracy",) if compresses else ())
    kept = tuple(
        in_cube_order(parse_names(variables, "vars", tuple(VARIABLES)))
    )  # whatever order they came in
    store = store.lower() if isinstance(store, str) else store  # --store Float16 is float16
    if store is not None and store not in STORE_DTYPES:
        raise InputError(f"{store!r}: must be one of {', '.join(STORE_DTYPES)}", param="store")
    table: Table
    reduce_table = o["reduce_table"]
    if reduce_table is None:
        table, source = default_table(), "default V100 model"
    elif isinstance(reduce_table, (str, Path)):
        table, source = read_table(reduce_table), str(reduce_table)
    else:
        table, source = _table(reduce_table), "user table"
    return Grid(
        profiles,
        collectives,
        bucketings,
        values,
        table,
        source,
        float(intra_bandwidth),
        dtype,
        kept,
        store or "",
        compressors,
        factors,
        overrides,
        parse_reductions(_reductions(o["reduce"])),
        "; ".join(filter(None, (assumed_text(profiles, chosen), _nics_unused(collectives, values)))),
    )


def _nics_unused(collectives: Sequence[str], values: Mapping[str, np.ndarray]) -> str:
    """What the sweep says when --nics-per-node meets a collective that has no use for it (else "")."""
    flat = [c for c in collectives if c in ONE_LINK_PER_WORKER]
    if not flat or np.all(values["nics_per_node"] == 1):
        return ""
    return (
        f"{', '.join(flat)}: one link of --bw per GPU, as in the paper, whatever --nics-per-node "
        f"(it applies to hierarchical, nccl-ring and nccl-tree)"
    )
