"""The ``sweep`` command line: parse options, call one library function, print.

Options shared by several commands (the numeric axes, the model and its settings)
are declared once, as parameter groups derived from :mod:`sweep.core.schema`, and added
to each command's signature by :func:`options`. A domain error
(:class:`~sweep.core.errors.InputError`) becomes one line on stderr naming the CLI
option, and exit code 2, with no traceback and no output file.

Only Typer and the schema are imported at start-up; each command imports what it
needs, so ``sweep --help`` does not load JAX.
"""

import functools
import inspect
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from netsweep_jax.sweep.cli import helptext
from netsweep_jax.sweep.core.errors import DiskFull, InputError, StitchTimeout, WriteFailed
from netsweep_jax.sweep.core.interrupts import Interrupted, exit_code
from netsweep_jax.sweep.core.layout_axes import (
    ATTENTIONS,
    LAYOUT_AXES,
    LAYOUT_COLLECTIVES,
    LAYOUT_PRECISIONS,
    MEGATRON_ALIASES,
    OVERLAP_DEFAULT,
    OVERLAP_HELP,
    PLAN_SEARCHED,
    RECOMPUTE_HELP,
    SCHEDULES_HELP,
    SHARED_AXES,
)
from netsweep_jax.sweep.core.layout_axes import DIMS as LAYOUT_DIMS
from netsweep_jax.sweep.core.schema import (
    COLLECTIVES,
    DEFAULTS,
    KERNELS,
    NUMERIC_AXES,
    SOLVABLE,
    cli_message,
    option_of,
)

app = helptext.Typer(
    help="netsweep: is the network the bottleneck of my distributed training? "
    "Exact what-if sweeps of data-parallel training over bandwidth, utilization, "
    "compression ratio, node count and more.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SYNTAX = (
    "Values: a list 10,25,100; a range 1..100 (step 1), 1..100:5 (step 5), "
    "1..1000@20 (20 points), 1..1000@20log (20 log-spaced points); mix with commas."
)


def fail(message, code=2):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


def _param(name, annotation, default, *flags, help, **extra):
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, help=help, **extra)],
    )


# The cube's own names of the two options users type most, accepted beside the short ones, so that a typo
# of either (--bandwith) is answered with the option meant, not the nearest short name (--batch).
FULL_NAMES = {"bandwidth": "--bandwidth", "utilization": "--utilization"}


def axis_flags(name: str, option: str) -> tuple[str, ...]:
    """The option's flags: its short name, then the cube's name where :data:`FULL_NAMES` has one."""
    return (option, FULL_NAMES[name]) if name in FULL_NAMES else (option,)


def axis_parameters(defaults=None, help_suffix="", names=None):
    """One ``--option`` per numeric axis (or per axis in ``names``), in cube order;
    ``defaults`` overrides the schema's."""
    defaults = defaults or {}
    out = []
    for name, spec in NUMERIC_AXES.items():
        if names is not None and name not in names:
            continue
        default = defaults.get(name, spec.default)
        text = f"{spec.help}{help_suffix}" + (
            f" {SYNTAX}" if name == "bandwidth" else " Value syntax as --bw."
        )
        out.append(
            _param(name, str | None, default, *axis_flags(name, spec.option), help=text, metavar="VALUES")
        )
    return out


MODEL = [
    _param(
        "model",
        str,
        DEFAULTS.model,
        "--model",
        help="Built-in model(s), comma-separated: resnet50, resnet101, vgg16 (the paper's), or a transformer "
        "(gpt2-xl, llama-7b, ...: sweep models lists them).",
    ),
    _param(
        "profile",
        Path | None,
        None,
        "--profile",
        help="Profile file: .json, .csv (name,grad_bytes,backward_us) or the paper's .bk.log; replaces --model.",
    ),
    _param(
        "gpu",
        str | None,
        None,
        "--gpu",
        help="Transformers: GPU preset(s), comma list: v100, v100-16, a100, a100-40, h100, h100-hbm2e, h200, b200, gb200 "
        "(default: v100).",
    ),
    _param(
        "precision",
        str | None,
        None,
        "--precision",
        help="Transformers: fp32, amp (half-precision math, fp32 "
        "gradients), bf16 or fp16 (the model in that type: 2-byte gradients); comma list (default: fp32). Large "
        f"models (sweep grid): {', '.join(LAYOUT_PRECISIONS)}.",
    ),
    _param(
        "batch",
        str | None,
        None,
        "--batch",
        help="Transformers: samples per GPU per step, comma list (default: 8).",
    ),
    _param(
        "seq_len",
        str | None,
        None,
        "--seq-len",
        help="Transformers: tokens per sample, comma list (default: "
        "the model's context, e.g. 1024 for GPT-2).",
    ),
    _param(
        "iteration_time",
        float | None,
        None,
        "--iteration-time",
        help="Single-GPU iteration time T1 in seconds: for --profile formats without it, or to scale a built-in "
        "model's compute to your GPU and batch (its gradients unchanged).",
    ),
]
COLLECTIVE_SETTINGS = [
    _param(
        "collective",
        str | None,
        None,
        "--collective",
        help=f"All-reduce: {', '.join(COLLECTIVES)} (comma list; "
        f"default: {DEFAULTS.collective} for the paper's CNNs, nccl-ring for transformers). Large models (sweep grid): "
        f"{', '.join(LAYOUT_COLLECTIVES)}.",
    ),
    _param(
        "bucketing",
        str | None,
        None,
        "--bucketing",
        help="Gradient buckets: horovod (fusion by --fusion-mb and "
        "--fusion-ms), ddp (PyTorch DDP: 25 MiB buckets, the first 1 MiB, no timeout), fsdp (full sharding, ZeRO-3: "
        "profiles with forward times, no compressor, --accum 1); comma list (default: horovod for the paper's CNNs, "
        "ddp for transformers).",
    ),
    _param(
        "intra_bandwidth",
        float | None,
        None,
        "--intra-bw",
        help="Intra-node bandwidth, Gbit/s, for hierarchical and nccl-* (default: the NVLink of the model's GPU "
        "preset: 1200 for the paper's V100 runs, 3600 for an H100).",
    ),
    _param(
        "reduce_table",
        Path | None,
        None,
        "--reduce-cost",
        help="bytes,seconds table of one vector add (cuda_vec_add.log format); default: a V100 model.",
    ),
]
COMPRESSION = [
    _param(
        "compressor",
        str,
        DEFAULTS.compressor,
        "--compressor",
        rich_help_panel="Compression",
        help="Gradient compressor(s), comma list: none, fp16 (cast), int8 (shared scale), topk:D and randomk:D "
        "(density D in (0, 1]), signsgd (1 bit, error feedback), powersgd:R (rank R >= 1). Each has its "
        "bytes, encode/decode time and pattern (top-k and sign all-gather); --ratio stays the ideal one.",
    ),
    _param(
        "iterations_factor",
        str | None,
        None,
        "--iterations-factor",
        rich_help_panel="Compression",
        help="Extra iterations a compressor needs for the same accuracy, e.g. topk:0.01=1.3,powersgd:4=1.1 "
        "(default 1): time_to_accuracy is this x the iteration time over the uncompressed run's.",
    ),
    _param(
        "codec_cost",
        Path | None,
        None,
        "--codec-cost",
        rich_help_panel="Compression",
        help="JSON overriding the codec throughput model: hbm_bytes_per_s, matmul_flops_per_s, "
        "memory_efficiency, matmul_efficiency, launch_s, topk_passes (default: the profile's GPU preset).",
    ),
]
SETTINGS = (
    COLLECTIVE_SETTINGS
    + COMPRESSION
    + [
        _param("x64", bool, False, "--x64", help="Compute and store in float64 (default float32)."),
    ]
)
CACHE = [
    _param(
        "compile_cache",
        bool,
        True,
        "--compile-cache/--no-compile-cache",
        help="Keep compiled kernels in a user cache directory ($NETSWEEP_CACHE_DIR or ~/.cache/netsweep), "
        "so a second run of the same shapes compiles nothing.",
    )
]
KERNEL = [
    _param(
        "kernel",
        str,
        DEFAULTS.kernel,
        "--kernel",
        envvar="NETSWEEP_KERNEL",
        help=f"Kernel: {', '.join(KERNELS)} (auto: Pallas on a GPU where the sweep allows it, the XLA "
        f"scan elsewhere; pallas is refused for a sweep it cannot run: FSDP, compression).",
    )
]


def _layout_params() -> list[inspect.Parameter]:
    """The layout family's options (large transformers: --arch, --tp, ...), declared once for grid and plan."""
    panel = "Large models (layouts)"
    out = [
        _param(
            "arch",
            str | None,
            None,
            "--arch",
            rich_help_panel=panel,
            help="A transformer by shape: layers=96,hidden=12288,heads=96,seq=2048,vocab=51200 (also ffn=, "
            "kv_heads=, head_dim=, mlp=gelu|swiglu, experts=, top_k=, expert_ffn=, shared_experts=, "
            "moe_every=, first_dense=, tied=0|1, dropout=0|1).",
        )
    ]
    for name, spec in LAYOUT_AXES.items():
        out.append(
            _param(
                name,
                str | None,
                None,
                spec.option,
                *([MEGATRON_ALIASES[name]] if name in MEGATRON_ALIASES else []),
                rich_help_panel=panel,
                metavar="VALUES",
                help=f"{spec.help}{f' Default {spec.default}' if spec.default else ''}"
                f"{' (sweep plan: searched)' if name in PLAN_SEARCHED else ''}{'.' if spec.default else ''} "
                "Value syntax as --bw.",
            )
        )
    out += [
        _param(
            "attention",
            str | None,
            None,
            "--attention",
            rich_help_panel=panel,
            help=f"Attention kernel(s): {', '.join(ATTENTIONS)} (flash: scores never stored, today's stacks; "
            "unfused: stored, as Megatron-LM in 2021-22); comma list (default flash).",
        ),
        _param(
            "schedule",
            str | None,
            None,
            "--schedule",
            rich_help_panel=panel,
            help=f"Pipeline schedule(s): {SCHEDULES_HELP}; comma list (default 1f1b).",
        ),
        _param(
            "launch",
            Path | None,
            None,
            "--launch",
            rich_help_panel=panel,
            metavar="FILE",
            help="A Megatron-LM launch command (a script or the command line): its parallel sizes, batch "
            "sizes, recomputation, sequence parallelism, distributed optimizer, overlap switches and "
            "precision, as if given here (the model comes from --model or --arch).",
        ),
        _param(
            "virtual_stages",
            str | None,
            None,
            "--virtual-pipeline-model-parallel-size",
            rich_help_panel=panel,
            metavar="VALUES",
            help="Megatron-LM's name for the schedule: V model chunks per stage, interleaved:V (1: 1f1b); "
            "comma list of whole numbers. Give it or --schedule.",
        ),
        _param(
            "recompute",
            str | None,
            None,
            "--recompute",
            MEGATRON_ALIASES["recompute"],
            rich_help_panel=panel,
            help=f"Activation recomputation: {RECOMPUTE_HELP}; comma list (default none).",
        ),
        _param(
            "overlap",
            str | None,
            None,
            "--overlap",
            rich_help_panel=panel,
            help=f"The stack's overlap switches, one mode per sweep: {OVERLAP_HELP} (Megatron-Core's "
            "--overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap, "
            f"--overlap-moe-expert-parallel-comm) (default {OVERLAP_DEFAULT}).",
        ),
    ]
    return out


LAYOUT = _layout_params()
LAYOUT_NAMES = tuple(p.name for p in LAYOUT)


BUSBW = [
    _param(
        "busbw",
        str | None,
        None,
        "--busbw",
        metavar="GB/S[@GBIT]",
        help="Instead of --util: the bus bandwidth nccl-tests measured (busbw, GB/s) for the job's collective "
        "across nodes, at its message size; @GBIT: the link rate it was measured on (default: the one --bw). "
        "Utilization = 8 busbw / link.",
    )
]


def take_busbw(kwargs: dict[str, Any]) -> None:
    """--busbw: the utilization it implies, in place of --util (one line on stderr says how)."""
    from netsweep_jax.sweep.core.values import utilization_from_busbw

    text = kwargs.pop("busbw", None)
    if text is None:
        return
    ctx = kwargs.get("ctx")
    if given(ctx, "utilization") if ctx is not None else kwargs.get("utilization") is not None:
        raise InputError(f"--busbw {text}: --util is given too; both set the utilization, give one")
    if kwargs.get("solve") == "utilization":
        raise InputError(f"--busbw {text}: --solve utilization finds the utilization; drop --busbw")
    kwargs["utilization"], how = utilization_from_busbw(text, kwargs.get("bandwidth"))
    if ctx is not None:  # set by the user, as --util would be: it overrides the GPU system's default
        ctx.set_parameter_source("utilization", ctx.get_parameter_source("busbw"))
    typer.echo(f"from --busbw: {how}", err=True)


def options(*groups):
    """Add parameter groups to a command's signature (the command gets them as keywords),
    and turn an :class:`InputError` into one line naming the CLI option, exit code 2."""

    def decorate(command):
        sig = inspect.signature(command)
        own = [p for p in sig.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
        added = [p for group in groups for p in group]

        @functools.wraps(command)
        def wrapper(**kwargs):
            if kwargs.pop("compile_cache", False):
                from netsweep_jax.sweep.engine.compile_cache import enable

                enable()
            try:
                take_busbw(kwargs)
                return command(**kwargs)
            except InputError as e:
                fail(cli_message(e))
            except WriteFailed as e:  # the disk refused an output: a fault, not bad input
                fail(str(e), code=1)
            except (KeyboardInterrupt, Interrupted) as e:
                fail("interrupted", code=exit_code(e))

        del wrapper.__wrapped__  # Typer must see the new signature, not the original's
        wrapper.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in own + added}
        return wrapper

    return decorate


WORKLOAD = ("gpu", "precision", "batch", "seq_len")


def models_from(settings):
    """The profiles the MODEL options describe, and the compute dtype (pops what it uses)."""
    from netsweep_jax.sweep.engine.grid import resolve_models

    models = resolve_models(
        settings.pop("model"),
        settings.pop("profile"),
        settings.pop("iteration_time"),
        **{k: settings.pop(k) for k in WORKLOAD},
    )
    return models, "float64" if settings.pop("x64") else "float32"


def make_grid_from(settings, **chosen):
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


def command_line():
    """The command as typed, for the cube's provenance."""
    return "sweep " + shlex.join(sys.argv[1:])


Out = Annotated[
    Path | None, typer.Option("--out", help="Output cube (.h5). Default: results/<model>-<timestamp>.h5.")
]
Cube = Annotated[Path, typer.Argument(help="A cube written by sweep grid.")]
DISTRIBUTED = [
    _param(
        "distributed",
        bool,
        False,
        "--distributed",
        rich_help_panel="Several machines",
        help="Share the sweep among processes joined by jax.distributed; each writes a shard, "
        "process 0 stitches OUT. OUT's directory must be shared.",
    ),
    _param(
        "coordinator",
        str | None,
        None,
        "--coordinator",
        rich_help_panel="Several machines",
        help="host:port of process 0 (default: $JAX_COORDINATOR_ADDRESS or the cluster launcher's).",
    ),
    _param(
        "num_processes",
        int | None,
        None,
        "--num-processes",
        min=1,
        rich_help_panel="Several machines",
        help="Process count (default: $JAX_NUM_PROCESSES or the launcher's).",
    ),
    _param(
        "process_id",
        int | None,
        None,
        "--process-id",
        min=0,
        rich_help_panel="Several machines",
        help="This process's id (default: $JAX_PROCESS_ID or the launcher's).",
    ),
    _param(
        "stitch_timeout",
        float,
        600.0,
        "--stitch-timeout",
        rich_help_panel="Several machines",
        help="Process 0 gives up waiting for a shard unchanged this many seconds.",
    ),
]


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set option ``name`` (on the command line or from its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def is_layout_sweep(ctx: typer.Context, settings: dict[str, Any]) -> bool:
    """A large-model preset or --arch: the layout family (kernels.layout), not the data-parallel profiles."""
    from netsweep_jax.sweep.model.llms import LLMS

    arch = settings.get("arch") is not None
    # Without --model the default profile stands for nothing when --arch is given.
    text = settings.get("model") if given(ctx, "model") or not arch else ""
    names = [n.strip().lower() for n in str(text or "").split(",") if n.strip()]
    large = [n for n in names if n in LLMS]
    other = [n for n in names if n not in LLMS]
    if (large or arch) and other:
        raise InputError(
            f"{text}: large-model presets or --arch and data-parallel profiles ({', '.join(other)}) "
            f"cannot share a sweep",
            param="model",
        )
    return bool(large) or arch


def refuse_layout_options(settings: dict[str, Any]) -> None:
    """Pop the layout options; refuse any that was set for a data-parallel profile."""
    for name in LAYOUT_NAMES:
        if settings.pop(name) is not None:
            raise InputError(
                f"applies to large-model presets (sweep models lists them) or --arch, not to "
                f"{settings.get('model')}",
                param=name,
            )


# Every option a layout sweep takes: its own, the data-parallel network axes it shares (the GPU's system where
# not given), and the model, GPU, precision and collective.
LAYOUT_GRID_READS = frozenset(
    (*LAYOUT_NAMES, *SHARED_AXES, "model", "arch", "nodes", "gpu", "precision", "collective", "x64")
)


def layout_grid_from(ctx: typer.Context, settings: dict[str, Any], *, search: bool = False) -> Any:
    """The layout grid the options describe: network options the user did not set follow the GPU's system."""
    from netsweep_jax.sweep.analysis.planning import SEARCHED_TEXT, search_space
    from netsweep_jax.sweep.engine.layouts import make_layout_grid
    from netsweep_jax.sweep.model.llms import parse_arch, resolve_llm

    if settings.get("launch") is not None:
        _take_launch(ctx, settings)
    model = settings.get("model") if given(ctx, "model") or not settings.get("arch") else None
    kwargs = {
        name: settings.get(name)
        for name in LAYOUT_NAMES
        if name not in ("schedule", "recompute", "attention", "virtual_stages", "launch")
    }
    for name in SHARED_AXES:
        kwargs[name] = settings.get(name) if given(ctx, name) else None
    if settings.get("nodes") is not None and given(ctx, "nodes"):
        kwargs["gpus"] = _gpus_from_nodes(settings, kwargs)
    space: dict[str, str] = {}
    text = {name: settings.get(name) for name in ("schedule", "recompute")}
    if settings.get("virtual_stages") is not None:
        text["schedule"] = _schedule_of_virtual_stages(settings["virtual_stages"], text["schedule"])
    if search:
        models = tuple(resolve_llm(n) for n in str(model).split(",") if n.strip()) if model else ()
        if settings.get("arch"):
            models += (parse_arch(settings["arch"]),)
        space = search_space(models) if models else {}
        text = {name: value if value is not None else SEARCHED_TEXT[name] for name, value in text.items()}

    def named(value: str | None, default: str) -> str:  # '' is a value to refuse, not "use the default"
        return default if value is None else value

    return make_layout_grid(
        model,
        gpu=named(settings.get("gpu"), "h100"),
        precision=named(settings.get("precision"), "bf16"),
        schedule=named(text["schedule"], "1f1b"),
        recompute=named(text["recompute"], "none"),
        attention=named(settings.get("attention"), "flash"),
        collective=str(settings["collective"]) if given(ctx, "collective") else "nccl",
        dtype="float64" if settings.get("x64") else "float32",
        search=space,
        **kwargs,
    )


def _take_launch(ctx: typer.Context, settings: dict[str, Any]) -> None:
    """The launch command's settings into ``settings``, each refused if also given as an option; one line
    (stderr) on what was taken and what was not used."""
    from netsweep_jax.sweep.io.launch import read_launch

    path = settings["launch"]
    taken, unused = read_launch(path)
    for name, value in taken.items():
        if given(ctx, name):
            raise InputError(f"given twice: as an option and in {path}", param=name)
        settings[name] = value
    said = ", ".join(f"{option_of(name)} {value}" for name, value in taken.items())
    more = f"; not used: {', '.join(unused[:6])}{f' and {len(unused) - 6} more' if len(unused) > 6 else ''}"
    typer.echo(f"from {path}: {said}{more if unused else ''}", err=True)


def _schedule_of_virtual_stages(text: str, schedule: str | None) -> str:
    """--virtual-pipeline-model-parallel-size V[,V...] as --schedule's values (V = 1: 1f1b)."""
    from netsweep_jax.sweep.core.values import whole_number

    if schedule is not None:
        raise InputError("give the schedule one way: --schedule or this", param="virtual_stages")
    chunks = [whole_number(item.strip()) for item in str(text).split(",")]
    if not chunks or any(v is None or v < 1 for v in chunks):
        raise InputError(f"{text!r}: give whole numbers from 1 (V chunks per stage)", param="virtual_stages")
    return ",".join("1f1b" if v == 1 else f"interleaved:{v}" for v in chunks)


def _gpus_from_nodes(settings: dict[str, Any], kwargs: dict[str, Any]) -> str:
    """--nodes x GPUs per node (--gpus-per-node, else the GPU preset's system) as --gpus values."""
    from netsweep_jax.sweep.core.values import parse_values
    from netsweep_jax.sweep.model.compute import GPUS

    if kwargs["gpus"] is not None or kwargs["dp"] is not None:
        raise InputError("give the GPU count one way: --nodes, --gpus or --dp", param="nodes")
    nodes = parse_values(settings["nodes"], NUMERIC_AXES["nodes"])
    if kwargs["gpus_per_node"] is not None:
        per_node = parse_values(kwargs["gpus_per_node"], NUMERIC_AXES["gpus_per_node"])
        if len(per_node) != 1:
            raise InputError(f"{kwargs['gpus_per_node']}: with --nodes give one value", param="gpus_per_node")
        count = per_node[0]
    else:
        first = str(settings.get("gpu") or "h100").split(",")[0].strip().lower()
        count = GPUS[first].gpus_per_node if first in GPUS else 8
    return ",".join(str(int(n * count)) for n in nodes)


def _layout_target(g: Any, out: Path | None, force: bool, prefix: str) -> Path:
    """The cube a layout command writes (default ``results/PREFIXMODEL-TIMESTAMP.h5``), checked before any work;
    then the one line on what was assumed."""
    import datetime

    from netsweep_jax.sweep.io.paths import check_new_file, writable_directory

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = out if out is not None else Path("results") / f"{prefix}{'+'.join(g.names['model'])}-{stamp}.h5"
    writable_directory(target, create=out is None)  # the default results/ is made, as grid makes it
    check_new_file(target, force=force, suffixes=(".h5", ".nc"))
    if g.assumed:
        typer.echo(f"assumed: {'; '.join(g.assumed)}", err=True)
    return target


def _layout_grid(
    ctx: typer.Context,
    settings: dict[str, Any],
    *,
    out: Path | None,
    force: bool,
    quiet: bool,
    extras: dict[str, Any],
) -> None:
    """``sweep grid`` for a large model: every layout, written as a cube."""

    from netsweep_jax.sweep.engine.layouts import check_in_memory, evaluate_layouts_arrays, layouts_dataset
    from netsweep_jax.sweep.io.cube import write_dataset

    for name, value in extras.items():
        if value:
            raise InputError(
                "is for data-parallel sweeps; a layout sweep keeps every variable in one pass "
                "(sweep plan keeps only the best layouts)",
                param=name,
            )
    for name in settings:  # --ratio, --fusion-mb, --accum, --compressor, ...: refused, never silently ignored
        if name not in LAYOUT_GRID_READS and given(ctx, name):
            workload = name in ("profile", "iteration_time", "batch", "seq_len")
            hint = "; large models take --arch, --micro-batch and --global-batch" if workload else ""
            raise InputError(f"applies to data-parallel profiles, not to a layout sweep{hint}", param=name)
    g = layout_grid_from(ctx, settings)
    check_in_memory(g)  # before the output is claimed
    target = _layout_target(g, out, force, "")
    ds = layouts_dataset(g, evaluate_layouts_arrays(g))
    write_dataset(ds, target, command=command_line(), overwrite=force)
    valid = int((ds["status"] == 0).sum())
    fits = int((ds["fits"] == 1).sum())
    typer.echo(
        str(target)
        if quiet
        else f"wrote {target}: {ds['status'].size:,} configurations, {valid:,} can "
        f"exist, {fits:,} fit in memory"
    )


@app.command()
@options(MODEL, axis_parameters(), BUSBW, SETTINGS, KERNEL, CACHE, DISTRIBUTED, LAYOUT)
def grid(
    ctx: typer.Context,
    out: Out = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --out (and its .partial).")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Finish an interrupted run of the same command from OUT.partial.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    block_configs: Annotated[
        int | None,
        typer.Option(
            "--block-configs",
            min=1,
            help="Configurations per block (memory budget: 16 B each in float32) (default: 262144 on a CPU, from the free device memory on a GPU (up to 2^26); with --resume, the partial file's).",
        ),
    ] = None,
    vars: Annotated[
        str | None,
        typer.Option(
            "--vars",
            help="Variables to keep, comma list: scaling_factor, iteration_time, exposed_comm, comm_time, time_to_accuracy (default: the first four, and time_to_accuracy when a --compressor is not none).",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Storage dtype: float16, float32 or float64 (default: the compute dtype). float16 keeps the scaling factor to about 5e-4 near 1.",
        ),
    ] = None,
    reduce: Annotated[
        list[str] | None,
        typer.Option(
            "--reduce",
            help="OP:DIM[,DIM...] with OP max, min, mean, argmax or argmin (repeat): reduce on the device as the sweep runs; the cube keeps the other dims (and, for argmax/argmin, the coordinate of the extreme). One family per sweep: max/argmax, min/argmin or mean.",
        ),
    ] = None,
    **settings,
):
    """Sweep every combination of the axes and write an HDF5 cube.

    Example: sweep grid --model resnet50 --bw 10,25,100 --ratio 1..100
    """
    from netsweep_jax.sweep.cli.progress import progress_bar
    from netsweep_jax.sweep.engine.dispatch import check_kernel
    from netsweep_jax.sweep.io import job

    if is_layout_sweep(ctx, settings):
        return _layout_grid(
            ctx,
            settings,
            out=out,
            force=force,
            quiet=quiet,
            extras=dict(resume=resume, block_configs=block_configs, vars=vars, store=store, reduce=reduce),
        )
    refuse_layout_options(settings)
    if reduce and settings.get("distributed"):
        raise InputError(
            f"{' '.join(reduce)}: --reduce with --distributed is not supported yet; run the "
            f"reduction on one machine",
            param="reduce",
        )
    g = make_grid_from(settings, variables=vars, store=store, reduce=reduce)
    if g.assumed:
        typer.echo(f"assumed: {g.assumed}", err=True)
    kernel = settings.pop("kernel")
    check_kernel(kernel, g)  # before any file is made: an explicit --kernel pallas is never swapped
    target = out if out is not None else job.default_out(g)
    common = dict(
        command=command_line(),
        force=force,
        resume=resume,
        block_configs=block_configs,
        progress=progress_bar(not quiet and sys.stderr.isatty()),
        kernel=kernel,
    )
    try:
        if settings.pop("distributed"):
            from netsweep_jax.sweep.io import distributed

            summary = distributed.run(g, out, **common, **settings)
        else:
            summary = job.run_grid(g, target, default_out_dir=out is None, **common)
    except (KeyboardInterrupt, Interrupted) as e:
        kept = job.kept_partial(e)  # only this run's own partial file, never another run's
        fail(
            f"interrupted; finished blocks are kept in {kept}. Finish with the same command plus --resume."
            if kept is not None and kept.exists()
            else "interrupted before any block was written; nothing was kept",
            code=exit_code(e),
        )
    except StitchTimeout as e:
        fail(str(e), code=3)
    except DiskFull as e:
        fail(str(e), code=1)
    except OSError as e:  # the file system failed under us (not bad input): one line, the partial kept
        kept = job.kept_partial(e)
        fail(
            f"writing {target} failed ({e.strerror or e})"
            + (f"; finished blocks are kept in {kept}" if kept is not None and kept.exists() else ""),
            code=1,
        )
    typer.echo(summary["out"] if quiet else job.summary_line(summary))


PLAN_MODEL = [
    _param(
        "model",
        str | None,
        None,
        "--model",
        rich_help_panel="Large models (layouts)",
        help="Large-model preset(s), comma list (sweep models lists them), or give --arch.",
    ),
    _param(
        "gpu",
        str,
        "h100",
        "--gpu",
        rich_help_panel="Large models (layouts)",
        help="GPU preset(s), comma list; its usual system sets the NVLink domain and NICs you do not set.",
    ),
    _param(
        "precision",
        str,
        "bf16",
        "--precision",
        rich_help_panel="Large models (layouts)",
        help="bf16 (fp32 gradients, as Megatron-LM), fp16 or fp8 (H100 and newer); comma list.",
    ),
    _param(
        "collective",
        str,
        "nccl",
        "--collective",
        help="ring, tree or nccl (the cheaper of the two per message, as NCCL's tuner); comma list.",
    ),
    _param("x64", bool, False, "--x64", help="Compute and store in float64 (default float32)."),
]
NETWORK = ("nodes", *SHARED_AXES)


def _plan_default(name: str) -> str:
    if name == "nodes":
        return "none (give --gpus, or --nodes for nodes x GPUs per node)"
    if name in ("gpus_per_node", "nics_per_node", "bandwidth"):
        return "the GPU's usual system"
    return NUMERIC_AXES[name].default


PLAN_NETWORK = [
    _param(
        name,
        str | None,
        None,
        *axis_flags(name, NUMERIC_AXES[name].option),
        metavar="VALUES",
        help=f"{NUMERIC_AXES[name].help} Default: {_plan_default(name)}. Value syntax as --bw.",
    )
    for name in NETWORK
]


@app.command()
@options(PLAN_MODEL, LAYOUT, PLAN_NETWORK, BUSBW, CACHE)
def plan(
    ctx: typer.Context,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output cube (.h5) of the best layouts. Default: results/plan-<model>-<timestamp>.h5.",
        ),
    ] = None,
    keep: Annotated[
        int, typer.Option("--keep", min=1, max=100, help="Layouts to keep per setting, fastest first.")
    ] = 3,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print the plan as CSV (one row per setting and layout).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan as JSON (null for what is not a number).")
    ] = False,
    **settings: Any,
):
    """The fastest layouts of a large model on a cluster, per network setting, what each waits on, and what the
    network costs the best one against an ideal network.

    Layout options you do not give are searched: tp 1,2,4,8; pp in powers of two; cp 1,2,4; ep for MoE models; micro-batch 1,2,4,8; 1f1b and interleaved:2; recompute none, selective and full; ZeRO 0, 1 and 3.

    Example: sweep plan --model llama3-70b --gpus 1024 --global-batch 1024 --bw 100,200,400 --nics-per-node 1,8
    """

    from netsweep_jax.sweep.analysis.planning import check_size, plan_csv, plan_json, plan_table
    from netsweep_jax.sweep.analysis.planning import plan as best
    from netsweep_jax.sweep.cli.progress import progress_bar
    from netsweep_jax.sweep.io.cube import write_dataset

    if settings.get("model") is None and settings.get("arch") is None:
        raise InputError("name a large-model preset (sweep models lists them) or give --arch", param="model")
    if as_csv and as_json:
        raise InputError("give one of --csv and --json", param="json")
    g = layout_grid_from(ctx, settings, search=True)
    check_size(g)  # before the output is claimed
    made = None if out is not None or Path("results").exists() else Path("results")  # the default, made now
    target = _layout_target(g, out, force, "plan-")
    typer.echo(f"searching {g.inner_size:,} layouts x {g.outer_size:,} settings", err=True)
    bar = progress_bar(not quiet and sys.stderr.isatty())
    try:
        if bar is None:
            ds = best(g, keep=keep)
        else:
            with bar(2 * g.inner_size * g.outer_size, 0) as advance:  # the plan, then on an ideal network
                ds = best(g, keep=keep, progress=advance)
    except InputError:  # a plan refused after its search (no feasible layout) leaves no empty results/
        if made is not None and made.is_dir() and not any(made.iterdir()):
            made.rmdir()
        raise
    write_dataset(ds, target, command=command_line(), overwrite=force)
    typer.echo(plan_csv(ds) if as_csv else plan_json(ds) if as_json else plan_table(ds), nl=not as_csv)
    typer.echo(f"wrote {target}", err=as_csv or as_json)  # stdout stays one CSV or JSON document


@app.command()
def models():
    """List the built-in profiles."""
    from netsweep_jax.sweep.model.builtin import models_table

    typer.echo(models_table())


@app.command()
@options()
def show(
    file: Cube,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also check every finished block against its checksum (exit code 1 if any is damaged).",
        ),
    ] = False,
):
    """Describe a cube: dims, variables (min / median / max), the command, the profiles."""
    from netsweep_jax.sweep.io.reader import describe, verify_text

    with damaged_file(file):
        description = describe(file)
        text, damaged = verify_text(file) if verify else ("", 0)
    typer.echo(description)
    if verify:
        typer.echo(text)
        if damaged:
            raise typer.Exit(code=1)


def damaged_file(path: Path) -> Any:
    """A context in which HDF5 failing to read ``path`` (damaged metadata) is one line and exit code 1, as a
    damaged block is for ``show --verify``: not a traceback."""
    import contextlib
    import traceback

    @contextlib.contextmanager
    def context() -> Any:
        from netsweep_jax.sweep.io.cube import crashes_hdf5, damage

        if crashes_hdf5(path):
            fail(f"{path}: damaged (HDF5 crashes reading its metadata)", code=1)
        try:
            yield
        except InputError:
            reason = damage(path)  # an HDF5 file HDF5 cannot read is damaged, not bad input
            if reason is not None:
                fail(f"{path}: damaged (HDF5 cannot read it: {reason})", code=1)
            raise
        except (OSError, KeyError, ValueError, RuntimeError, TypeError, AttributeError, IndexError) as e:
            readers = ("h5py", "h5netcdf", "xarray")
            if not any(
                name in frame.filename for frame in traceback.extract_tb(e.__traceback__) for name in readers
            ):
                raise
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            fail(f"{path}: damaged (HDF5 cannot read it: {reason})", code=1)

    return context()


@app.command()
@options(
    [
        _param("model", str | None, None, "--model", help="Model name(s)."),
        _param("collective", str | None, None, "--collective", help="Collective(s)."),
        _param("bucketing", str | None, None, "--bucketing", help="Bucketing schedule(s)."),
        _param(
            "compressor", str | None, None, "--compressor", help="Compressor(s), as in the cube: topk:0.01."
        ),
    ],
    axis_parameters({name: None for name in NUMERIC_AXES}, help_suffix=" Value(s) as in the cube."),
    [
        _param(
            name,
            str | None,
            None,
            f"--{name.replace('_', '-')}",
            rich_help_panel="Layout cubes",
            help=f"{text}(s), as in the cube.",
        )
        for name, text in (
            ("gpu", "GPU preset"),
            ("precision", "Precision"),
            ("attention", "Attention kernel"),
            ("schedule", "Schedule"),
            ("recompute", "Recompute mode"),
        )
    ]
    + [
        _param(
            name,
            str | None,
            None,
            spec.option,
            rich_help_panel="Layout cubes",
            help=f"{spec.long_name[:1].upper()}{spec.long_name[1:]}. Value(s) as in the cube.",
        )
        for name, spec in LAYOUT_AXES.items()
        if name
        in LAYOUT_DIMS  # --usable-memory and --gemm-latency: one value per sweep, not dims to select on
    ],
)
def select(
    file: Cube,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    nearest: Annotated[
        bool,
        typer.Option(
            "--nearest",
            help="A number not in the cube selects the nearest "
            "value the cube has (a log-spaced axis by a typed value); each "
            "pick is said on stderr.",
        ),
    ] = False,
    **chosen,
):
    """Print a slice of a cube as a table (one row per remaining combination).

    Example: sweep select r.h5 --bw 37 --nearest
    """
    from netsweep_jax.sweep.io.reader import select_table

    with damaged_file(file):
        table = select_table(
            file,
            {k: v for k, v in chosen.items() if v is not None},
            csv=csv,
            nearest=nearest,
            picked=lambda text: typer.echo(text, err=True),
        )
    typer.echo(table)


@app.command()
@options(CACHE)
def paper(
    out: Annotated[
        Path, typer.Option("--out", help="Output directory for paper.h5, figures and REPORT.md.")
    ] = Path("results/paper"),
    profiles_dir: Annotated[
        Path | None,
        typer.Option(
            "--profiles-dir",
            help="Directory of measured <model>.bk.log files to put beside the built-in profiles.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite the files it writes that already exist in --out (never through a link).",
        ),
    ] = False,
):
    """Reproduce the paper's what-if study: cube, figures and a checked REPORT.md."""
    from netsweep_jax.sweep.analysis.paper import run_paper

    for path in run_paper(out, profiles_dir, command=command_line(), force=force):
        typer.echo(f"wrote {path}")


@app.command()
@options(CACHE)
def validate(
    measurements: Annotated[
        Path | None,
        typer.Argument(
            help="A measurements CSV with framework and network columns (see sweep calibrate); with --llm, a file of large-model runs; default: the shipped published ones.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output directory for REPORT.md, predictions.csv and the figure (existing ones are kept unless --force). Default: results/validation (with --llm: results/validation-llm).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite the files it writes that already exist in --out (never through a link).",
        ),
    ] = False,
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="Large models: the layout model against published runs of TP x PP x DP (ZeRO, MoE) training (sweep/data/llm_runs.csv) or your own.",
        ),
    ] = False,
    train: Annotated[
        str | None,
        typer.Option(
            "--train",
            help="With --llm: the groups of runs to fit on, comma-separated values of the file's group column (default sc21-t1,llm-foundry: SC'21 Table 1 on A100s, llm-foundry's MPT runs on H100s).",
        ),
    ] = None,
):
    """Predict measured runs of real clusters: per source and framework, fit on the single-node rows and the
    smallest multi-node size, predict the larger sizes, and compare three models. With --llm, large models:
    fit few constants on one source, predict the others in each source's own units."""
    if llm:
        from netsweep_jax.sweep.analysis import llm_validation

        paths, v = llm_validation.run(
            out or Path("results/validation-llm"),
            command=command_line(),
            dataset=measurements or llm_validation.DATASET,
            train=train,
            force=force,
            progress=lambda text: typer.echo(text, err=True),
        )
        for line in llm_validation.summary_lines(v):
            typer.echo(line)
        for path in paths:
            typer.echo(f"wrote {path}")
        return
    if train is not None:
        raise InputError(
            "is for --llm (the data-parallel validation fits per source and framework)", param="train"
        )
    from netsweep_jax.sweep.analysis.validate import DATASET, run

    out = out or Path("results/validation")
    paths, errors = run(
        out,
        command=command_line(),
        dataset=measurements or DATASET,
        progress=lambda text: typer.echo(text, err=True),
        force=force,
    )
    typer.echo("model        held-out RMSE  worst  in-sample RMSE")
    for m, held, worst, in_sample, _ in errors:
        typer.echo(f"{m.name:12s} {held:13.3f} {worst:6.3f} {in_sample:15.3f}")
    for path in paths:
        typer.echo(f"wrote {path}")


@app.command()
@options(CACHE)
def compare(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Option("--model", help="Built-in model(s), comma list.")
    ] = "resnet50,vgg16,bert-large,gpt2-xl",
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="Transformers: GPU preset (default: h100).")
    ] = None,
    precision: Annotated[
        str | None, typer.Option("--precision", help="Transformers: fp32, amp, bf16 or fp16 (default: bf16).")
    ] = None,
    batch: Annotated[
        str | None, typer.Option("--batch", help="Transformers: samples per GPU (default: 8).")
    ] = None,
    seq_len: Annotated[
        str | None,
        typer.Option("--seq-len", help="Transformers: tokens per sample (default: the model's context)."),
    ] = None,
    bandwidth: Annotated[
        str, typer.Option(*axis_flags("bandwidth", "--bw"), help="Link bandwidth(s), Gbit/s. " + SYNTAX)
    ] = "10,25,100,400",
    utilization: Annotated[
        float,
        typer.Option(
            *axis_flags("utilization", "--util"),
            help="Today's utilization, one number below 1 (default: 0.32, the paper's measured ~32 Gbit/s of 100); the fixed transport is 1.",
        ),
    ] = 0.32,
    nodes: Annotated[str, typer.Option("--nodes", help="Nodes (one value).")] = "8",
    gpus_per_node: Annotated[str, typer.Option("--gpus-per-node", help="GPUs per node (one value).")] = "8",
    nics_per_node: Annotated[
        str, typer.Option("--nics-per-node", help="NICs per node, shared by its GPUs.")
    ] = "1",
    compressor: Annotated[
        str, typer.Option("--compressor", help="Compressors to try, comma list (see sweep grid --help).")
    ] = "fp16,int8,topk:0.01,randomk:0.01,signsgd,powersgd:4",
    collective: Annotated[
        str, typer.Option("--collective", help=f"All-reduce (one of {', '.join(COLLECTIVES)}).")
    ] = "nccl-ring",
    bucketing: Annotated[
        str, typer.Option("--bucketing", help="horovod or ddp (fsdp cannot compress).")
    ] = "ddp",
    iterations_factor: Annotated[
        str | None,
        typer.Option(
            "--iterations-factor",
            help="Extra iterations per compressor for the same accuracy, e.g. topk:0.01=1.3 (default 1).",
        ),
    ] = None,
    codec_cost: Annotated[
        Path | None,
        typer.Option(
            "--codec-cost", help="JSON overriding the codec throughput model (see sweep grid --help)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write REPORT.md, compare.csv and speedups.png into this directory."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite the files it writes that already exist in --out (never through a link).",
        ),
    ] = False,
):
    """Fix the transport or compress? For each model and bandwidth: no compression today, the transport fixed (utilization 1), and the best real compressor today.

    Example: sweep compare --model resnet50,gpt2-xl --bw 10,100 --out results/compare
    """
    from netsweep_jax.sweep.analysis import compare as comparison

    settings: dict[str, Any] = dict(
        defaults=_compare_defaults(ctx, locals()),
        models=model,
        gpu=gpu,
        precision=precision,
        batch=batch,
        seq_len=seq_len,
        bandwidth=bandwidth,
        utilization=utilization,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        compressor=compressor,
        collective=collective,
        bucketing=bucketing,
        iterations_factor=iterations_factor,
        codec_cost=codec_cost,
    )
    if out is None:
        rows, _, setup = comparison.compare(**settings)
        if setup["assumed"]:
            typer.echo(f"assumed: {setup['assumed']}", err=True)
        typer.echo(comparison.table(rows))
        return
    for path in comparison.run(out, command=command_line(), force=force, **settings):
        typer.echo(f"wrote {path}")


# compare's settings a reader must know to read its answer (its utilization is the paper's, not grid's 1).
COMPARE_DEFAULTS = {
    "utilization": ("--util", "(today's: the paper's measured ~32 Gbit/s of 100)"),
    "collective": ("--collective", ""),
    "bucketing": ("--bucketing", ""),
    "nodes": ("--nodes", ""),
    "gpus_per_node": ("--gpus-per-node", ""),
    "nics_per_node": ("--nics-per-node", ""),
}


def _compare_defaults(ctx: typer.Context, values: dict[str, Any]) -> list[str]:
    """The settings of :data:`COMPARE_DEFAULTS` the user left unset, as options with their values."""
    return [
        f"{option} {values[name]}{f' {why}' if why else ''}"
        for name, (option, why) in COMPARE_DEFAULTS.items()
        if not given(ctx, name)
    ]


SOLVED_AXES = {name: None for name in SOLVABLE}  # unset unless given: any of them may be the one solved for


@app.command()
@options(MODEL, axis_parameters(SOLVED_AXES), BUSBW, SETTINGS, CACHE)
def need(
    target: Annotated[float, typer.Option("--target", help="Scaling factor to reach, in (0, 1].")],
    solve: Annotated[
        str,
        typer.Option(
            "--solve",
            help="Axis to solve for: the smallest bandwidth, utilization or ratio reaching the target, or the largest latency, overhead, slowdown or jitter still reaching it.",
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="Also write the answers as a cube (.h5).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
    **settings,
):
    """Where a target scaling factor is reached: the smallest bandwidth, utilization or ratio, or the largest latency, overhead, slowdown or jitter.

    Example: sweep need --model resnet50 --target 0.99 --solve ratio --bw 1,10,25,40,100 --nodes 2,4,8
    """
    from netsweep_jax.sweep.analysis.need import answer_table
    from netsweep_jax.sweep.analysis.need import solve as solve_for
    from netsweep_jax.sweep.io.cube import write_dataset
    from netsweep_jax.sweep.io.paths import check_new_file

    if out is not None:
        check_new_file(out, force=force)
    models, settings["dtype"] = models_from(settings)
    ds = solve_for(models, target=target, axis=solve, **settings)
    if ds.attrs.get("assumed"):
        typer.echo(f"assumed: {ds.attrs['assumed']}", err=True)
    typer.echo(answer_table(ds))
    if out is not None:
        write_dataset(ds, out, command=command_line(), overwrite=force)
        typer.echo(f"wrote {out}")


CALIBRATION_AXES = ("nics_per_node", "fusion_buffer", "fusion_timeout")


@app.command()
@options(
    MODEL[:1],
    MODEL[2:6],
    COLLECTIVE_SETTINGS,
    axis_parameters(names=CALIBRATION_AXES, help_suffix=" One value; a column may set it per row."),
    CACHE,
)
def calibrate(
    ctx: typer.Context,
    measurements: Annotated[
        Path,
        typer.Argument(
            help="CSV: nodes,gpus_per_node,bandwidth and scaling_factor or iteration_time; optional model (built-in or profile file), collective, t1 and any axis; other columns are labels for --per and --train."
        ),
    ],
    profile: Annotated[
        list[Path] | None, typer.Option("--profile", help="Profile file(s) (repeat); replace --model.")
    ] = None,
    iteration_time: Annotated[
        float | None, typer.Option("--iteration-time", help="T1 in seconds for --profile formats without it.")
    ] = None,
    fit: Annotated[
        str,
        typer.Option(
            "--fit", help="What to fit, comma list: utilization, latency, overhead, slowdown, jitter."
        ),
    ] = "utilization",
    per: Annotated[
        list[str] | None,
        typer.Option(
            "--per", help="PARAM=COLUMN: one PARAM per value of a column, e.g. overhead=framework (repeat)."
        ),
    ] = None,
    bounds: Annotated[
        list[str] | None,
        typer.Option("--bounds", help="PARAM=LOW:HIGH in the axis's units, e.g. overhead=0:50 (repeat)."),
    ] = None,
    train: Annotated[
        str | None,
        typer.Option(
            "--train",
            help="Fit on the rows this selects and report the error on the others, e.g. 'gpus <= 16'.",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the result as JSON.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
    **settings,
):
    """Infer the model parameters measured runs imply, and how well they predict held-out runs. A file of
    large-model runs (tp, pp and metric columns, as sweep validate --llm reads) fits the layout model's matrix
    efficiency per GPU and NIC utilization instead; --train then names a group of its runs."""
    from netsweep_jax.sweep.analysis import llm_validation
    from netsweep_jax.sweep.analysis.calibrate import Settings, calibrate_file, report_text
    from netsweep_jax.sweep.core.values import parse_values

    if llm_validation.is_runs_file(measurements):
        return _calibrate_runs(
            ctx,
            measurements,
            train,
            out,
            force,
            dict(profile=profile, iteration_time=iteration_time, per=per, bounds=bounds),
        )

    one = {}
    for name in CALIBRATION_AXES:
        text = settings.pop(name)
        values = parse_values(text, NUMERIC_AXES[name])
        if len(values) != 1:
            raise InputError(f"{text}: calibrate takes one value", param=name)
        one[name] = float(values[0])
    table = settings.pop("reduce_table")
    if table is not None:
        from netsweep_jax.sweep.model.vector_add import read_table

        table = read_table(table)
    setup = Settings(
        collective=settings.pop("collective"),
        bucketing=settings.pop("bucketing"),
        reduce_table=table,
        intra_bandwidth=settings.pop("intra_bandwidth"),
        **one,
    )
    result = calibrate_file(
        measurements,
        fit,
        out=out,
        force=force,
        model=settings.pop("model"),
        profile=profile,
        iteration_time=iteration_time,
        per=per,
        bounds=bounds,
        train=train,
        settings=setup,
        **{name: settings.pop(name) for name in WORKLOAD},
    )
    if result.get("assumed"):
        typer.echo(f"assumed: {result['assumed']}", err=True)
    typer.echo(report_text(result))
    if out is not None:
        typer.echo(f"wrote {out}")


def _calibrate_runs(
    ctx: typer.Context,
    measurements: Path,
    train: str | None,
    out: Path | None,
    force: bool,
    others: dict[str, Any],
) -> None:
    """``sweep calibrate`` of large-model runs: fit, predict every run, print, and write JSON."""
    import json

    from netsweep_jax.sweep.analysis import llm_validation
    from netsweep_jax.sweep.io.paths import check_new_file, write_atomically

    for name, value in others.items():
        if value:
            raise InputError("is for data-parallel measurements, not large-model runs", param=name)
    if given(ctx, "fit"):
        raise InputError(
            "large-model runs fit the matrix efficiency per GPU and the NIC utilization; --fit is "
            "for data-parallel measurements",
            param="fit",
        )
    if out is not None:
        check_new_file(out, force=force, suffixes=(".json",))
    fitted, v = llm_validation.calibrate_runs(measurements, train)
    typer.echo(llm_validation.calibrate_table(fitted, v))
    if out is not None:
        text = json.dumps(llm_validation.calibration_json(fitted, v), indent=1, allow_nan=False)
        write_atomically(out, lambda p: p.write_text(text + "\n"), overwrite=force)
        typer.echo(f"wrote {out}")


@app.command()
@options()
def plot(
    file: Annotated[Path, typer.Argument(help="A cube from sweep grid or sweep need --out.")],
    x: Annotated[str, typer.Option("--x", help="Dim on the x axis.")],
    y: Annotated[
        str, typer.Option("--y", help="Line plot: the variable. Heatmap: the dim on the y axis.")
    ] = "scaling_factor",
    hue: Annotated[
        str | None, typer.Option("--hue", help="Line plot: one line per value of this dim.")
    ] = None,
    sel: Annotated[
        list[str] | None, typer.Option("--sel", help="DIM=VALUE to fix a dim; repeat for several.")
    ] = None,
    kind: Annotated[str, typer.Option("--kind", help="line or heatmap.")] = "line",
    var: Annotated[str, typer.Option("--var", help="Heatmap: the variable to color.")] = "scaling_factor",
    out: Annotated[Path, typer.Option("--out", help="Figure file to write: .png, .pdf or .svg.")] = Path(
        "figure.png"
    ),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
):
    """Line plots and heatmaps from a cube, labelled with its units.

    Example: sweep plot r.h5 --x bandwidth --y scaling_factor --hue nodes --sel ratio=1 --out fig.png
    """
    from netsweep_jax.sweep.analysis.plot import plot_cube

    with damaged_file(file):  # as show and select: a cube HDF5 cannot read is damaged (exit 1)
        written = plot_cube(file, x=x, y=y, hue=hue, sel=sel or [], kind=kind, var=var, out=out, force=force)
    typer.echo(f"wrote {written}")


profile_app = helptext.Typer(
    help="Profiles from real runs: measure a PyTorch model, or import a torch.profiler trace.",
    no_args_is_help=True,
)
app.add_typer(profile_app, name="profile")
ProfileOut = Annotated[Path, typer.Option("--out", help="The JSON profile to write.")]


def _write_profile(profile, out, force):
    import json

    from netsweep_jax.sweep.io.paths import check_new_file, write_atomically

    check_new_file(out, force=force, suffixes=(".json",))
    text = json.dumps(profile.to_json(), indent=1)
    write_atomically(out, lambda p: p.write_text(text + "\n"))
    typer.echo(
        f"wrote {out}: {len(profile.names)} tensors, {int(profile.total_bytes):,} gradient bytes, "
        f"backward {profile.backward_time * 1e3:.3f} ms, T1 {profile.t1 * 1e3:.3f} ms"
    )


@profile_app.command("measure")
@options()
def profile_measure(
    model: Annotated[
        str,
        typer.Argument(
            help="torchvision:NAME, hf:TYPE (transformers' default config) or FILE.py:FUNCTION returning (model, (inputs, target))."
        ),
    ],
    out: ProfileOut,
    batch: Annotated[int, typer.Option("--batch", help="Samples per step (torchvision and hf models).")] = 8,
    precision: Annotated[
        str, typer.Option("--precision", help="fp32, amp (autocast), bf16 or fp16 (the model in that type).")
    ] = "fp32",
    seq_len: Annotated[
        int | None, typer.Option("--seq-len", help="hf models: tokens per sample (default: 128).")
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="cuda, cpu, ... (default: cuda when available).")
    ] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Steps before measuring.")] = 2,
    iterations: Annotated[int, typer.Option("--iterations", help="Steps measured (medians).")] = 5,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Also write a torch.profiler Chrome trace of one step.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
):
    """Measure a profile from a real PyTorch run (needs the torch extra: pip install -e '.\\[torch]').

    Example: sweep profile measure torchvision:resnet50 --batch 32 --out resnet50.json
    """
    from netsweep_jax.sweep.io.measure import measure
    from netsweep_jax.sweep.io.paths import check_new_file

    check_new_file(out, force=force, suffixes=(".json",))
    if trace is not None:
        check_new_file(trace, force=force, suffixes=(".json",), param="trace")
    profile = measure(
        model,
        batch=batch,
        precision=precision,
        device=device,
        warmup=warmup,
        iterations=iterations,
        seq_len=seq_len,
        trace=trace,
    )
    _write_profile(profile, out, force)


@profile_app.command("import")
@options()
def profile_import(
    trace: Annotated[
        Path,
        typer.Argument(
            help="A torch.profiler Chrome trace (export_chrome_trace) of a training step, recorded with record_shapes=True."
        ),
    ],
    out: ProfileOut,
    model: Annotated[str | None, typer.Option("--model", help="Profile name (default: the file's).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
):
    """Extract a profile from a PyTorch profiler trace (no torch needed).

    Example: sweep profile import examples/tiny.trace.json --out tiny.json
    """
    from netsweep_jax.sweep.io.trace import import_trace

    _write_profile(import_trace(trace, model), out, force)
