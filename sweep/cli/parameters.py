"""The option groups the commands share, declared once: the data-parallel model and its settings, the
numeric axes (from :mod:`sweep.core.schema`), the large-model layout options (from
:mod:`sweep.core.layout_axes`), and how the data-parallel groups become the library's arguments.
"""

import inspect
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any

import typer

from netsweep_jax.sweep.cli.options import axis_flags, hidden, param, typed_number
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, AxisSpec, TextOption
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import (
    ARCH,
    DEFAULT_COLLECTIVE,
    DEFAULT_GPU,
    DEFAULT_PRECISION,
    FLAT_COLLECTIVES,
    LAYOUT_OPTIONS,
    LAYOUT_PRECISIONS,
    MEGATRON_ALIASES,
    NCCL_COLLECTIVES,
    OWN_AXES,
    PLAN_HELD,
    PLAN_SEARCHED,
    SHARED_AXES,
    TEXT_OPTIONS,
)
from netsweep_jax.sweep.core.schema import COLLECTIVES, DEFAULTS, KERNELS
from netsweep_jax.sweep.core.sweep_settings import ONE_VALUE
from netsweep_jax.sweep.model.fabrics import FABRICS_HELP
from netsweep_jax.sweep.model.stacks import CONSTANTS, DEFAULT_STACK, FITTED_DEFAULT, STACKS_HELP

PROFILE_HELP = (
    "Profile file: .json, .csv (name,grad_bytes,backward_us) or the paper's .bk.log; replaces --model."
)
MODEL = [
    param(
        "model",
        str,
        DEFAULTS.model,
        "--model",
        help="Built-in model(s), comma-separated: resnet50, resnet101, vgg16 (the paper's), or a transformer "
        "(gpt2-xl, llama-7b, ...: sweep models lists them).",
    ),
    param(
        "profile",
        Path | None,
        None,
        "--profile",
        help=PROFILE_HELP,
    ),
    param(
        "gpu",
        str | None,
        None,
        "--gpu",
        help="Transformers: GPU preset(s), comma list: v100, v100-16, a100, a100-40, h100, h100-hbm2e, h200, b200, gb200, "
        "b300, gb300 (default: v100; a large model: h100).",
    ),
    param(
        "precision",
        str | None,
        None,
        "--precision",
        help="Transformers: fp32, amp (half-precision math, fp32 "
        "gradients), bf16 or fp16 (the model in that type: 2-byte gradients); comma list. Large "
        f"models (sweep grid): {', '.join(LAYOUT_PRECISIONS)}. Default for both: bf16; fp16 on V100s.",
    ),
    param(
        "batch",
        str | None,
        None,
        "--batch",
        help="Transformers: samples per GPU per step, comma list (default: 8).",
    ),
    param(
        "seq_len",
        str | None,
        None,
        "--seq-len",
        help="Transformers: tokens per sample, comma list (default: "
        "the model's context, e.g. 1024 for GPT-2).",
    ),
    param(
        "iteration_time",
        float | None,
        None,
        "--iteration-time",
        parser=typed_number(float),
        help="Single-GPU iteration time T1 in seconds: for --profile formats without it, or to scale a built-in "
        "model's or a profile's own compute to your GPU and batch (its gradients unchanged).",
    ),
]
COLLECTIVE_SETTINGS = [
    param(
        "collective",
        str | None,
        None,
        "--collective",
        help=f"Collectives, comma list. Both families: nccl (NCCL's own, by size) and its algorithm or protocol "
        f"forced as NCCL_ALGO or NCCL_PROTO forces it ({', '.join(NCCL_COLLECTIVES[1:])}). Data-parallel all-reduce, also "
        f"{', '.join(c for c in COLLECTIVES if c not in NCCL_COLLECTIVES)} (default {DEFAULTS.collective} for the "
        f"paper's CNNs, nccl-ring for transformers). Large models (sweep grid), also {', '.join(FLAT_COLLECTIVES)} "
        f"(default {DEFAULT_COLLECTIVE}; nccl with --fabric; not with NCCL's).",
    ),
    param(
        "bucketing",
        str | None,
        None,
        "--bucketing",
        help="Gradient buckets: horovod (fusion by --fusion-mb and "
        "--fusion-ms), ddp (PyTorch DDP: 25 MiB buckets, the first 1 MiB, no timeout), fsdp (full sharding, ZeRO-3: "
        "profiles with forward times, no compressor, --accum 1); comma list (default: horovod for the paper's CNNs, "
        "ddp for transformers).",
    ),
    param(
        "intra_bandwidth",
        float | None,
        None,
        "--intra-bw",
        parser=typed_number(float),
        help="Intra-node bandwidth, Gbit/s, for hierarchical, nccl-* and nccl (default: the NVLink of the model's GPU "
        "preset: 1200 for the paper's V100 runs, 3600 for an H100; with several GPUs, each profile its own GPU's).",
    ),
    param(
        "reduce_table",
        Path | None,
        None,
        "--reduce-cost",
        help="bytes,seconds table of one vector add (cuda_vec_add.log format); default: a V100 model, at the HBM rate of the workload's GPU.",
    ),
]
COMPRESSION = [
    param(
        "compressor",
        str,
        DEFAULTS.compressor,
        "--compressor",
        rich_help_panel="Compression",
        help="Gradient compressor(s), comma list: none, fp16 (cast), int8 (shared scale), topk:D and randomk:D "
        "(density D in (0, 1]), signsgd (1 bit, error feedback), powersgd:R (rank R >= 1). Each has its "
        "bytes, encode/decode time and pattern (top-k and sign all-gather); --ratio stays the ideal one.",
    ),
    param(
        "iterations_factor",
        str | None,
        None,
        "--iterations-factor",
        rich_help_panel="Compression",
        help="Extra iterations a compressor needs for the same accuracy, e.g. topk:0.01=1.3,powersgd:4=1.1 "
        "(default 1): time_to_accuracy is this x the iteration time over the uncompressed run's.",
    ),
    param(
        "codec_cost",
        Path | None,
        None,
        "--codec-cost",
        rich_help_panel="Compression",
        help="JSON overriding the codec throughput model: hbm_bytes_per_s, matmul_flops_per_s, "
        "memory_efficiency, matmul_efficiency, launch_s, topk_passes (default: the profile's GPU preset, at "
        "0.8 and 0.6 of its peaks, 5e-6 s a kernel launch, 4.8 passes).",
    ),
]
CALIBRATE_COLLECTIVE = param(
    "collective",
    str | None,
    None,
    "--collective",
    help=f"Data-parallel all-reduce, one of "
    f"{', '.join(c for c in COLLECTIVES if c not in NCCL_COLLECTIVES)} (default {DEFAULTS.collective} for the "
    "paper's CNNs, nccl-ring for transformers); a collective column sets it per row. NCCL's own (nccl) is "
    "fitted from its tests: --nccl-tests.",
)
"""``sweep calibrate``'s ``--collective``: the flat ones it fits (NCCL's own is refused there: its fabric is fitted
from nccl-tests logs)."""
SETTINGS = (
    COLLECTIVE_SETTINGS
    + COMPRESSION
    + [
        param("x64", bool, False, "--x64", help="Compute and store in float64 (default float32)."),
    ]
)
# sweep need's: --iterations-factor enters time_to_accuracy alone, which need never solves for; parsed, so that
# need refuses it in its own words, and left out of its --help (a hunt: listed there, then refused)
NEED_SETTINGS = [hidden(p) if p.name == "iterations_factor" else p for p in SETTINGS]
# The numeric axes' notes for a large model (sweep grid and sweep need). Its utilization is its stack's fitted
# one, not the schema's 1 (which --help shows as the default).
LARGE_MODEL_UTILIZATION = f" A large model's default: {FITTED_DEFAULT}; 1 with --collective nccl."
# A large model's cluster follows its GPU's usual system (or --fabric's), not the schema's defaults.
LARGE_MODEL_SYSTEM = " A large model's default: its GPU's system's (or --fabric's)."
LARGE_MODEL_NOTES = {
    "utilization": LARGE_MODEL_UTILIZATION,
    "nodes": " A large model: that many of its hosts (--gpus-per-node each), no default there; or --gpus.",
    **dict.fromkeys(("gpus_per_node", "nics_per_node", "bandwidth"), LARGE_MODEL_SYSTEM),
}

CACHE = [
    param(
        "compile_cache",
        bool,
        True,
        "--compile-cache/--no-compile-cache",
        help="Keep compiled kernels in a user cache directory ($NETSWEEP_CACHE_DIR, else "
        "$XDG_CACHE_HOME/netsweep/jax, else ~/.cache/netsweep/jax), "
        "so a second run of the same shapes compiles nothing.",
    )
]
KERNEL = [
    param(
        "kernel",
        str,
        DEFAULTS.kernel,
        "--kernel",
        envvar="NETSWEEP_KERNEL",
        help=f"Kernel: {', '.join(KERNELS)} (auto: Pallas on a GPU where the sweep allows it, the XLA "
        f"scan elsewhere; pallas is refused for a sweep it cannot run: FSDP, compression, time_to_accuracy, "
        "--collective nccl).",
    )
]


def _filled(text: str, presets: dict[str, str]) -> str:
    """``text`` with each ``{name}`` of ``presets`` replaced (any other brace is kept as it is)."""
    for name, value in presets.items():
        text = text.replace("{" + name + "}", value)
    return text


def _layout_params() -> list[inspect.Parameter]:
    """The layout family's options (large transformers: --arch, --tp, ...) for grid and plan, from their
    declarations: :data:`~sweep.core.layout_axes.ARCH`, the layout axes and
    :data:`~sweep.core.layout_axes.TEXT_OPTIONS`."""
    panel = "Large models (layouts)"
    presets = {"stacks": STACKS_HELP, "default_stack": DEFAULT_STACK, "fabrics": FABRICS_HELP}

    def text(name: str, spec: TextOption) -> inspect.Parameter:
        return param(
            name,
            Path | None if spec.file else str | None,
            None,
            spec.flag,
            *([spec.alias] if spec.alias else []),
            rich_help_panel=panel,
            metavar=spec.metavar or None,
            hidden=spec.hidden,
            help=_filled(spec.help, presets),
        )

    def axis(name: str, spec: AxisSpec) -> inspect.Parameter:
        if name in CONSTANTS:
            said = f"{spec.help} Default: {FITTED_DEFAULT}. "
        else:
            held = PLAN_HELD.get(name)
            searched = f" (sweep plan: {held} unless given)" if held else " (sweep plan: searched)"
            searched = searched if name in PLAN_SEARCHED else ""
            default = f" Default {spec.default}{searched}." if spec.default else searched
            said = f"{spec.help}{default} "
        one = name in ONE_VALUE
        return param(
            name,
            str | None,
            None,
            spec.option,
            *([MEGATRON_ALIASES[name]] if name in MEGATRON_ALIASES else []),
            rich_help_panel=panel,
            metavar="VALUE" if one else "VALUES",
            help=said + ("One value a sweep." if one else "Value syntax as --bw."),
        )

    return [
        text("arch", ARCH),
        *(axis(name, spec) for name, spec in OWN_AXES.items()),
        *(text(name, spec) for name, spec in TEXT_OPTIONS.items()),
    ]


LAYOUT = _layout_params()


# --fabric on compare (a data-parallel analysis: its own option, beside compare's settings).
CompareFabric = Annotated[
    str | None,
    typer.Option(
        "--fabric",
        metavar="NAME|FILE",
        help="NCCL's collectives on a fabric: a preset (sweep/model/fabrics.py; sets GPUs and NICs per node, "
        "NIC rate, GPU and --collective nccl you do not give) or a fabric file (sweep calibrate --nccl-tests; "
        "sets its logs' hosts and GPU where it records them).",
    ),
]


BUSBW = [
    param(
        "busbw",
        str | None,
        None,
        "--busbw",
        metavar="GB/S[@GBIT],...",
        help="Instead of --util: the bus bandwidth nccl-tests measured (busbw, GB/s, per link: one NIC) for the "
        "job's collective across nodes, at its message size; @GBIT: the link rate it was measured on (default: "
        "the one --bw; for a large model given no --bw, its GPU system's NICs). Utilization = 8 busbw / link; "
        "a comma list gives several (sweep compare takes one). Flat collectives only: with --collective nccl, fit nccl-tests logs "
        "(sweep calibrate --nccl-tests) and pass --fabric FILE.",
    )
]


WORKLOAD = ("gpu", "precision", "batch", "seq_len")


def models_from(settings: dict[str, Any]) -> tuple[Any, str]:
    """The profiles the MODEL options describe, and the compute dtype (pops what it uses)."""
    from netsweep_jax.sweep.engine.workloads import resolve_models

    models = resolve_models(
        settings.pop("model"),
        settings.pop("profile"),
        settings.pop("iteration_time"),
        **{k: settings.pop(k) for k in WORKLOAD},
    )
    return models, "float64" if settings.pop("x64") else "float32"


def make_grid_from(settings: dict[str, Any], **chosen: Any) -> Any:
    """The grid the model, settings and axis options describe (pops what it uses); ``chosen``:
    further keywords of :func:`~sweep.engine.grid.make_grid` (``variables``, ``store``, ``reduce``)."""
    from netsweep_jax.sweep.engine.grid import make_grid

    models, dtype = models_from(settings)
    axes = {name: settings.pop(name) for name in NUMERIC_AXES}
    compression = {p.name: settings.pop(p.name) for p in COMPRESSION}
    return make_grid(
        models,
        collective=settings.pop("collective"),
        bucketing=settings.pop("bucketing"),
        reduce_table=settings.pop("reduce_table"),
        intra_bandwidth=settings.pop("intra_bandwidth"),
        dtype=dtype,
        **compression,
        **chosen,
        **axes,
    )


def fabric_settings(
    chosen: Collection[str], settings: dict[str, Any], fabric: str | None, model: str = "model"
) -> dict[str, Any]:
    """A data-parallel sweep's ``--fabric`` (a preset or a fabric file) as make_grid takes it (``chosen``: the
    options the user gave; ``model``: the key of ``settings`` naming the models). The options a preset sets are
    left unset in ``settings`` where not given, so that make_grid's defaults are the preset's; its GPU is set
    here, where the CLI resolves the profiles."""
    from netsweep_jax.sweep.analysis import layout_jobs
    from netsweep_jax.sweep.engine.grid import PRESET_AXES, fabric_gpu

    if fabric is None:
        return {}
    choice = layout_jobs.one_fabric(fabric)
    for name in (*PRESET_AXES, "collective"):
        if name not in chosen:
            settings[name] = None
    settings["gpu"] = fabric_gpu(choice, settings[model], settings["gpu"] if "gpu" in chosen else None)
    return {"fabric": choice}


def data_parallel_options(
    settings: dict[str, Any], chosen: Collection[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A data-parallel sweep's settings from the command's (``chosen``: the options the user gave): a layout
    option set is refused (but a fabric and its spine: NCCL's collective on a fabric), the others returned, and
    the network's keywords for make_grid (the ``--fabric`` of :func:`fabric_settings`, the spine's
    oversubscription). ``settings`` itself is left as it was."""
    from netsweep_jax.sweep.analysis import layout_jobs

    layout_jobs.refuse_layout_options(settings)
    if settings.get("profile") is not None and "model" in chosen:  # --model was dropped for the file
        raise InputError(
            "and --profile name two models: give one (a profile file names its own)", param="model"
        )
    options = {name: v for name, v in settings.items() if name not in LAYOUT_OPTIONS}
    if "nics_per_node" not in chosen:  # its default, which the sweep says where a GPU's system has more NICs
        options["nics_per_node"] = None
    network = fabric_settings(chosen, options, settings["fabric"])
    return options, {**network, "oversubscription": settings["oversubscription"]}


Out = Annotated[
    Path | None, typer.Option("--out", help="Output cube (.h5). Default: results/<model>-<timestamp>.h5.")
]
Cube = Annotated[Path, typer.Argument(help="A cube from sweep grid, plan or need --out.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
# --force, declared once for the commands that write one file, and for those that write a report's files.
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")]
ReportForce = Annotated[
    bool,
    typer.Option(
        "--force", help="Overwrite the files it writes that already exist in --out (never through a link)."
    ),
]
DISTRIBUTED = [
    param(
        "distributed",
        bool,
        False,
        "--distributed",
        rich_help_panel="Several machines",
        help="Share the sweep among processes joined by jax.distributed; each writes a shard, "
        "process 0 stitches OUT. OUT's directory must be shared.",
    ),
    param(
        "coordinator",
        str | None,
        None,
        "--coordinator",
        rich_help_panel="Several machines",
        help="host:port of process 0 (default: $JAX_COORDINATOR_ADDRESS or the cluster launcher's).",
    ),
    param(
        "num_processes",
        int | None,
        None,
        "--num-processes",
        min=1,
        rich_help_panel="Several machines",
        help="Process count (default: $JAX_NUM_PROCESSES or the launcher's).",
    ),
    param(
        "process_id",
        int | None,
        None,
        "--process-id",
        min=0,
        rich_help_panel="Several machines",
        help="This process's id (default: $JAX_PROCESS_ID or the launcher's).",
    ),
    param(
        "stitch_timeout",
        float,
        600.0,
        "--stitch-timeout",
        rich_help_panel="Several machines",
        help="Process 0 gives up waiting for a shard unchanged this many seconds.",
    ),
]

DISTRIBUTED_NAMES = tuple(p.name for p in DISTRIBUTED if p.name != "distributed")
"""What ``--distributed`` reads besides itself (keywords of :func:`sweep.io.distributed.run`)."""


PLAN_MODEL = [
    param(
        "model",
        str | None,
        None,
        "--model",
        rich_help_panel="Large models (layouts)",
        help="Large-model preset(s), comma list (sweep models lists them), or give --arch.",
    ),
    param(
        "gpu",
        str,
        DEFAULT_GPU,
        "--gpu",
        rich_help_panel="Large models (layouts)",
        help="GPU preset(s), comma list; its usual system sets the NVLink domain and NICs you do not set "
        f"(default {DEFAULT_GPU}, or the --fabric preset's GPU).",
    ),
    param(
        "precision",
        str,
        DEFAULT_PRECISION,
        "--precision",
        rich_help_panel="Large models (layouts)",
        help="bf16 (fp32 gradients, as Megatron-LM; fp16 on a V100), fp16 or fp8 (H100 and newer); comma "
        "list.",
    ),
    param(
        "collective",
        str | None,
        None,
        "--collective",
        help="ring, tree, ring-or-tree (the cheaper per message: the flat ones, one bandwidth a group) or "
        "nccl (NCCL's tuner for each group as placed: algorithm and protocol by size, NVLink domain, NICs, "
        f"constants of sweep validate --nccl) and its algorithm or protocol forced as NCCL_ALGO or NCCL_PROTO "
        "forces it: "
        f"{', '.join(NCCL_COLLECTIVES[1:])}; comma list, flat and NCCL's apart. Default {DEFAULT_COLLECTIVE}; nccl "
        "with --fabric.",
    ),
    param("x64", bool, False, "--x64", help="Compute and store in float64 (default float32)."),
]
NETWORK = ("nodes", *SHARED_AXES)


def _plan_default(name: str) -> str:
    if name == "nodes":
        return "none (give --gpus, or --nodes for nodes x GPUs per node)"
    if name in ("gpus_per_node", "nics_per_node", "bandwidth"):
        return "the GPU's usual system"
    if (
        name == "utilization"
    ):  # under NCCL's pricing (--collective nccl, a --fabric) 1: eta_net is the transport's
        return f"{FITTED_DEFAULT}; 1 with --collective nccl"
    if name in CONSTANTS:
        return FITTED_DEFAULT
    return NUMERIC_AXES[name].default


PLAN_NETWORK = [
    param(
        name,
        str | None,
        None,
        *axis_flags(name, NUMERIC_AXES[name].option),
        metavar="VALUES",
        help=f"{NUMERIC_AXES[name].help} Default: {_plan_default(name)}. Value syntax as --bw.",
    )
    for name in NETWORK
]
