"""The ``sweep`` command line: parse options, call the library, print.

A domain error (:class:`~sweep.errors.InputError`) becomes one line on stderr and
exit code 2, with no traceback and no output file.
"""

import contextlib
import functools
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from sweep.errors import InputError

app = typer.Typer(
    help="netsweep: is the network the bottleneck of my distributed training? "
    "Exact what-if sweeps of data-parallel training over bandwidth, utilization, "
    "compression ratio, node count and more.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SYNTAX = ("Values: a list 10,25,100; a range 1..100 (step 1), 1..100:5 (step 5), "
          "1..1000@20 (20 points), 1..1000@20log (20 log-spaced points); mix with commas.")


def fail(message):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def domain_errors(fn):
    """Turn InputError into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as e:
            fail(str(e))

    return wrapper


Model = Annotated[str, typer.Option("--model", help="Built-in profile(s), comma-separated: resnet50, resnet101, vgg16.")]
ProfileOpt = Annotated[Path | None, typer.Option("--profile", help="Profile file: .json, .csv (name,grad_bytes,backward_us) or the paper's .bk.log; replaces --model.")]
IterTime = Annotated[float | None, typer.Option("--iteration-time", help="Single-GPU iteration time T1 in seconds, for --profile formats without it.")]
Bw = Annotated[str, typer.Option("--bw", help=f"Bandwidth, Gbit/s (> 0). {SYNTAX}")]
Util = Annotated[str, typer.Option("--util", help="Network utilization, 0 < u <= 1. Value syntax as --bw.")]
Ratio = Annotated[str, typer.Option("--ratio", help="Gradient compression ratio, >= 1. Value syntax as --bw.")]
Nodes = Annotated[str, typer.Option("--nodes", help="Number of nodes, integer >= 1. Value syntax as --bw.")]
Gpus = Annotated[str, typer.Option("--gpus-per-node", help="GPUs per node, integer >= 1. Value syntax as --bw.")]
Latency = Annotated[str, typer.Option("--latency", help="Per-message latency, microseconds >= 0. Value syntax as --bw.")]
Collective = Annotated[str, typer.Option("--collective", help="All-reduce: ring, tree, ps, hierarchical (comma list).")]
FusionMb = Annotated[str, typer.Option("--fusion-mb", help="Tensor fusion buffer, MiB >= 0 (0: one bucket per tensor). Value syntax as --bw.")]
FusionMs = Annotated[str, typer.Option("--fusion-ms", help="Tensor fusion timeout, ms >= 0. Value syntax as --bw.")]
IntraBw = Annotated[float, typer.Option("--intra-bw", help="Intra-node bandwidth, Gbit/s, for hierarchical.")]
ReduceCost = Annotated[Path | None, typer.Option("--reduce-cost", help="bytes,seconds table of one vector add (cuda_vec_add.log format); default: a V100 model.")]
X64 = Annotated[bool, typer.Option("--x64", help="Compute and store in float64 (default float32).")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def grid_from_options(model, profile, iteration_time, bw, util, ratio, nodes, gpus_per_node, latency,
                      collective, fusion_mb, fusion_ms, intra_bw, reduce_cost, x64):
    """Validate every option and build the grid (raises InputError)."""
    from kernels import COLLECTIVES
    from sweep.axes import NUMERIC_AXES, parse_names, parse_values
    from sweep.builtin import builtin_names
    from sweep.grid import make_grid
    from sweep.profile import load_profile
    from sweep.reduce_cost import read_table

    if profile is not None:
        models = [load_profile(profile, t1=iteration_time)]
    else:
        models = parse_names(model, "--model", builtin_names())
    texts = {"bandwidth": bw, "utilization": util, "ratio": ratio, "nodes": nodes,
             "gpus_per_node": gpus_per_node, "latency": latency, "fusion_buffer": fusion_mb,
             "fusion_timeout": fusion_ms}
    values = {name: parse_values(texts[name], spec) for name, spec in NUMERIC_AXES.items()}
    collectives = parse_names(collective, "--collective", COLLECTIVES)
    table = read_table(reduce_cost) if reduce_cost is not None else None
    if not intra_bw > 0:
        raise InputError(f"--intra-bw {intra_bw:g}: intra-node bandwidth must be > 0 Gbit/s")
    return make_grid(models, collective=collectives, reduce_table=table,
                     reduce_source=str(reduce_cost) if reduce_cost else None,
                     intra_bandwidth=intra_bw, dtype="float64" if x64 else "float32", **values)


def progress_bar(enabled):
    """A ``progress(total, done)`` context-manager factory for :func:`sweep.job.run_grid`."""
    if not enabled:
        return None

    @contextlib.contextmanager
    def progress(total, done):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        columns = [TextColumn("sweep"), BarColumn(), TaskProgressColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TextColumn("ETA"), TimeRemainingColumn()]
        with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task("sweep", total=total, completed=done, rate="")

            def advance(n):
                bar.advance(task, n)
                speed = bar.tasks[0].speed
                bar.update(task, rate=f"{speed:,.0f} configs/s" if speed else "")

            yield advance

    return progress


@app.command()
@domain_errors
def grid(
    model: Model = "resnet50",
    profile: ProfileOpt = None,
    iteration_time: IterTime = None,
    bw: Bw = "1,10,25,40,100",
    util: Util = "1",
    ratio: Ratio = "1",
    nodes: Nodes = "8",
    gpus_per_node: Gpus = "8",
    latency: Latency = "0",
    collective: Collective = "ring",
    fusion_mb: FusionMb = "64",
    fusion_ms: FusionMs = "5",
    intra_bw: IntraBw = 1200.0,
    reduce_cost: ReduceCost = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output cube (.h5). Default: results/<model>-<timestamp>.h5.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out (and its .partial).")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Finish an interrupted run of the same command from OUT.partial.")] = False,
    x64: X64 = False,
    quiet: Quiet = False,
    block_configs: Annotated[int | None, typer.Option("--block-configs", min=1, help="Configurations per block (memory budget: 16 B each in float32) [default: 262144; with --resume, the partial file's].")] = None,
    distributed: Annotated[bool, typer.Option("--distributed", help="Share the sweep among processes joined by jax.distributed; each writes a shard, process 0 stitches OUT. OUT's directory must be shared.", rich_help_panel="Several machines")] = False,
    coordinator: Annotated[str | None, typer.Option("--coordinator", help="host:port of process 0 (default: $JAX_COORDINATOR_ADDRESS or the cluster launcher's).", rich_help_panel="Several machines")] = None,
    num_processes: Annotated[int | None, typer.Option("--num-processes", min=1, help="Process count (default: $JAX_NUM_PROCESSES or the launcher's).", rich_help_panel="Several machines")] = None,
    process_id: Annotated[int | None, typer.Option("--process-id", min=0, help="This process's id (default: $JAX_PROCESS_ID or the launcher's).", rich_help_panel="Several machines")] = None,
    stitch_timeout: Annotated[float, typer.Option("--stitch-timeout", help="Process 0 gives up waiting for a shard unchanged this many seconds.", rich_help_panel="Several machines")] = 600.0,
):
    """Sweep every combination of the axes and write an HDF5 cube.

    Example: sweep grid --model resnet50 --bw 10,25,100 --ratio 1..100
    """
    from sweep.job import default_out, run_grid, summary_line

    g = grid_from_options(model, profile, iteration_time, bw, util, ratio, nodes, gpus_per_node, latency,
                          collective, fusion_mb, fusion_ms, intra_bw, reduce_cost, x64)
    target = out if out is not None else default_out(g)
    command = "sweep " + shlex.join(sys.argv[1:])
    show_bar = not quiet and sys.stderr.isatty()
    try:
        if distributed:
            from sweep.distributed import StitchTimeout, rendezvous, run_distributed

            if out is None:
                raise InputError("--distributed: give --out, a path every process can reach")
            pid, count = rendezvous(coordinator, num_processes, process_id)
            try:
                s = run_distributed(g, target, pid, count, command=command, force=force, resume=resume,
                                    progress=progress_bar(show_bar), block_configs=block_configs,
                                    stitch_timeout=stitch_timeout)
            except StitchTimeout as e:
                typer.echo(f"error: {e}", err=True)
                raise typer.Exit(code=3) from None
        else:
            s = run_grid(g, target, command=command, force=force, resume=resume,
                         default_out_dir=out is None, progress=progress_bar(show_bar),
                         block_configs=block_configs)
    except KeyboardInterrupt:
        typer.echo(f"interrupted; finished blocks are kept in {target}.partial. "
                   f"Finish with the same command plus --resume.", err=True)
        raise typer.Exit(code=130) from None
    if not quiet:
        typer.echo(summary_line(s))
    else:
        typer.echo(s["out"])


@app.command()
def models():
    """List the built-in profiles."""
    from sweep.builtin import builtin_names, builtin_profile

    typer.echo(f"{'model':<10} {'tensors':>7} {'grad bytes':>12} {'backward ms':>11} {'T1 s':>8}  device batch")
    for name in builtin_names():
        p = builtin_profile(name)
        typer.echo(f"{name:<10} {len(p.names):>7} {int(p.total_bytes):>12,} {p.backward_time * 1e3:>11.2f} "
                   f"{p.t1:>8.4f}  {p.device} {p.batch_size} ({p.source})")


@app.command()
@domain_errors
def show(file: Annotated[Path, typer.Argument(help="A cube written by sweep grid.")]):
    """Describe a cube: dims, variables (min / median / max), the command, the profiles."""
    from sweep.reader import describe

    typer.echo(describe(file))


@app.command()
@domain_errors
def select(
    file: Annotated[Path, typer.Argument(help="A cube written by sweep grid.")],
    model: Annotated[str | None, typer.Option("--model", help="Model name(s).")] = None,
    collective: Annotated[str | None, typer.Option("--collective", help="Collective(s).")] = None,
    bw: Annotated[str | None, typer.Option("--bw", help="Bandwidth value(s), Gbit/s, as in the cube.")] = None,
    util: Annotated[str | None, typer.Option("--util", help="Utilization value(s).")] = None,
    ratio: Annotated[str | None, typer.Option("--ratio", help="Compression ratio value(s).")] = None,
    nodes: Annotated[str | None, typer.Option("--nodes", help="Node count(s).")] = None,
    gpus_per_node: Annotated[str | None, typer.Option("--gpus-per-node", help="GPUs per node.")] = None,
    latency: Annotated[str | None, typer.Option("--latency", help="Latency value(s), us.")] = None,
    fusion_mb: Annotated[str | None, typer.Option("--fusion-mb", help="Fusion buffer value(s), MiB.")] = None,
    fusion_ms: Annotated[str | None, typer.Option("--fusion-ms", help="Fusion timeout value(s), ms.")] = None,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
):
    """Print a slice of a cube as a table (one row per remaining combination)."""
    from sweep.reader import select_table

    chosen = {"model": model, "collective": collective, "bandwidth": bw, "utilization": util,
              "ratio": ratio, "nodes": nodes, "gpus_per_node": gpus_per_node, "latency": latency,
              "fusion_buffer": fusion_mb, "fusion_timeout": fusion_ms}
    typer.echo(select_table(file, {k: v for k, v in chosen.items() if v is not None}, csv=csv))


@app.command()
@domain_errors
def paper(
    out: Annotated[Path, typer.Option("--out", help="Output directory for paper.h5, figures and REPORT.md.")] = Path("results/paper"),
    profiles_dir: Annotated[Path | None, typer.Option("--profiles-dir", help="Directory of measured <model>.bk.log files to put beside the built-in profiles.")] = None,
):
    """Reproduce the paper's what-if study: cube, figures and a checked REPORT.md."""
    from sweep.paper import run_paper

    command = "sweep paper " + shlex.join(sys.argv[2:]) if sys.argv[1:2] == ["paper"] else "sweep paper"
    for path in run_paper(out, profiles_dir, command=command.strip()):
        typer.echo(f"wrote {path}")


@app.command()
@domain_errors
def need(
    target: Annotated[float, typer.Option("--target", help="Scaling factor to reach, in (0, 1].")],
    solve: Annotated[str, typer.Option("--solve", help="Axis to solve for: ratio, utilization or bandwidth.")],
    model: Model = "resnet50",
    profile: ProfileOpt = None,
    iteration_time: IterTime = None,
    bw: Annotated[str | None, typer.Option("--bw", help=f"Bandwidth, Gbit/s. {SYNTAX}")] = None,
    util: Annotated[str | None, typer.Option("--util", help="Network utilization, 0 < u <= 1.")] = None,
    ratio: Annotated[str | None, typer.Option("--ratio", help="Gradient compression ratio, >= 1.")] = None,
    nodes: Nodes = "8",
    gpus_per_node: Gpus = "8",
    latency: Latency = "0",
    collective: Collective = "ring",
    fusion_mb: FusionMb = "64",
    fusion_ms: FusionMs = "5",
    intra_bw: IntraBw = 1200.0,
    reduce_cost: ReduceCost = None,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the answers as a cube (.h5).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")] = False,
    x64: X64 = False,
):
    """Smallest compression ratio, utilization or bandwidth reaching a target scaling factor.

    Example: sweep need --model resnet50 --target 0.99 --solve ratio --bw 1,10,25,40,100 --nodes 2,4,8
    """
    from sweep.inverse import BOUNDS, answer_text
    from sweep.inverse import solve as solve_for

    if solve not in BOUNDS:
        raise InputError(f"--solve {solve!r}: must be one of {', '.join(BOUNDS)}")
    given = {"bandwidth": bw, "utilization": util, "ratio": ratio}
    if given[solve] is not None:
        raise InputError(f"--solve {solve}: do not also give values for that axis")
    if solve != "bandwidth" and bw is None:
        raise InputError("--bw: give the bandwidth(s) in Gbit/s (only --solve bandwidth goes without)")
    defaults = {"bandwidth": "1", "utilization": "1", "ratio": "1"}
    texts = {k: (v if v is not None else defaults[k]) for k, v in given.items()}
    if out is not None and out.exists() and not force:
        raise InputError(f"--out {out}: file exists; pass --force to overwrite it")
    g = grid_from_options(model, profile, iteration_time, texts["bandwidth"], texts["utilization"],
                          texts["ratio"], nodes, gpus_per_node, latency, collective, fusion_mb, fusion_ms,
                          intra_bw, reduce_cost, x64)
    kwargs = {d: g.values[d] for d in g.values if d != solve}
    ds = solve_for(list(g.profiles), target=target, axis=solve, collective=list(g.collectives),
                   reduce_table=g.reduce_table, intra_bandwidth=g.intra_bandwidth, dtype=g.dtype, **kwargs)
    df = ds.to_dataframe().reset_index()
    varying = [d for d in ds.dims if ds.sizes[d] > 1 or d == "model"]
    df["answer"] = [answer_text(v, s, solve) for v, s in zip(df[f"required_{solve}"], df["status"])]
    typer.echo(f"smallest {solve} reaching scaling factor {target:g}:")
    typer.echo(df[varying + ["answer"]].to_string(index=False))
    if out is not None:
        import datetime

        import jax

        from sweep import __version__
        from sweep.job import device_kind
        from sweep.reader import write_dataset

        ds.attrs.update({
            "netsweep_version": __version__, "command": "sweep " + shlex.join(sys.argv[1:]),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "jax_version": jax.__version__, "device_kind": device_kind(),
        })
        write_dataset(ds, out)
        typer.echo(f"wrote {out}")


@app.command()
@domain_errors
def calibrate(
    measurements: Annotated[Path, typer.Argument(help="CSV: nodes,gpus_per_node,bandwidth and scaling_factor or iteration_time; optional model, ratio, latency, collective, fusion_buffer, fusion_timeout.")],
    model: Model = "resnet50",
    profile: ProfileOpt = None,
    iteration_time: IterTime = None,
    fit: Annotated[str, typer.Option("--fit", help="What to fit: utilization, or utilization,latency.")] = "utilization",
    out: Annotated[Path | None, typer.Option("--out", help="Write the fit as JSON.")] = None,
):
    """Infer the network utilization (and latency) that measured scaling implies."""
    import json

    from sweep.axes import parse_names
    from sweep.builtin import builtin_names, builtin_profile
    from sweep.calibrate import FITTABLE, read_measurements, report_text
    from sweep.calibrate import fit as run_fit
    from sweep.profile import load_profile

    axes = parse_names(fit, "--fit", FITTABLE)
    meas = read_measurements(measurements)
    if profile is not None:
        profiles = [load_profile(profile, t1=iteration_time)]
        default = profiles[0].model
    else:
        names = parse_names(model, "--model", builtin_names())
        names = list(dict.fromkeys(names + [m for m in meas.columns.get("model", []) if m in builtin_names()]))
        profiles = [builtin_profile(n) for n in names]
        default = names[0]
    result = run_fit(meas, profiles, default, axes)
    typer.echo(report_text(result))
    if out is not None:
        out.write_text(json.dumps(result, indent=2) + "\n")
        typer.echo(f"wrote {out}")


@app.command()
@domain_errors
def plot(
    file: Annotated[Path, typer.Argument(help="A cube from sweep grid or sweep need --out.")],
    x: Annotated[str, typer.Option("--x", help="Dim on the x axis.")],
    y: Annotated[str, typer.Option("--y", help="Line plot: the variable. Heatmap: the dim on the y axis.")] = "scaling_factor",
    hue: Annotated[str | None, typer.Option("--hue", help="Line plot: one line per value of this dim.")] = None,
    sel: Annotated[list[str] | None, typer.Option("--sel", help="DIM=VALUE to fix a dim; repeat for several.")] = None,
    kind: Annotated[str, typer.Option("--kind", help="line or heatmap.")] = "line",
    var: Annotated[str, typer.Option("--var", help="Heatmap: the variable to color.")] = "scaling_factor",
    out: Annotated[Path, typer.Option("--out", help="PNG file to write.")] = Path("figure.png"),
):
    """Line plots and heatmaps from a cube, labelled with its units.

    Example: sweep plot r.h5 --x bandwidth --y scaling_factor --hue nodes --sel ratio=1 --out fig.png
    """
    from sweep import plot as plots
    from sweep.reader import open_cube

    ds = open_cube(file)
    chosen = plots.parse_sel(sel or [], ds)
    if kind == "line":
        ax = plots.line_plot(ds, x, var=y, hue=hue, sel=chosen)
    elif kind == "heatmap":
        ax = plots.heatmap(ds, x, y, var=var, sel=chosen)
    else:
        raise InputError(f"--kind {kind!r}: must be line or heatmap")
    typer.echo(f"wrote {plots.save(ax.figure, out)}")


def main():
    app()


if __name__ == "__main__":
    main()
