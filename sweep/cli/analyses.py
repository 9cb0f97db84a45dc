"""``sweep paper``, ``validate``, ``compare``, ``need`` and ``calibrate``: the analyses and their reports."""

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from netsweep_jax.sweep.cli.options import (
    SYNTAX,
    axis_flags,
    axis_parameters,
    command_line,
    given,
    given_options,
    options,
    say_assumed,
    typed_number,
)
from netsweep_jax.sweep.cli.parameters import (
    BUSBW,
    CACHE,
    CALIBRATE_COLLECTIVE,
    COLLECTIVE_SETTINGS,
    LARGE_MODEL_NOTES,
    LAYOUT,
    MODEL,
    NEED_SETTINGS,
    PROFILE_HELP,
    WORKLOAD,
    CompareFabric,
    Force,
    ReportForce,
    data_parallel_options,
    fabric_settings,
    models_from,
)
from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import COLLECTIVES, COMPARE, SOLVABLE

if TYPE_CHECKING:
    from netsweep_jax.sweep.analysis.calibration_rows import Settings


@options(CACHE)
def paper(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output directory for paper.h5, figures and REPORT.md. Default: results/paper-<timestamp>.",
        ),
    ] = None,
    profiles_dir: Annotated[
        Path | None,
        typer.Option(
            "--profiles-dir",
            help="Directory of measured <model>.bk.log files to put beside the built-in profiles.",
        ),
    ] = None,
    force: ReportForce = False,
):
    """Reproduce the paper's what-if study: cube, figures and a checked REPORT.md."""
    from netsweep_jax.sweep.analysis.paper import run_paper
    from netsweep_jax.sweep.io.paths import stamped

    for path in run_paper(out or stamped("paper"), profiles_dir, command=command_line(), force=force):
        typer.echo(f"wrote {path}")


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
            help="Output directory for REPORT.md, predictions.csv and the figure (existing ones are kept unless --force). Default: results/validation-<timestamp> (with --llm: results/validation-llm-<timestamp>).",
        ),
    ] = None,
    force: ReportForce = False,
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
            help="With --llm: the groups of runs to fit on, comma-separated values of the file's group column (default sc21-t1,llm-foundry,megatron-bridge: one source per stack preset, SC'21 Table 1, llm-foundry's MPT runs and Megatron-Bridge's tables).",
        ),
    ] = None,
    nccl: Annotated[
        Path | None,
        typer.Option(
            "--nccl",
            help="Collectives: NCCL's tuner model against nccl-tests rows in nccl_tests.csv's format (../shared/published/nccl_tests.csv); fabric constants fitted on the NT309A and AZ sources, the rest held out. Default --out: a new results/validation-nccl-<timestamp>.",
            show_default=False,
        ),
    ] = None,
):
    """Predict measured runs of real clusters: per source and framework, fit on the single-node rows and the
    smallest multi-node size, predict the larger sizes, and compare three models. With --llm, large models:
    fit few constants on one source, predict the others in each source's own units."""
    if nccl is not None:
        if str(nccl).startswith("-"):  # `--nccl --out DIR`: Click took the option for --nccl's file
            raise InputError(f"{str(nccl)!r} is an option, not a file: give --nccl FILE", param="nccl")
        if llm or train is not None:
            raise InputError(
                f"takes no {'--llm' if llm else '--train'}: it validates its own file", param="nccl"
            )
        if measurements is not None:
            raise InputError(
                f"{measurements}: a second file; --nccl validates the one it is given ({nccl})", param="nccl"
            )
        _validate_nccl(nccl, out, force)
    elif llm:
        _validate_llm(measurements, out, train, force)
    elif train is not None:
        raise InputError(
            "is for --llm (the data-parallel validation fits per source and framework)", param="train"
        )
    else:
        _validate_data_parallel(measurements, out, force)


def _validate_nccl(dataset: Path, out: Path | None, force: bool) -> None:
    """``sweep validate --nccl FILE``: the fit, the held-out errors and the files written."""
    from netsweep_jax.sweep.analysis import nccl_validation
    from netsweep_jax.sweep.io.paths import stamped

    paths, nv = nccl_validation.run(
        out or stamped("validation-nccl"), dataset=dataset, command=command_line(), force=force
    )
    for line in nccl_validation.summary_lines(nv):
        typer.echo(line)
    for path in paths:
        typer.echo(f"wrote {path}")


def _validate_llm(measurements: Path | None, out: Path | None, train: str | None, force: bool) -> None:
    """``sweep validate --llm``: the layout model against published (or your) large-model runs."""
    from netsweep_jax.sweep.analysis import llm_validation
    from netsweep_jax.sweep.io.paths import stamped
    from netsweep_jax.sweep.io.runs import DATASET

    paths, v = llm_validation.run(
        out or stamped("validation-llm"),
        command=command_line(),
        dataset=measurements or DATASET,
        train=train,
        force=force,
        progress=lambda text: typer.echo(text, err=True),
    )
    for line in llm_validation.summary_lines(v):
        typer.echo(line)
    for path in paths:
        typer.echo(f"wrote {path}")


def _validate_data_parallel(measurements: Path | None, out: Path | None, force: bool) -> None:
    """``sweep validate``: the data-parallel models against measured scaling, per source and framework."""
    from netsweep_jax.sweep.analysis.validate import DATASET, run
    from netsweep_jax.sweep.io.paths import stamped

    paths, errors = run(
        out or stamped("validation"),
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


# compare's own options (its defaults, the paper's setting, are in its signature).
CompareModels = Annotated[str, typer.Option("--model", help="Built-in model(s), comma list.")]
CompareProfile = Annotated[Path | None, typer.Option("--profile", help=PROFILE_HELP)]
# compare's and calibrate's (the same meaning in both)
IterationTime = Annotated[
    float | None,
    typer.Option(
        "--iteration-time",
        parser=typed_number(float),
        help="Single-GPU iteration time T1 in seconds: for --profile formats without it, or to scale a built-in "
        "model's or a profile's own compute to your GPU and batch, as grid's (its gradients unchanged).",
    ),
]
CompareGpu = Annotated[
    str | None, typer.Option("--gpu", help="Transformers: GPU preset(s), comma list (default: h100).")
]
ComparePrecision = Annotated[
    str | None,
    typer.Option("--precision", help="Transformers: fp32, amp, bf16 or fp16 (default: bf16; fp16 on V100s)."),
]
CompareBatch = Annotated[
    str | None, typer.Option("--batch", help="Transformers: samples per GPU (default: 8).")
]
CompareSeqLen = Annotated[
    str | None,
    typer.Option("--seq-len", help="Transformers: tokens per sample (default: the model's context)."),
]
CompareBandwidth = Annotated[
    str, typer.Option(*axis_flags("bandwidth", "--bw"), help="Link bandwidth(s), Gbit/s. " + SYNTAX)
]
CompareUtilization = Annotated[
    float | None,
    typer.Option(
        *axis_flags("utilization", "--util"),
        parser=typed_number(float),
        help=f"Today's utilization, one number below 1 (default: {COMPARE.utilization:g}, the paper's measured ~32 Gbit/s "
        "of 100); the fixed transport is 1. With --collective nccl or a --fabric, up to 1 (default: 1, the "
        "fabric as its fitted efficiencies price it; fixed: those at 1 too).",
    ),
]
CompareNodes = Annotated[str, typer.Option("--nodes", help="Nodes (one value).")]
CompareGpusPerNode = Annotated[str, typer.Option("--gpus-per-node", help="GPUs per node (one value).")]
CompareNicsPerNode = Annotated[
    str, typer.Option("--nics-per-node", help="NICs per node, shared by its GPUs.")
]
CompareCompressors = Annotated[
    str,
    typer.Option(
        "--compressor",
        help="Compressors to try, comma list (see sweep grid --help); by default PowerSGD is left out for a "
        "--profile without tensor shapes.",
    ),
]
CompareCollective = Annotated[
    str,
    typer.Option(
        "--collective",
        help=f"All-reduce, one of {', '.join(COLLECTIVES)} (nccl: NCCL's own all-reduce or all-gather "
        "of each payload, on a GPU with a preset).",
    ),
]
CompareBucketing = Annotated[str, typer.Option("--bucketing", help="horovod or ddp (fsdp cannot compress).")]
IterationsFactor = Annotated[
    str | None,
    typer.Option(
        "--iterations-factor",
        help="Extra iterations per compressor for the same accuracy, e.g. topk:0.01=1.3 (default 1).",
    ),
]
CodecCost = Annotated[
    Path | None,
    typer.Option("--codec-cost", help="JSON overriding the codec throughput model (see sweep grid --help)."),
]
CompareOut = Annotated[
    Path | None,
    typer.Option("--out", help="Also write REPORT.md, compare.csv and speedups.png into this directory."),
]


# compare's defaults as its options spell them (sweep.core.schema.COMPARE)
COMPARE_MODELS = ",".join(COMPARE.models)
COMPARE_BANDWIDTHS = ",".join(f"{b:g}" for b in COMPARE.bandwidths)
COMPARE_COMPRESSORS = ",".join(COMPARE.compressors)


@options(BUSBW, CACHE)
def compare(
    ctx: typer.Context,
    model: CompareModels = COMPARE_MODELS,
    profile: CompareProfile = None,
    iteration_time: IterationTime = None,
    gpu: CompareGpu = None,
    precision: ComparePrecision = None,
    batch: CompareBatch = None,
    seq_len: CompareSeqLen = None,
    bandwidth: CompareBandwidth = COMPARE_BANDWIDTHS,
    utilization: CompareUtilization = None,
    nodes: CompareNodes = str(COMPARE.nodes),
    gpus_per_node: CompareGpusPerNode = str(COMPARE.gpus_per_node),
    nics_per_node: CompareNicsPerNode = str(COMPARE.nics_per_node),
    compressor: CompareCompressors = COMPARE_COMPRESSORS,
    collective: CompareCollective = COMPARE.collective,
    bucketing: CompareBucketing = COMPARE.bucketing,
    iterations_factor: IterationsFactor = None,
    codec_cost: CodecCost = None,
    out: CompareOut = None,
    force: ReportForce = False,
    fabric: CompareFabric = None,
):
    """Fix the transport or compress? For each model and bandwidth: no compression today, the transport fixed (utilization 1; NCCL's fitted efficiencies at 1 where it prices the run), and the best real compressor today (none where no compressor changes the run).

    Example:

    \b
    sweep compare --model resnet50,gpt2-xl --bw 10,100 \\
        --out results/compare
    """
    from netsweep_jax.sweep.analysis import compare as comparison
    from netsweep_jax.sweep.core.values import parse_values

    models = _compared_models(ctx, model, profile, iteration_time)
    if isinstance(utilization, str):  # from --busbw (options.take_busbw): compare takes one
        values = parse_values(utilization, NUMERIC_AXES["utilization"])
        if values.size != 1:  # the text is the utilizations it converted to: not what the user typed
            raise InputError("compare takes one value (today's utilization)", param="busbw")
        utilization = float(values[0])
        if utilization >= 1:  # --busbw refuses the low end itself
            raise InputError(
                f"is utilization {utilization:g} of the link; compare's today must be below 1 (the transport "
                "fixed is utilization 1)",
                param="busbw",
            )
    settings: dict[str, Any] = dict(
        models=models,
        gpu=gpu,
        precision=precision,
        batch=batch,
        seq_len=seq_len,
        bandwidth=bandwidth,
        utilization=utilization,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        # not given: compare's list, less what a model cannot take (said)
        compressor=compressor if given(ctx, "compressor") else None,
        collective=collective,
        bucketing=bucketing,
        iterations_factor=iterations_factor,
        codec_cost=codec_cost,
        # a --profile file was read at it already
        iteration_time=iteration_time if profile is None else None,
    )
    settings.update(fabric_settings(given_options(ctx), settings, fabric, model="models"))
    settings["defaults"] = _compare_defaults(ctx, settings)
    rows, _, setup, paths = comparison.run(out, command=command_line(), force=force, **settings)
    say_assumed(setup["assumed"])
    typer.echo(
        comparison.table(rows, setup["utilization"])
    )  # with --out too, as need's table (it wrote the files alone)
    for path in paths:
        typer.echo(f"wrote {path}")


def _compared_models(
    ctx: typer.Context, model: str, profile: Path | None, iteration_time: float | None
) -> Any:
    """compare's models: the built-in names of ``--model``, or ``--profile``'s file read (with
    ``--iteration-time`` its T1; a hunt: compare alone of the data-parallel commands took no profile)."""
    if profile is None:  # --iteration-time scales them in compare, as grid's
        refuse_large_model(model, "compare")
        return model
    if given(ctx, "model"):
        raise InputError(
            "and --profile name two models: give one (a profile file names its own)", param="model"
        )
    from netsweep_jax.sweep.model.profile import load_profile

    return load_profile(profile, t1=iteration_time)


# compare's settings a reader must know to read its answer (its utilization is the paper's, not grid's 1).
COMPARE_DEFAULTS = {
    "utilization": (
        "--util",
        "(today's: the paper's measured ~32 Gbit/s of 100; grid and need assume --util 1, so their scaling "
        "factors are higher; their collective and buckets follow the workload: ring and Horovod fusion for the "
        "paper's CNNs, nccl-ring and DDP for transformers)",
    ),
    "collective": ("--collective", ""),
    "bucketing": ("--bucketing", ""),
    "nodes": ("--nodes", ""),
    "gpus_per_node": ("--gpus-per-node", ""),
    "nics_per_node": ("--nics-per-node", ""),
}


def _compare_defaults(ctx: typer.Context, values: dict[str, Any]) -> list[str]:
    """The settings of :data:`COMPARE_DEFAULTS` the user left unset, as options with their values (today's
    utilization where NCCL prices the collectives, a fabric or nccl given, is the fabric as fitted)."""
    from netsweep_jax.sweep.analysis.compare import AS_FITTED, nccl_priced, today_default

    nccl = nccl_priced(values.get("fabric"), values["collective"])
    today = today_default(nccl) if values["utilization"] is None else values["utilization"]
    values = {**values, "utilization": f"{today:g}"}
    said = []
    for name, (option, why) in COMPARE_DEFAULTS.items():
        if given(ctx, name) or values[name] is None:  # None: a fabric preset's, said by the grid
            continue
        # today's utilization where NCCL prices the collectives: its fitted efficiencies are today's transport
        why = (
            f"(today's: {AS_FITTED}; the fixed transport has them at 1)"
            if name == "utilization" and nccl
            else why
        )
        said.append(f"{option} {values[name]}{f' {why}' if why else ''}")
    # a hunt: random-k "won" at 1% density, its slower convergence unsaid
    if not given(ctx, "iterations_factor"):
        said.append(
            "--iterations-factor 1 for every compressor (time per step is compared, not time to accuracy)"
        )
    return said


SOLVED_AXES = {name: None for name in SOLVABLE}  # unset unless given: any of them may be the one solved for


@options(MODEL, axis_parameters(SOLVED_AXES, notes=LARGE_MODEL_NOTES), BUSBW, NEED_SETTINGS, CACHE, LAYOUT)
def need(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="Scaling factor(s) to reach, in (0, 1]; a comma list gives several. Data-parallel models.",
        ),
    ] = None,
    solve: Annotated[
        str | None,
        typer.Option(
            "--solve",
            help="Axis to solve for: the smallest bandwidth, utilization or ratio reaching the target, or the largest latency, overhead, slowdown or jitter still reaching it. Data-parallel models.",
        ),
    ] = None,
    network_share: Annotated[
        str | None,
        typer.Option(
            "--network-share",
            metavar="PERCENT",
            help="Large models: the most the network may cost the layout, in percent of its step (1 - its step on an ideal network over its step; 10 or 10%; a comma list gives several): the smallest NIC rate, the smallest NICs per node and the largest spine oversubscription that keep it there. The layout: sweep plan's best, with the layout options given (--tp, --pp, ...) held; a launch file's as it gives it.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write the answers as a cube (.h5). Data-parallel models."),
    ] = None,
    force: Force = False,
    **settings,
):
    """Where a target scaling factor is reached: the smallest bandwidth, utilization or ratio, or the largest latency, overhead, slowdown or jitter. For a large model, the fabric at which the network costs a layout at most a share of its step.

    Example:

    \b
    sweep need --model resnet50 --target 0.99 --solve ratio \\
        --bw 1,10,25,40,100 --nodes 2,4,8

    Example:

    \b
    sweep need --model llama3-70b --gpus 1024 --global-batch 1024 \\
        --tp 8 --pp 4 --network-share 10
    """
    from netsweep_jax.sweep.analysis import layout_jobs

    chosen = given_options(ctx)
    family = layout_jobs.family_of(
        settings.get("model"), settings.get("arch"), "model" in chosen, settings.get("profile")
    )
    asked = {"target": target, "solve": solve, "network_share": network_share, "out": out, "force": force}
    family.hook("need_command")(settings, chosen, asked)


def need_of_large_model(settings: dict[str, Any], chosen: frozenset[str], asked: dict[str, Any]) -> None:
    """``sweep need`` of a large model (the layout family): ``--network-share`` asked, the data-parallel
    questions refused (:func:`_need_of_layouts`)."""
    model = settings.get("model") if "model" in chosen else "--arch"
    for name in ("target", "solve", "out"):
        if asked[name] is not None:
            raise InputError(
                f"is for data-parallel models; {model} is a large model: sweep need --network-share PERCENT "
                "prints the fabric at which the network costs its layout at most that share of the step, "
                f"sweep plan --model {model} what the network costs its best layouts",
                param=name,
            )
    if asked["network_share"] is None:
        raise InputError(
            f"needed for {model}, a large model: the most the network may cost the layout, in percent of its "
            f"step (sweep need --model {model} --network-share 10 gives the NIC rate, NICs per node and spine "
            f"oversubscription that keep it there; sweep plan --model {model} what the network costs its best "
            f"layouts)",
            param="network_share",
        )
    _need_of_layouts(asked["network_share"], settings, chosen)


def need_of_data_parallel(settings: dict[str, Any], chosen: frozenset[str], asked: dict[str, Any]) -> None:
    """``sweep need`` of data-parallel profiles: ``--target`` and ``--solve`` asked, a layout option refused (but a
    fabric and its spine: NCCL's collective on a fabric) (:func:`_need_of_profiles`)."""
    if asked["network_share"] is not None:
        raise InputError(
            f"is for large models (a layout's step); for {settings.get('model')} give --target and --solve",
            param="network_share",
        )
    options, network = data_parallel_options(settings, chosen)
    target, solve = asked["target"], asked["solve"]
    if target is None or solve is None:
        missing = "target" if target is None else "solve"
        raise InputError(
            "needed: the scaling factor(s) to reach (--target) and the axis to solve for (--solve)",
            param=missing,
        )
    given = [name for name in ("collective", "bucketing", "compressor") if name in chosen]
    _need_of_profiles(target, solve, asked["out"], asked["force"], {**options, **network}, given)


def _need_of_profiles(
    target: str,
    solve: str,
    out: Path | None,
    force: bool,
    settings: dict[str, Any],
    given: Sequence[str] = (),
) -> None:
    """``sweep need`` of data-parallel profiles: :func:`sweep.analysis.need.solve` per target, one table each
    (``given``: the named settings the user set, each a column of it)."""
    from netsweep_jax.sweep.analysis.need import answer_table, solved_grid
    from netsweep_jax.sweep.analysis.need import solve as solve_for
    from netsweep_jax.sweep.core.values import number
    from netsweep_jax.sweep.io.cube import grid_inputs, write_dataset
    from netsweep_jax.sweep.io.paths import CUBE_SUFFIXES, check_new_file

    targets = [number(t.strip(), "--target") for t in target.split(",")]
    twice = next((t for i, t in enumerate(targets) if t in targets[:i]), None)
    if twice is not None:  # a cube's target dim of two equal values, which select could not pick from
        raise InputError(f"{target!r}: value {twice:g} appears twice; each value once", param="target")
    if out is not None:
        check_new_file(out, force=force, suffixes=CUBE_SUFFIXES)
    models, settings["dtype"] = models_from(settings)
    answers = [solve_for(models, target=t, axis=solve, **settings) for t in targets]
    say_assumed(str(answers[0].attrs.get("assumed", "")))
    # The cube written before the tables are printed: a closed stdout (| head, a full disk) lost it (a hunt).
    if out is not None:
        ds = answers[0]
        if len(answers) > 1:  # one cube: the targets as a dim, first
            import xarray as xr

            ds = xr.concat(answers, dim="target", combine_attrs="drop_conflicts").assign_coords(
                target=("target", targets, {"units": "1", "long_name": "target scaling factor"})
            )
        # the profiles the answers are of and the reduce-cost table, as a sweep's cube keeps them
        inputs = grid_inputs(solved_grid(models, solve, **settings))
        write_dataset(ds, out, command=command_line(), overwrite=force, inputs=inputs)
    typer.echo("\n\n".join(answer_table(ds, given) for ds in answers))
    if out is not None:
        typer.echo(f"wrote {out}")


def _need_of_layouts(network_share: str, settings: dict[str, Any], chosen: frozenset[str]) -> None:
    """``sweep need --network-share`` of a large model (:mod:`sweep.analysis.layout_need`): sweep plan's best with
    the layout options given held, or a launch file's layout; the assumed line, then the table."""
    from netsweep_jax.sweep.analysis import layout_jobs, layout_need
    from netsweep_jax.sweep.cli.options import say
    from netsweep_jax.sweep.core.schema import assumed_line

    shares = layout_need.parse_shares(network_share)
    layout_jobs.refuse_data_parallel_options(settings, chosen)
    # The layout options given are held and the rest searched, as sweep plan does (a hunt: --recompute full alone
    # had held sweep grid's ZeRO 0, which did not fit, where plan finds ZeRO 3); a launch file, or --dp without a
    # GPU count (the cluster is then the layout's), gives one layout, what it does not set at sweep grid's defaults.
    search = "launch" not in chosen and not ("dp" in chosen and not {"gpus", "nodes"} & chosen)
    grid = layout_jobs.layout_grid_from(settings, chosen, search=search, say=say)
    grid.spine()  # one oversubscription: the one the answers hold (a list is refused before any work)
    held, answers = layout_need.need_of_layouts(grid, shares, say)  # a search says so as it starts
    say_assumed(assumed_line((*grid.assumed, *layout_need.phrases(grid, searched=search))))
    typer.echo(layout_need.table(held, shares, answers))


def refuse_large_model(model: str | None, command: str) -> None:
    """Refuse a large-model preset for a data-parallel analysis, pointing at the commands that model it."""
    from netsweep_jax.sweep.model.llms import LLMS

    large = [n.strip() for n in str(model or "").split(",") if n.strip().lower() in LLMS]
    if large:
        raise InputError(
            f"{large[0]}: a large model (tensor, pipeline and data parallel): sweep {command} answers for "
            f"data-parallel profiles (sweep models lists both); ask sweep plan --model {large[0]} what the "
            f"network costs its best layouts, or sweep grid --model {large[0]} for every layout",
            param="model",
        )


CALIBRATION_AXES = ("nics_per_node", "fusion_buffer", "fusion_timeout")

# calibrate's own options.
Measurements = Annotated[
    list[Path] | None,
    typer.Argument(
        help="CSV: nodes,gpus_per_node,bandwidth and scaling_factor or iteration_time; optional model (built-in or profile file), collective, t1 and any axis; other columns are labels for --per and --train. With --nccl-tests: nccl-tests logs, one test each.",
        show_default=False,
    ),
]
NcclTests = Annotated[
    bool,
    typer.Option(
        "--nccl-tests",
        help="The files are nccl-tests' output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf): fit the fabric's constants (eta_net, eta_nvl, latency, a collective's fixed cost and the pipeline's fill; the fill's message held at the shipped fit's) and write a fabric file for grid, plan, need and compare --fabric FILE (--out; default results/fabric-<timestamp>.json). Several hosts need --nics-per-node and --bw.",
    ),
]
NicBandwidth = Annotated[
    str | None,
    typer.Option(
        *axis_flags("bandwidth", "--bw"),
        metavar="GBIT",
        help="With --nccl-tests: each NIC's rate, Gbit/s (nccl-tests does not print it).",
    ),
]
HostGpus = Annotated[
    str | None,
    typer.Option(
        *axis_flags("gpus_per_node", "--gpus-per-node"),
        metavar="N",
        help="With --nccl-tests: the GPUs each host holds, as built (default: the GPU's system's, 8 for an "
        "H100); fewer ranks a host than its GPUs reach only their share of its NICs.",
        show_default=False,
    ),
]
Profiles = Annotated[
    list[Path] | None, typer.Option("--profile", help="Profile file(s) (repeat); replace --model.")
]
Fit = Annotated[
    str,
    typer.Option("--fit", help="What to fit, comma list: utilization, latency, overhead, slowdown, jitter."),
]
Per = Annotated[
    list[str] | None,
    typer.Option(
        "--per", help="PARAM=COLUMN: one PARAM per value of a column, e.g. overhead=framework (repeat)."
    ),
]
Bounds = Annotated[
    list[str] | None,
    typer.Option("--bounds", help="PARAM=LOW:HIGH in the axis's units, e.g. overhead=0:50 (repeat)."),
]
CalibrateTrain = Annotated[
    str | None,
    typer.Option(
        "--train",
        help="Fit on the rows this selects and report the error on the others, e.g. 'gpus <= 16' (a runs "
        "file: its groups, comma list, as validate --llm).",
    ),
]
CalibrateOut = Annotated[
    Path | None,
    typer.Option("--out", help="Write the result as JSON (with --nccl-tests: the fabric file)."),
]


@options(
    MODEL[:1],
    MODEL[2:6],
    [CALIBRATE_COLLECTIVE, *(p for p in COLLECTIVE_SETTINGS if p.name != "collective")],
    axis_parameters(
        names=CALIBRATION_AXES,
        help_suffix=" One value; a column may set it per row.",
        # nccl-tests logs of several hosts take no default (they do not print their NICs): said where it shows
        notes={
            "nics_per_node": " The default is for measurements; nccl-tests logs of several hosts need it."
        },
    ),
    CACHE,
)
def calibrate(
    ctx: typer.Context,
    measurements: Measurements = None,
    nccl_tests: NcclTests = False,
    bandwidth: NicBandwidth = None,
    gpus_per_node: HostGpus = None,
    profile: Profiles = None,
    iteration_time: IterationTime = None,
    fit: Fit = "utilization",
    per: Per = None,
    bounds: Bounds = None,
    train: CalibrateTrain = None,
    out: CalibrateOut = None,
    force: Force = False,
    **settings,
):
    """Infer the model parameters measured runs imply, and how well they predict held-out runs. A file of
    large-model runs (tp, pp and metric columns, as sweep validate --llm reads) fits validate --llm's constants
    instead (matrix efficiency per stack and GPU die, one memory efficiency); --train then names groups of its runs. For NCCL's own
    collective (--collective nccl, or --fabric FILE in grid, plan, need and compare), --nccl-tests fits a fabric
    file to logs of NCCL's tests."""
    from netsweep_jax.sweep.analysis.calibrate import calibrate_file
    from netsweep_jax.sweep.analysis.calibration_report import report_text
    from netsweep_jax.sweep.io.runs import is_runs_file

    if nccl_tests:
        return _calibrate_nccl_tests(
            ctx, measurements or [], out, force, settings["nics_per_node"], bandwidth, gpus_per_node
        )
    if bandwidth is not None:
        raise InputError(
            f"{bandwidth}: with --nccl-tests only (a measurements file gives each row's bandwidth)",
            param="bandwidth",
        )
    if gpus_per_node is not None:
        raise InputError(
            f"{gpus_per_node}: with --nccl-tests only (a measurements file gives each row's gpus_per_node)",
            param="gpus_per_node",
        )
    if not measurements or len(measurements) > 1:
        raise InputError(
            "give one measurements CSV (or --nccl-tests and nccl-tests logs)"
            if not measurements
            else f"{' '.join(map(str, measurements))}: give one measurements CSV (several files: --nccl-tests "
            "logs only)"
        )
    (measured,) = measurements
    if is_runs_file(measured):
        return _calibrate_runs(ctx, measured, train, out, force)
    # --model was dropped for the files, in silence (a hunt), as grid refuses the pair
    if profile and given(ctx, "model"):
        raise InputError(
            "and --profile name two models: give one (a profile file names its own)", param="model"
        )

    setup = _calibration_settings(settings, given_options(ctx))
    result = calibrate_file(
        measured,
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
        command=command_line(),
    )
    say_assumed(str(result.get("assumed") or ""))
    typer.echo(report_text(result))
    if out is not None:
        typer.echo(f"wrote {out}")


def _calibration_settings(settings: dict[str, Any], chosen: Collection[str]) -> "Settings":
    """The settings of a measurements file's rows that do not give them, taken out of ``settings``: one value of
    each of :data:`CALIBRATION_AXES` (--nics-per-node not ``chosen``: None, its default, which the fit says where
    a GPU's system has more), the reduce table read, the collective, bucketing and intra-node rate."""
    from netsweep_jax.sweep.analysis.calibration_rows import Settings
    from netsweep_jax.sweep.core.values import parse_values

    one = {}
    for name in CALIBRATION_AXES:
        text = settings.pop(name)
        values = parse_values(text, NUMERIC_AXES[name])
        if len(values) != 1:
            raise InputError(f"{text}: calibrate takes one value", param=name)
        one[name] = float(values[0])
    if "nics_per_node" not in chosen:
        one["nics_per_node"] = None  # type: ignore[assignment]  # Settings' "not given"
    table = settings.pop("reduce_table")
    if table is not None:
        from netsweep_jax.sweep.model.vector_add import read_table

        table = read_table(table)
    return Settings(
        collective=settings.pop("collective"),
        bucketing=settings.pop("bucketing"),
        reduce_table=table,
        intra_bandwidth=settings.pop("intra_bandwidth"),
        **one,
    )


# What calibrate reads besides a large-model runs file; any other option the user sets is refused by name.
RUNS_FILE_OPTIONS = ("measurements", "train", "out", "force", "compile_cache")
# What calibrate --nccl-tests reads besides its logs; any other option the user sets is refused by name.
NCCL_TESTS_OPTIONS = (
    "measurements",
    "nccl_tests",
    "nics_per_node",
    "bandwidth",
    "gpus_per_node",
    "out",
    "force",
    "compile_cache",
)


def _refuse_options_but(ctx: typer.Context, allowed: Collection[str], what: str) -> None:
    """Refuse the first option given (by name, in order) that calibrate of ``what`` does not read: never ignored."""
    extra = sorted(given_options(ctx) - set(allowed))
    if extra:
        # --train reads large-model runs too (a hunt: said as data-parallel alone)
        readers = "data-parallel measurements" + (
            " and large-model runs" if extra[0] in RUNS_FILE_OPTIONS else ""
        )
        raise InputError(f"is for {readers}, not {what}", param=extra[0])


def _calibrate_nccl_tests(
    ctx: typer.Context,
    logs: list[Path],
    out: Path | None,
    force: bool,
    nics: str,
    bandwidth: str | None,
    host_gpus: str | None,
) -> None:
    """``sweep calibrate --nccl-tests LOG [LOG...]``: fit the fabric's constants, print, write the fabric file."""
    from netsweep_jax.sweep.analysis import nccl_calibration
    from netsweep_jax.sweep.core.values import parse_values

    _refuse_options_but(ctx, NCCL_TESTS_OPTIONS, "nccl-tests logs")
    if not logs:
        raise InputError("give one nccl-tests log or more (its output, all_reduce_perf and the like)")

    def one(name: str, text: str | None) -> float | None:
        if text is None or not given(ctx, name):
            return None
        values = parse_values(text, NUMERIC_AXES[name])
        if len(values) != 1:
            raise InputError(f"{text}: give one value", param=name)
        return float(values[0])

    count, rate = one("nics_per_node", nics), one("bandwidth", bandwidth)
    hosts = one("gpus_per_node", host_gpus)
    path, c = nccl_calibration.run(
        logs,
        out,
        nics=None if count is None else int(count),
        nic_gbps=rate,
        force=force,
        command=command_line(),
        host_gpus=None if hosts is None else int(hosts),
    )
    for line in nccl_calibration.table(c):
        typer.echo(line)
    if (count is None) != (rate is None):  # a log of one host needs neither: half a description is not kept
        alone = "--nics-per-node" if rate is None else "--bw"
        typer.echo(
            f"note: {alone} alone is not recorded: the file records its hosts' NICs from --nics-per-node and --bw"
        )
    typer.echo(f"wrote {path}")


def _calibrate_runs(
    ctx: typer.Context,
    measurements: Path,
    train: str | None,
    out: Path | None,
    force: bool,
) -> None:
    """``sweep calibrate`` of large-model runs: fit, predict every run, print, and write JSON."""
    from netsweep_jax.sweep.analysis import llm_validation

    if given(ctx, "fit"):
        raise InputError(
            "large-model runs fit validate --llm's constants (the matrix efficiency per stack and die, the memory "
            "efficiency); --fit is for data-parallel measurements",
            param="fit",
        )
    # A runs file states each run's settings in its columns: any other option is refused, never ignored.
    _refuse_options_but(ctx, RUNS_FILE_OPTIONS, "large-model runs")
    fitted, v, _ = llm_validation.calibrate_runs_file(measurements, train, out, force, command_line())
    typer.echo(llm_validation.calibrate_table(fitted, v))
    if out is not None:
        typer.echo(f"wrote {out}")
