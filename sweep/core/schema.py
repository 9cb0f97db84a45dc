"""The vocabulary of netsweep, defined once: dims, axes, outputs, units, parameter names.

Everything that names a dimension, an axis, an output variable or a CLI option reads
it from here: the grid, the engine, the HDF5 writer and reader, the Python API and
the CLI. Pure Python (no numpy, no JAX), so the CLI can answer ``--help`` without
importing the numerical stack.

An axis is spelled the same as a CLI option's parameter, a Python API keyword, a
kernel argument and an HDF5 dimension (``bandwidth``, ``utilization``, ...). Values
are stored as the user typed them (bandwidth in Gbit/s, latency in microseconds,
fusion_buffer in MiB, fusion_timeout in ms); ``units`` says which and ``to_si``
converts them for the kernels (bit/s, s, bytes).

The numeric axes themselves are :mod:`sweep.core.axes`'s and the keyword check of the public
functions is :mod:`sweep.core.keywords`'s.
"""

import dataclasses
from collections.abc import Iterable

from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import NCCL_COLLECTIVES, OWN_AXES

# The cube's dimension order: structural dims (a new set of buckets) first, then the
# workers (nodes, GPUs and NICs a node: new collective coefficients), then the axes the kernel sweeps freely
# (one configuration each). A write block is then one contiguous hyperslab.
STRUCTURAL = ("model", "collective", "bucketing", "compressor", "fusion_buffer", "fusion_timeout")
WORKERS = ("nodes", "gpus_per_node", "nics_per_node")
INNER = ("bandwidth", "utilization", "ratio", "latency", "overhead", "slowdown", "jitter", "accum")
DIMS = STRUCTURAL + WORKERS + INNER

# Axes `need` solves for (those with a search range): the scaling factor grows with the
# GROWING ones and falls with the rest. Axes `calibrate` fits: those with fit bounds.
GROWING = ("bandwidth", "utilization", "ratio")
SOLVABLE = (
    "ratio",
    "utilization",
    "bandwidth",
    "latency",
    "overhead",
    "slowdown",
    "jitter",
)  # as `need` lists them
FITTABLE = tuple(name for name, spec in NUMERIC_AXES.items() if spec.fit is not None)
assert set(SOLVABLE) == {name for name, spec in NUMERIC_AXES.items() if spec.search is not None}
assert set(GROWING) <= set(SOLVABLE)

# nccl (NCCL's own all-reduce of each bucket), nccl:ALGO and nccl:PROTO (its algorithm or protocol forced, as
# NCCL_ALGO and NCCL_PROTO): the words and meanings of a large model's (sweep.core.layout_axes.NCCL_COLLECTIVES);
# the others flat (sweep.model.collectives).
COLLECTIVES = ("ring", "tree", "ps", "hierarchical", "nccl-ring", "nccl-tree", *NCCL_COLLECTIVES)
KERNELS = ("auto", "xla", "pallas", "pallas-interpret")
DTYPES = ("float32", "float64")
STORE_DTYPES = ("float16", "float32", "float64")
BUCKETINGS = ("horovod", "ddp", "fsdp")


@dataclasses.dataclass(frozen=True)
class Defaults:
    """The default of every setting that is not a numeric axis, defined once for the CLI,
    the Python API, the engine and ``calibrate``.

    Attributes:
      model: built-in profile.
      collective: all-reduce algorithm (:data:`COLLECTIVES`).
      bucketing: gradient bucketing schedule (:data:`BUCKETINGS`).
      intra_bandwidth: intra-node bandwidth, Gbit/s: NVLink-class (V100 DGX-1: ~150 GB/s).
      compressor: gradient compressor.
      dtype: compute dtype (:data:`DTYPES`).
      kernel: kernel choice (:data:`KERNELS`).
    """

    model: str = "resnet50"
    collective: str = "ring"
    bucketing: str = "horovod"
    intra_bandwidth: float = 1200.0
    compressor: str = "none"
    dtype: str = "float32"
    kernel: str = "auto"


DEFAULTS = Defaults()

PAPER_UTILIZATION = 0.32  # the paper saw ~32 Gbit/s in use on 100 Gbit/s links


@dataclasses.dataclass(frozen=True)
class CompareDefaults:
    """``sweep compare``'s defaults (the command's ``--help``, the Python API's and the analysis' own), defined
    once: the models, the compressors tried, the bandwidths (Gbit/s) and today's utilization (the paper's
    measured share), nodes, GPUs and NICs a node, the collective (without a fabric: each bucket a ring at NCCL's
    protocol; a fabric implies NCCL's own) and the bucketing."""

    models: tuple[str, ...] = ("resnet50", "vgg16", "bert-large", "gpt2-xl")
    compressors: tuple[str, ...] = ("fp16", "int8", "topk:0.01", "randomk:0.01", "signsgd", "powersgd:4")
    bandwidths: tuple[float, ...] = (10, 25, 100, 400)
    utilization: float = PAPER_UTILIZATION
    nodes: int = 8
    gpus_per_node: int = 8
    nics_per_node: int = 1
    collective: str = "nccl-ring"
    bucketing: str = "ddp"


COMPARE = CompareDefaults()
LONG_NAMES = {
    "model": "model profile",
    "collective": "all-reduce algorithm",
    "bucketing": "gradient bucketing schedule",
    "compressor": "gradient compressor",
}
TEXT_DIMS = tuple(LONG_NAMES)  # the dims whose coordinates are names, not numbers

# Output variables: name -> (units, long name). Their order is the cube's.
VARIABLES: dict[str, tuple[str, str]] = {
    "scaling_factor": ("1", "scaling factor (T1 / iteration time)"),
    "iteration_time": ("s", "time of one data-parallel training iteration"),
    "exposed_comm": ("s", "communication not hidden behind the backward pass"),
    "comm_time": ("s", "sum of all-reduce durations of all buckets"),
    "time_to_accuracy": ("1", "iterations factor x iteration time, relative to the same run uncompressed"),
}
# Kept unless --vars says otherwise; time_to_accuracy (a second evaluation) too when a sweep compresses.
DEFAULT_VARIABLES = tuple(VARIABLES)[:4]


# Library parameters that are not numeric axes, and the CLI options that set them.
OTHER_OPTIONS = {
    "model": "--model",
    "collective": "--collective",
    "profile": "--profile",
    "iteration_time": "--iteration-time",
    "t1": "--iteration-time",  # a profile's T1 in the API: sweep.load_profile(path, t1=)
    "intra_bandwidth": "--intra-bw",
    "reduce_table": "--reduce-cost",
    "dtype": "--x64",
    "kernel": "--kernel",
    "block_configs": "--block-configs",
    "target": "--target",
    "solve": "--solve",
    "axis": "--solve",  # need's question in the API: sweep.solve(..., axis=)
    "fit": "--fit",
    "out": "--out",
    "sel": "--sel",
    "var": "--var",
    "x": "--x",
    "y": "--y",
    "hue": "--hue",
    "busbw": "--busbw",
    "kind": "--kind",
    "profiles_dir": "--profiles-dir",
    "resume": "--resume",
    # switches a refusal advises, spelled as given in Python (sweep.io.paths.FORCE)
    "force=True": "--force",
    "resume=True": "--resume",
    "gpu": "--gpu",
    "precision": "--precision",
    "batch": "--batch",
    "seq_len": "--seq-len",
    "bucketing": "--bucketing",
    "compressor": "--compressor",
    "iterations_factor": "--iterations-factor",
    "codec_cost": "--codec-cost",
    "vars": "--vars",
    "store": "--store",
    "train": "--train",
    "nccl": "--nccl",
    "per": "--per",
    "bounds": "--bounds",
    "distributed": "--distributed",
    "coordinator": "--coordinator",
    "stitch_timeout": "--stitch-timeout",
    "num_processes": "--num-processes",
    "process_id": "--process-id",
    "arch": "--arch",
    "schedule": "--schedule",
    "recompute": "--recompute",
    "overlap": "--overlap",
    "collectives": "--collectives",
    "moe_dispatcher": "--moe-dispatcher",
    "stack": "--stack",
    "fabric": "--fabric",
    "oversubscription": "--oversubscription",
    "nccl_tests": "--nccl-tests",
    "virtual_stages": "--virtual-pipeline-model-parallel-size",
    "launch": "--launch",
    "attention": "--attention",
    "reduce": "--reduce",
    "keep": "--keep",
    "network_share": "--network-share",
    "csv": "--csv",
}


def option_of(param: str | None) -> str:
    """The CLI option that sets library parameter ``param`` (the name itself if none)."""
    if param in NUMERIC_AXES:
        return NUMERIC_AXES[param].option
    if param in OWN_AXES:
        return OWN_AXES[param].option
    return OTHER_OPTIONS.get(param, param) if param is not None else ""


def assumed_line(phrases: Iterable[str]) -> str:
    """What a sweep or a report assumed that the user did not set, as the one line every command says and every
    cube keeps (attribute ``assumed``): its phrases joined by ``; `` (empty ones dropped)."""
    return "; ".join(phrase for phrase in phrases if phrase)


def cli_message(error: InputError) -> str:
    """``error`` as the command line says it: its parameter spelled as the CLI option that sets it."""
    return error.spelled(option_of)
