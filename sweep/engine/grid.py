"""A sweep grid: the profiles, the axes and the fixed settings of one sweep.

The grid's dimension order is :data:`sweep.core.schema.DIMS` and is the cube's.
:func:`make_grid` is the typed specification of a sweep that the Python API
(:func:`sweep.evaluate`, :func:`sweep.solve`) and the CLI share: one keyword per
numeric axis and per setting, each a key of :class:`GridOptions` (PEP 692 ``**options``,
defined once and shared with ``evaluate`` through :class:`~sweep.engine.grid_options.SweepOptions`), each
defaulting to the schema's registry.

Those keywords are declared in :mod:`sweep.engine.grid_options`; the profiles a grid runs on,
and the settings that follow their workload, come from :mod:`sweep.engine.workloads`.
"""

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from netsweep_jax.sweep.core.axes import NUMERIC_AXES, show
from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.families import DATA_PARALLEL, Family
from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords
from netsweep_jax.sweep.core.layout_axes import is_nccl, uses_nccl
from netsweep_jax.sweep.core.schema import (
    BUCKETINGS,
    COLLECTIVES,
    DEFAULT_VARIABLES,
    DEFAULTS,
    DIMS,
    VARIABLES,
    assumed_line,
)
from netsweep_jax.sweep.core.values import coerce_axis, parse_names, real_scalar
from netsweep_jax.sweep.core.wording import counted, exact_text
from netsweep_jax.sweep.engine.grid_options import GridOptions, Models, Table
from netsweep_jax.sweep.engine.outputs import check_dtype, kept_outputs, store_dtype
from netsweep_jax.sweep.engine.reductions import Reduction, parse_reductions
from netsweep_jax.sweep.engine.workloads import (
    FOLLOWING,
    PAPER_GPU,
    assumed_text,
    gpu_of,
    is_transformer,
    own_gpu,
    own_links,
    own_table,
    priced_gpu,
    profiles_said,
    refuse_mixed_stacks,
    resolve_models,
    takes_workload,
    workload_defaults,
    workload_reduce_table,
)
from netsweep_jax.sweep.model.collectives import NCCL_ENGINE, ONE_LINK_PER_WORKER
from netsweep_jax.sweep.model.compressors import (
    NONE,
    Compressor,
    codec_cost_for,
    codec_overrides,
    parse_compressors,
    parse_factors,
    tensor_codec,
)
from netsweep_jax.sweep.model.compute import GPUS, MIB, die, host_system
from netsweep_jax.sweep.model.fabric_constants import UTILIZATION_ON_ETA, FabricConstants
from netsweep_jax.sweep.model.fabrics import (
    FABRICS,
    FABRICS_HELP,
    FabricPreset,
    SweepFabric,
    fabric_preset,
    is_preset,
    oversubscriptions,
    sweep_fabric,
)
from netsweep_jax.sweep.model.fusion import DDP_BUCKET_CAP, DDP_FIRST_BUCKET, fsdp_units
from netsweep_jax.sweep.model.nccl_fabric import ARCH
from netsweep_jax.sweep.model.nccl_forcing import NEEDS, domain_nics, forced_algorithm, nowhere, runs
from netsweep_jax.sweep.model.profile import MAX_SECONDS, Profile
from netsweep_jax.sweep.model.vector_add import read_table

# Every key of GridOptions -> its default: the registries' where they hold one, else None (not given).
_REGISTRY = {**dataclasses.asdict(DEFAULTS), **{name: spec.default for name, spec in NUMERIC_AXES.items()}}
_DEFAULTS: dict[str, Any] = {key: _REGISTRY.get(key) for key in GridOptions.__annotations__}
_DEFAULTS.update(dict.fromkeys(FOLLOWING))


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
      assumed: what the sweep assumed that the user did not set (:func:`~sweep.engine.workloads.assumed_text`; empty: nothing
        beyond the paper's defaults).
      fabric: ``--fabric``'s constants and tier for NCCL's own collective (None: the shipped fit's constants, each
        host its own NVLink domain, no tier above the hosts).
      own_gpu: what each profile takes of its own GPU where the sweep's GPUs differ and the user set none of it:
        ``"intra"`` its NVLink (``intra_bandwidth`` then the slowest's, a record), ``"reduce"`` its reduce table
        (``reduce_table`` the slowest's); :meth:`intra_of`, :meth:`table_of`.
    """

    family: ClassVar[Family] = DATA_PARALLEL
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
    fabric: SweepFabric | None = None
    own_gpu: tuple[str, ...] = ()

    def intra_of(self, model: int) -> float:
        """The intra-node bandwidth (Gbit/s) profile ``model`` is priced at: its GPU's NVLink where the sweep's
        GPUs differ and no ``--intra-bw`` was given (a hunt: an H100 beside a V100 took the V100's), else the
        sweep's one."""
        return own_links(self.profiles[model]) if "intra" in self.own_gpu else self.intra_bandwidth

    def intra_per_model(self) -> npt.NDArray[np.float64] | float:
        """The intra-node bandwidth as a cube and a dataset record it: one value per profile, in the model dim's
        order, where each takes its own GPU's (as compare's dataset holds it), else the sweep's one."""
        if "intra" not in self.own_gpu:
            return self.intra_bandwidth
        return np.array([self.intra_of(i) for i in range(len(self.profiles))])

    def table_of(self, model: int) -> Table:
        """The reduce-cost table profile ``model`` is priced with: its GPU's model table where the sweep's GPUs
        differ and no table was given, else the sweep's one."""
        return own_table(self.profiles[model]) if "reduce" in self.own_gpu else self.reduce_table

    def label(self) -> str:
        """The profiles, as an output's default name holds them."""
        return "+".join(p.model for p in self.profiles)

    def said_attrs(self) -> dict[str, float | str]:
        """What a cube or a dataset of this sweep says it assumed: ``assumed`` (what the workload's defaults chose
        that the user did not set) and the fabric's attributes, each only where there is one (so that earlier
        cubes' attributes hold)."""
        return {
            **({"assumed": self.assumed} if self.assumed else {}),
            **(self.fabric.attrs() if self.fabric else {}),
        }

    def cube_attrs(self) -> dict[str, Any]:
        """What a cube of this sweep says of it besides its coordinates and profiles: the intra-node bandwidth,
        the reduce-cost table's source, what was assumed, and what the compressor dim's results rest on."""
        attrs: dict[str, Any] = {
            "intra_bandwidth_gbps": self.intra_per_model(),
            "reduce_cost_source": self.reduce_source,
        }
        attrs.update(self.said_attrs())
        if self.compresses:
            attrs["iterations_factor"] = ",".join(
                f"{name}={factor:g}" for name, factor in self.factors.items()
            )
            attrs["codec_cost"] = (
                json.dumps(self.codec_overrides)
                if self.codec_overrides
                else "GPU preset of each profile (sweep/model/compressors.py)"
            )
        return attrs

    def variable_attrs(self, name: str) -> dict[str, str]:
        """``units`` and ``long_name`` of an output variable."""
        units, long_name = VARIABLES[name]
        return {"units": units, "long_name": long_name}

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
            # each profile's GPU sets its links then (a review: a profile file's device edited between a run and
            # its --resume would mix blocks priced two ways); earlier cubes' fingerprints kept
            **({"own_gpu": [*self.own_gpu, *map(priced_gpu, self.profiles)]} if self.own_gpu else {}),
            "dtype": self.dtype,
            "variables": list(self.variables),
            "store": self.store_dtype,
        }
        if self.reduction is not None:
            r = self.reduction
            payload["reduction"] = [
                r.kind,
                list(r.dims),
                list(r.labelled),
            ]  # beside the reduce table, not over it
        if self.fabric is not None:  # likewise
            payload["fabric"] = {**self.fabric.attrs(), "constants": list(self.fabric.constants.stated())}
        if self.compresses:  # absent otherwise, so the fingerprints of earlier cubes hold
            payload["compression"] = {
                "compressors": [c.name for c in self.compressors],
                "factors": self.factors,
                "codec": self.codec_overrides,
                "shapes": [repr(p.shape) for p in self.profiles],
            }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


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


@refuse_unknown_keywords
def make_grid(model: Models = DEFAULTS.model, **options: Unpack[GridOptions]) -> Grid:
    """Build a validated :class:`Grid`.

    Args:
      model: as :func:`~sweep.engine.workloads.resolve_models`; ``gpu``, ``precision``, ``batch``, ``seq_len``
        set a transformer's workload there.
      **options: the keys of :class:`GridOptions` (each documented there, with its units);
        one not given takes the registry's default (:data:`sweep.core.axes.NUMERIC_AXES`,
        :data:`sweep.core.schema.DEFAULTS`), and so does a numeric axis given as None.

    Raises:
      InputError naming the parameter, the value and the rule (also for a keyword it does not take).
    """
    o: dict[str, Any] = {**_DEFAULTS, **options}
    choice = fabric_choice(o["fabric"])
    said = _fabric_settings(choice, model, o, options)  # a preset's cluster where not given; o updated
    workload = {k: o[k] for k in ("gpu", "precision", "batch", "seq_len")}
    profiles = resolve_models(model, iteration_time=o["iteration_time"], **workload)
    if not profiles:
        raise InputError("[]: give at least one model or profile", param="model")
    following, _ = workload_defaults(profiles)
    chosen = {k: following[k] for k in FOLLOWING if o[k] is None}
    refuse_mixed_stacks(profiles, chosen)
    o.update(chosen)
    collective, compressor, intra_bandwidth, dtype, store = (
        o[k] for k in ("collective", "compressor", "intra_bandwidth", "dtype", "store")
    )
    _refuse_repeated_names(profiles)
    collectives = tuple(parse_names(collective, "collective", COLLECTIVES))
    fabric = _sweep_fabric(choice, o["oversubscription"], collectives, profiles)
    bucketings = tuple(parse_names(o["bucketing"], "bucketing", BUCKETINGS))
    values = {
        name: coerce_axis(name, spec.default if o[name] is None else o[name])
        for name, spec in NUMERIC_AXES.items()
    }
    _check_fsdp(bucketings, values, profiles)
    check_intra_bandwidth(intra_bandwidth)
    dtype = check_dtype(dtype)
    compressors = _compressors(compressor, bucketings, profiles)
    compresses = any(c.method != "none" for c in compressors)
    forced = _check_nccl_engine(collectives, profiles, _nccl_kinds(bucketings, compressors), values, fabric)
    factors = parse_factors(o["iterations_factor"], compressors)
    default = DEFAULT_VARIABLES + (("time_to_accuracy",) if compresses else ())
    kept = _factors_read(kept_outputs(DATA_PARALLEL, o["variables"], default), o["iterations_factor"])
    store = store_dtype(store)
    table, source, reduce_said = _reduce_table(o["reduce_table"], profiles)
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
        store,
        compressors,
        factors,
        codec_overrides(o["codec_cost"]),
        parse_reductions(_reductions(o["reduce"]), DATA_PARALLEL),
        assumed_line(
            (
                assumed_text(profiles, chosen, collectives=collectives),
                nics_said(
                    collectives,
                    profiles,
                    options.get("nics_per_node") is None and choice is None,
                    values["gpus_per_node"],
                ),
                reduce_said,
                *profiles_said(profiles, compresses, bucketings, values),
                factors_said(compresses, kept, o["iterations_factor"]),
                *_given_unread(collectives, bucketings, values, options),
            )
            + _fabric_said(collectives, fabric, (*said, forced, _spine_said(fabric, values)))
        ),
        fabric,
        own_gpu(profiles, "intra_bandwidth" in chosen, o["reduce_table"] is None),
    )


def _factors_read(kept: tuple[str, ...], factors: object) -> tuple[str, ...]:
    """``kept``, the outputs a sweep keeps; ``--iterations-factor`` refused where ``time_to_accuracy``, the one
    output it enters, is not among them (a hunt: given with ``--vars scaling_factor`` it changed nothing, in
    silence)."""
    if factors and "time_to_accuracy" not in kept:  # {}: every factor 1, as compare gives it
        raise InputError(
            "enters time_to_accuracy only, which --vars leaves out: add it, or leave this option out",
            param="iterations_factor",
        )
    return kept


def factors_said(compresses: bool, kept: Sequence[str], factors: object) -> str:
    """What a compressing sweep's ``time_to_accuracy`` assumed where ``--iterations-factor`` is not given: every
    compressor needs as many iterations as none (a hunt: random-k at 1% density read as 4x faster to accuracy,
    its slower convergence unsaid)."""
    if not compresses or "time_to_accuracy" not in kept or factors is not None:
        return ""
    return (
        "time_to_accuracy: --iterations-factor 1 for every compressor (as many iterations as none: the time per "
        "step is compared, not the time to an accuracy)"
    )


def _refuse_repeated_names(profiles: Sequence[Profile]) -> None:
    """Refuse profiles of one name: the model dim names each once."""
    names = [p.model for p in profiles]
    if len(set(names)) != len(names):
        raise InputError(f"{', '.join(names)}: names repeat; each profile needs its own name", param="model")


FSDP_ACCUMULATION = "fsdp with accum > 1: gradient accumulation is modelled for all-reduce schedules only"


def _check_fsdp(
    bucketings: Sequence[str], values: Mapping[str, np.ndarray], profiles: Sequence[Profile]
) -> None:
    """Refuse FSDP where it cannot be priced, before anything is said (a profile without forward times was
    refused after the assumed line, two lines: a hunt): gradient accumulation, a profile with no forward times."""
    if "fsdp" not in bucketings:
        return
    if np.any(values["accum"] > 1):
        raise InputError(FSDP_ACCUMULATION, param="bucketing")
    for profile in profiles:
        fsdp_units(profile)  # refuses a profile without forward times


def check_intra_bandwidth(intra_bandwidth: Any) -> None:
    """Refuse an intra-node bandwidth (Gbit/s) outside ``--bw``'s range (:data:`NUMERIC_AXES`' bandwidth, whose
    bounds keep every result finite: 1e-300 gave NaN and inf)."""
    axis = NUMERIC_AXES["bandwidth"]
    value = real_scalar(intra_bandwidth)  # NumPy's numbers too
    if value is None or not (math.isfinite(value) and axis.low <= value <= axis.high):
        raise InputError(
            f"{show(value) if value is not None else repr(intra_bandwidth)}"
            f": intra-node bandwidth must be a number from {show(axis.low)} to {show(axis.high)} Gbit/s",
            param="intra_bandwidth",
        )


def fabric_choice(value: Any) -> FabricPreset | FabricConstants | None:
    """``fabric``'s preset (a name in any case, or the preset) or a fabric file's constants, or None (the one
    reading of a data-parallel ``fabric``: make_grid's and compare's)."""
    if value is None or isinstance(value, (FabricPreset, FabricConstants)):
        return value
    if isinstance(value, str) and is_preset(value):
        return fabric_preset(value)
    raise InputError(
        f"{str(value)!r}: not a fabric preset ({FABRICS_HELP}); a fabric file's constants: "
        "sweep.io.fabric_file.read_fabric(path)",
        param="fabric",
    )


# The data-parallel axes a fabric preset sets where they are not given (FabricPreset.settings()' keys), and how the
# assumed line names each.
PRESET_AXES = {"gpus_per_node": "--gpus-per-node", "nics_per_node": "--nics-per-node", "bandwidth": "--bw"}


def _fabric_settings(
    choice: FabricPreset | FabricConstants | None,
    model: Models,
    o: dict[str, Any],
    given: Mapping[str, Any],
) -> list[str]:
    """Set in ``o`` what a fabric sets that the user did not give (``given``: the caller's keywords): a preset's
    GPUs and NICs a node, NIC rate and GPU for transformer workloads (:func:`fabric_gpu`), a fabric file's hosts
    (their NICs and GPUs) where it records them, and NCCL's collective where no collective is given; the phrases the assumed line says
    of them."""
    if choice is None:
        return []
    said = []
    if given.get("collective") is None:
        o["collective"] = NCCL_ENGINE
        said.append("--collective nccl (--fabric implies it)")
    # A preset's cluster, or the hosts a fabric file was fitted on where it records them: where not given.
    cluster, preset = choice.settings(), isinstance(choice, FabricPreset)
    whose = whose_nics = "the fabric's" if preset else "the fabric file's hosts"
    other_host = given.get("gpus_per_node") is not None and given.get("nics_per_node") is None
    if other_host:
        # a host of other GPUs than the fabric's: its own NICs (a preset's domain: SweepFabric.domain_of, per host
        # size)
        per_node = coerce_axis("gpus_per_node", given["gpus_per_node"])
        built = choice.host_for(per_node, ",".join(show(v) for v in per_node), "--nics-per-node")
        if built:
            cluster["nics_per_node"] = built["nics_per_node"]
            whose_nics = "the fabric's NICs a GPU, on hosts of --gpus-per-node"
    for name, flag in PRESET_AXES.items():
        if name in cluster and given.get(name) is None:
            o[name] = cluster[name]
            said.append(f"{flag} {cluster[name]:g} ({whose_nics if name == 'nics_per_node' else whose})")
    o["gpu"] = fabric_gpu(choice, model, given.get("gpu"))
    return said


def fabric_gpu(choice: Any, model: Any, gpu: Any) -> Any:
    """The transformer workload's GPU: ``gpu`` where given, else a fabric preset's hosts' or the GPU preset a fabric
    file's logs ran on (``choice``) where ``model`` names a transformer (the assumed line's ``model on GPU`` and
    the fabric's phrase say it), else None."""
    own = choice.gpu if choice is not None else ""  # a preset's hosts' GPU, or a file's: "" where none
    if gpu is None and own and takes_workload(model):
        return own
    return gpu


def _sweep_fabric(
    choice: FabricPreset | FabricConstants | None,
    oversubscription: Any,
    collectives: Sequence[str],
    profiles: Sequence[Profile],
) -> SweepFabric | None:
    """The sweep's :class:`~sweep.model.fabrics.SweepFabric` (None without ``fabric``); refused where no
    collective would read it, with ``oversubscription`` alone, or a preset built of another GPU than a
    profile's (its NVLink, NICs and NCCL's tables would be a mix of two systems)."""
    spines = oversubscriptions(oversubscription, choice)
    if len(spines) != 1:  # a cube holds one (sweep plan plans each value of a large model's list)
        raise InputError(f"{oversubscription}: give one value", param="oversubscription")
    if choice is None:
        return None
    if not uses_nccl(collectives):  # its constants are NCCL's collective's: never silently unused
        raise InputError(
            f"{','.join(collectives)}: a --fabric prices NCCL's own collective; add nccl (a --fabric without "
            "--collective implies it)",
            param="collective",
        )
    if isinstance(choice, FabricPreset) and choice.gpu:
        for p in profiles:
            gpu = gpu_of(p)
            if not choice.built_of(gpu):
                # A built-in CNN is the paper's V100 run, which no --gpu moves (a hunt: told to give --gpu, which a
                # CNN then refused)
                # (each option as the front end spells it: the API's gpu= and model=, a review)
                remedy = (
                    f"give {{0}} {choice.gpu}"
                    if is_transformer(p)
                    else "the built-in CNNs are the paper's V100 runs: give transformers, as {1} bert-large,gpt2-xl"
                )
                raise InputError(
                    f"{{2}} {literal(choice.name)}: built of {choice.gpu} hosts; {literal(p.model)} runs on "
                    f"{literal(repr(gpu or p.device))} ({remedy}; a profile of your own says its GPU in a JSON "
                    'profile\'s "device", such as "NVIDIA H100 80GB HBM3", which a CSV cannot)',
                    names=("gpu", "model", "fabric"),
                )
    fabric = sweep_fabric(choice, spines[0] if oversubscription is not None else None)
    # A file is taken for any GPU, but said (a hunt), a file of a GPU with no preset (a GH200) too (a review).
    if isinstance(choice, FabricConstants) and (taken := choice.taken_for(priced_gpu(p) for p in profiles)):
        fabric = dataclasses.replace(fabric, describe=f"{fabric.describe}; {taken}")
    others = [c for c in collectives if not is_nccl(c)]
    if (
        others
    ):  # the cluster's GPUs, NICs and rate are every collective's; the tier and constants nccl's alone
        said = f"{fabric.describe}; its NVLink domain, spine, SHARP and constants price nccl alone, not {','.join(others)}"
        fabric = dataclasses.replace(fabric, describe=said)
    return fabric


def _nccl_kinds(bucketings: Sequence[str], compressors: Sequence[Compressor]) -> tuple[tuple[bool, str], ...]:
    """The kinds of NCCL collective a data-parallel sweep runs, as (an all-reduce?, how the sweep names it): a
    bucket's all-reduce, FSDP's all-gather and reduce-scatter, and the all-gather of a compressor whose payloads
    cannot be summed (top-k, signSGD)."""
    kinds = {(True, "") if b != "fsdp" else (False, " (fsdp)") for b in bucketings}
    gathers = [c.name for c in compressors if c.gather]
    if gathers and any(b != "fsdp" for b in bucketings):
        kinds.add((False, f" ({', '.join(gathers)}'s all-gather)"))
    if len(kinds) > 1 and (True, "") in kinds:  # named beside the others (a hunt read two alike)
        kinds = kinds - {(True, "")} | {(True, " (all-reduce)")}
    return tuple(sorted(kinds, reverse=True))


def _check_nccl_engine(
    collectives: Sequence[str],
    profiles: Sequence[Profile],
    kinds: Sequence[tuple[bool, str]],
    values: Mapping[str, np.ndarray],
    fabric: SweepFabric | None,
) -> str:
    """Refuse what NCCL's own collective (``nccl``) cannot price: a profile on a GPU without a preset (its
    architecture picks NCCL's tables: never a guess), a fabric's hosts of more GPUs than its NVLink domain
    (:func:`_check_hosts_on_nvlink`). Returns what the sweep says of an algorithm it forces where
    NCCL cannot run it (:func:`_forced_fallbacks`; '' where none falls back)."""
    if not uses_nccl(collectives):
        return ""
    unknown = [p for p in profiles if gpu_of(p) is None]
    if unknown:
        raise InputError(
            f"nccl: {unknown[0].model} ran on {unknown[0].device!r}, which has no GPU preset (sweep models); NCCL's "
            "collective (which --fabric implies) needs the GPU's architecture and NVLink: say the profile's GPU in a "
            'JSON profile\'s "device" (such as "NVIDIA H100 80GB HBM3"; a CSV has none), or use nccl-ring or '
            "nccl-tree without a fabric",
            param="collective",
        )
    _check_hosts_on_nvlink(values, fabric)
    forced = [c for c in collectives if forced_algorithm(c) is not None]  # a protocol forced: every one runs
    if not forced:
        return ""
    gpus = sorted({str(gpu_of(p)) for p in profiles})
    # each GPUs-a-node's host counts grouped once, for every algorithm forced; its domain as the kernel's
    groups = {g: _domains(values["nodes"], g, _domain(fabric, g)) for g in values["gpus_per_node"]}
    return assumed_line(
        _forced_fallbacks(c, gpus, kinds, values["gpus_per_node"], values["nics_per_node"], groups, fabric)
        for c in forced
    )


def _forced_fallbacks(
    collective: str,
    gpus: Sequence[str],
    kinds: Sequence[tuple[bool, str]],
    per_node: np.ndarray,
    nics: np.ndarray,
    groups: Mapping[Any, Any],
    fabric: SweepFabric | None,
) -> str:
    """Where ``collective`` (``nccl:ALGO``) forces an algorithm NCCL cannot run on a sweep's workers (the kernel
    prices NCCL's own choice there, :mod:`sweep.model.nccl_forcing`): the phrase saying so ('' where it runs on
    every GPU, node count and GPUs a node). The workers' NVLink domain is the fabric's, else each host's; ``kinds``: the collectives it runs (:func:`_nccl_kinds`); ``groups``: each of
    ``per_node`` (GPUs a node)'s :func:`_domains`; ``nics``: the sweep's NICs a node (NVLS's heads across domains,
    one a NIC)."""
    name = forced_algorithm(collective)
    assert name is not None, "the caller passes forced algorithms only"
    misses: list[str] = []
    cases = count = 0
    for gpu, g, k, (all_reduce, kind) in itertools.product(gpus, per_node, nics, kinds):
        hosts, pairs, where = groups[g]
        ok = np.array([
            runs(name, all_reduce=all_reduce, arch=ARCH[die(gpu)], nvswitch=_domain(fabric, g) > 1,
                 gpus_per_domain=float(per), domains=2.0 if multi else 1.0, collnet=bool(fabric and fabric.collnet),
                 domain_nics=domain_nics(k, per / g, 1.0))
            for multi, per in pairs
        ], bool)  # fmt: skip
        missed = hosts[~ok[where]]
        cases, count = cases + hosts.size, count + missed.size
        with_nics = f" with {counted(int(k), 'NIC')}" if len(nics) > 1 else ""
        misses += [
            f"{counted(int(h), 'node')} of {counted(int(g), gpu)}{with_nics}{kind}"
            for h in missed[: max(0, 3 - len(misses))]
        ]
    if not misses:
        return ""
    needs = f"(it needs {NEEDS[name]})"
    if count == cases:
        return nowhere(collective, name)
    more = f" and {count - 3} more" if count > 3 else ""
    return f"{collective} cannot run on {', '.join(misses[:3])}{more} {needs}: NCCL's own choice there"


def _check_hosts_on_nvlink(values: Mapping[str, np.ndarray], fabric: SweepFabric | None) -> None:
    """Refuse a fabric's hosts of more GPUs than its NVLink domain builds for them (16 H100s a host on a DGX H100
    SuperPOD, NVLink of 8): NCCL's node is a host or a multi-host domain, on NVLink, and the kernel had priced each
    16-GPU host as one on NVLink, 25% cheaper than its two islands (a review)."""
    if fabric is None:
        return
    for g in values["gpus_per_node"]:
        if (domain := _domain(fabric, float(g))) < g:
            raise InputError(
                f"{float(g):g}: hosts of more GPUs than the fabric {fabric.label}'s NVLink domain of {domain:g} "
                "for hosts of these GPUs; NCCL's pricing takes a host's GPUs on one NVLink domain: give "
                f"--gpus-per-node of at most {domain:g}, or drop --fabric for nccl-ring (--intra-bw prices the host)",
                param="gpus_per_node",
            )


def _domain(fabric: SweepFabric | None, g: float) -> float:
    """GPUs an NVLink domain on hosts of ``g`` GPUs, as the kernel's inputs take it (:meth:`SweepFabric.domain_of`)."""
    return float(fabric.domain_of(g)) if fabric is not None else float(g)


def _domains(nodes: np.ndarray, g: float, domain: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The node counts of ``g`` GPUs a host that run a collective (not one GPU alone), the distinct (spans several
    NVLink domains of ``domain`` GPUs, GPUs a domain) pairs among them (what NCCL's rules read: decided once per
    pair, as a sweep may hold 10^7 node counts), and each count's pair."""
    hosts = nodes[nodes * g > 1]
    domains = np.ceil(hosts / np.maximum(np.minimum(domain, g * hosts) / g, 1.0))
    pairs, where = np.unique(
        np.stack([domains > 1, g * hosts / domains], axis=1), axis=0, return_inverse=True
    )
    return hosts, pairs, where.ravel()


def _compressors(
    compressor: Any, bucketings: Sequence[str], profiles: Sequence[Profile]
) -> tuple[Compressor, ...]:
    """The parsed compressors, refusing now what the engine could not build later (compression with FSDP, a
    PowerSGD rank a profile's tensors cannot take)."""
    compressors = parse_compressors(compressor)
    if any(c.method != "none" for c in compressors) and "fsdp" in bucketings:
        named = ",".join(c.name for c in compressors)
        raise InputError(
            f"{named} with fsdp: compression is modelled for all-reduce schedules (horovod, ddp)",
            param="compressor",
        )
    for c in compressors:
        if c.method == "powersgd":
            for p in profiles:
                tensor_codec(c, p, codec_cost_for(p))
    return compressors


def _reduce_table(reduce_table: Any, profiles: Sequence[Profile]) -> tuple[Table, str, str]:
    """(the reduce-cost table, where it came from, what the sweep says of it): the default model at the
    workload's GPU's memory (:func:`~sweep.engine.workloads.workload_reduce_table`), a file, or the user's
    arrays."""
    if reduce_table is None:
        return workload_reduce_table(profiles)
    if isinstance(reduce_table, (str, Path)):
        return read_table(reduce_table), str(reduce_table), ""
    return _table(reduce_table), "user table", ""


NCCL_SAID = (
    "nccl: each bucket NCCL's own all-reduce (FSDP: each unit's all-gather and reduce-scatter) with its latencies "
    "and reduction (--latency and the reduce table not read; nccl:ALGO its algorithm and nccl:PROTO its protocol "
    "forced, NCCL's choice where they cannot run the collective) at {}"
)


def _fabric_said(
    collectives: Sequence[str], fabric: SweepFabric | None, said: Sequence[str]
) -> tuple[str, ...]:
    """What the assumed line says of NCCL's own collective: :data:`NCCL_SAID` (at a fabric file's constants where
    one replaces the shipped fit's; a preset's are the shipped fit's, its phrase saying why), what a fabric set
    (``said``) and the fabric."""
    if not uses_nccl(collectives):
        return ()
    if fabric is None:
        constants = "the fabric constants validate --nccl fitted (results/validation-nccl)"
    elif fabric.preset:  # the shipped fit's, with what the preset adds (EFA's plugin latency: a hunt)
        constants = f"the preset's constants ({fabric.constants.describe()})"
    else:
        constants = "the fabric file's constants"
    return (
        NCCL_SAID.format(constants),
        *said,
        fabric.describe if fabric is not None else "",
    )


def _spine_said(fabric: SweepFabric | None, values: Mapping[str, np.ndarray]) -> str:
    """Where the spine is held at another oversubscription O than 1:1, from which O it slows the sweep's
    all-reduce at the earliest, 1 / f over its node counts wider than a leaf (f: the share of a leaf's NIC ports
    the ring sends out of it, :func:`kernels.layout_collectives.spine_load`, the kernel's own rule; a ring leaves
    a leaf at its ends only), and whether O does: a SuperPOD's 2:1 and 4:1 had changed no answer, unsaid (a hunt;
    ``sweep plan``'s tier lines say it of each layout)."""
    if fabric is None or fabric.leaf_hosts <= 0 or fabric.rail_only or fabric.oversubscription == 1:
        return ""
    from netsweep_jax.kernels import nccl
    from netsweep_jax.kernels.layout_collectives import spine_load

    leaf, over = fabric.leaf_hosts, exact_text(fabric.oversubscription)
    nodes = [n for n in values["nodes"] if n > leaf]
    if not nodes:
        return f"spine {over}:1: no sweep of more hosts than a leaf's {leaf:g}, so none crosses it"
    # every layout wider than a leaf in one call (one a layout had taken seconds over 2,000 node counts)
    n, g, k = (
        a.ravel() for a in np.meshgrid(nodes, values["gpus_per_node"], values["nics_per_node"], indexing="ij")
    )
    domains = np.array([fabric.domain_of(x) for x in g], np.float64)
    loads = np.asarray(spine_load(n * g, 1.0, nccl.ALL_REDUCE, n * g, g, k, domains, leaf), np.float64)
    low = float(f"{np.min(1.0 / loads):.4g}")  # as said (float32's 17.99999987 is 18: a review)
    # past 1 / f at the earliest: where NCCL's channels run below their NICs' share, later (a review)
    slows = "can slow it" if fabric.oversubscription > low else "slows none of it"
    return (
        f"spine {over}:1: the all-reduce's ring leaves a leaf at its ends only, and the spine slows it past "
        f"{low:g}:1 at the earliest, so {over}:1 {slows}"
    )


def _given_unread(
    collectives: Sequence[str],
    bucketings: Sequence[str],
    values: Mapping[str, np.ndarray],
    options: Mapping[str, Any],
) -> list[str]:
    """What the sweep says of a setting given (an axis: other than its default) that none of its schedules or
    collectives reads: --nics-per-node (:func:`_nics_unused`), Horovod's fusion, the intra-node rate (a hunt:
    --fusion-mb 1,64 under DDP's buckets gave one result twice, in silence); and of the flat collectives on one
    node of several GPUs, which price its GPUs' exchange at --bw (a hunt)."""
    said = [_nics_unused(collectives, values)]
    fusion = [
        NUMERIC_AXES[k].option
        for k in ("fusion_buffer", "fusion_timeout")
        if not np.array_equal(values[k], coerce_axis(k, NUMERIC_AXES[k].default))
    ]
    if fusion and "horovod" not in bucketings:
        ddp = f" (DDP's buckets: {DDP_FIRST_BUCKET / MIB:g} MiB, then {DDP_BUCKET_CAP / MIB:g} MiB)"
        said.append(
            f"{', '.join(fusion)}: Horovod's tensor fusion only, not read by --bucketing {','.join(bucketings)}"
            + (ddp if "ddp" in bucketings else "")
        )
    # a what-if on top of the fit: said (a hunt)
    if uses_nccl(collectives) and np.any(values["utilization"] < 1):
        said.append(UTILIZATION_ON_ETA)
    if options.get("intra_bandwidth") is not None and all(c in ONE_LINK_PER_WORKER for c in collectives):
        said.append(
            f"--intra-bw: not read by {', '.join(collectives)}, which send every byte at --bw, as in the paper "
            "(it applies to hierarchical and NCCL's collectives)"
        )
    one_node = np.any(values["nodes"] == 1) and np.any(values["gpus_per_node"] > 1)
    said.append(one_node_flat_said(collectives if one_node else ()))
    return said


def one_node_flat_said(collectives: Sequence[str], rate: str = "--bw") -> str:
    """What a sweep or a fit says where the flat ones of ``collectives`` (ring, tree, ps) price one node of
    several GPUs: its GPUs' exchange at --bw, as the paper prices it (a hunt: one node of 8 GPUs read as
    network-bound at --bw 1, "between nodes" by every label; calibrate's one-node rows pulled a fitted network
    utilization, unsaid); "" where none does. ``rate``: what sets the network's rate (calibrate's: its
    bandwidth column)."""
    flat = list(dict.fromkeys(c for c in collectives if c in ONE_LINK_PER_WORKER))
    if not flat:
        return ""
    return (
        f"{', '.join(flat)} on one node: its GPUs' gradient exchange at {rate}, as the paper prices every GPU's link "
        "(hierarchical and NCCL's collectives take --intra-bw inside a node)"
    )


def nics_said(
    collectives: Sequence[str], profiles: Sequence[Profile], defaulted: bool, hosts: npt.ArrayLike
) -> str:
    """What the sweep says where its NICs are --nics-per-node's default, 1 a node, not given (nor set by a fabric),
    a collective reads them and a GPU of the sweep other than the paper's V100 comes in a system of more (else
    ""): a DGX H100's 8 NICs were priced as one, unsaid (a hunt). The NICs to give are the system's for the
    sweep's nodes of ``hosts`` GPUs (:func:`~sweep.model.compute.host_system`: a GB200 NVL72's 4 a host of 4 are
    8 for a node of 8, where the hint said 4, a hunt), and a system whose NVLink domain spans hosts is said to
    be built by its fabric preset (each node here is its own NVLink domain)."""
    if not defaulted or all(c in ONE_LINK_PER_WORKER for c in collectives):
        return ""
    # each system once, the paper's V100s' (a DGX-1 of either memory) left as the paper priced them (a review)
    keys = [k for k in dict.fromkeys(priced_gpu(p) for p in profiles) if die(k) != PAPER_GPU]
    systems = {GPUS[k].system or GPUS[k].name: k for k in keys if GPUS[k].nics > 1}
    if not systems:
        return ""
    sizes = [float(h) for h in np.unique(np.asarray(hosts, np.float64))]
    default = float(NUMERIC_AXES["nics_per_node"].default)
    phrases: list[str] = []
    racks: list[str] = []
    counts: set[int] = set()
    for name, key in systems.items():
        g = GPUS[key]
        # the system's NICs for a node of each of the sweep's sizes; said where more than the default (a node
        # of one GPU has one: nothing to give, a review), and every size's counted (one value to give for nodes
        # of 1 and 8 would give the node of one GPU 8 NICs, a review)
        nics = {h: int(host_system(g.domain, g.gpus_per_node, g.nics, h)[1]) for h in sizes}
        more = {h: n for h, n in nics.items() if n > default}
        if not more:
            continue
        counts.update(nics.values())
        at = ", ".join(f"{n} for nodes of {h:g}" for h, n in more.items())
        other = sizes != [g.gpus_per_node]  # nodes of other GPUs than its host's: their NICs said
        phrases.append(
            f"a {name} has {g.nics} NICs of {g.nic_gbps:g} Gbit/s a host of {g.gpus_per_node} GPUs"
            + f" ({at})" * other
        )
        # a rack-scale NVLink domain: each node of this sweep is its own; the system's fabric preset builds it
        racks += [
            f"--fabric {fabric} builds its NVLink domain of {g.domain} GPUs"
            for fabric, preset in FABRICS.items()
            if g.domain > g.gpus_per_node and preset.gpu == key and "sharp" not in fabric
        ]
    if not phrases:
        return ""
    # --nics-per-node is crossed with the node sizes: one count for several sizes is no sweep's
    give = (
        f"give --nics-per-node {counts.pop()} for them"
        if len(counts) == 1
        else "give each node size its own --nics-per-node, a sweep each"
    )
    return (
        f"--nics-per-node {default:g} (its default; {'; '.join(phrases)}: {give}"
        + "".join(f"; {r}" for r in racks)
        + ")"
    )


def _nics_unused(collectives: Sequence[str], values: Mapping[str, np.ndarray]) -> str:
    """What the sweep says when --nics-per-node meets a collective that has no use for it (else "")."""
    flat = [c for c in collectives if c in ONE_LINK_PER_WORKER]
    if not flat or np.all(values["nics_per_node"] == 1):
        return ""
    return (
        f"{', '.join(flat)}: one link of --bw per GPU, as in the paper, whatever --nics-per-node "
        f"(it applies to hierarchical, nccl-ring, nccl-tree and nccl)"
    )
