"""``sweep grid``, ``sweep plan`` and ``sweep models``: sweeps of either model family into a cube."""

import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from netsweep_jax.sweep.cli.options import (
    abandon,
    axis_parameters,
    command_line,
    fail,
    given,
    given_options,
    options,
    say,
    say_assumed,
    typed_number,
)
from netsweep_jax.sweep.cli.parameters import (
    BUSBW,
    CACHE,
    DISTRIBUTED,
    DISTRIBUTED_NAMES,
    KERNEL,
    LARGE_MODEL_NOTES,
    LAYOUT,
    MODEL,
    PLAN_MODEL,
    PLAN_NETWORK,
    SETTINGS,
    Force,
    Out,
    Quiet,
    data_parallel_options,
    make_grid_from,
)
from netsweep_jax.sweep.core.errors import DiskFull, InputError, JoinTimeout, StitchTimeout
from netsweep_jax.sweep.core.interrupts import Interrupted, exit_code
from netsweep_jax.sweep.core.schema import assumed_line

# grid's own options. Its --force and --resume are not plan's: their help differs (a .partial file, a run).
GridForce = Annotated[bool, typer.Option("--force", help="Overwrite an existing --out (and its .partial).")]
GridResume = Annotated[
    bool, typer.Option("--resume", help="Finish an interrupted run of the same command from OUT.partial.")
]
BlockConfigs = Annotated[
    int | None,
    typer.Option(
        "--block-configs",
        parser=typed_number(int, 1),
        help="Configurations per block (memory budget: 16 B each in float32) (default: 262144 on a CPU, from the free device memory on a GPU (up to 2^26); with --resume, the partial file's).",
    ),
]
Variables = Annotated[
    str | None,
    typer.Option(
        "--vars",
        help="Variables to keep, comma list: scaling_factor, iteration_time, exposed_comm, comm_time, time_to_accuracy (default: the first four, and time_to_accuracy when a --compressor is not none); for a large model, any of the outputs sweep show lists (default: all).",
    ),
]
Store = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Storage dtype: float16, float32 or float64 (default: the compute dtype). float16 keeps the scaling factor to about 5e-4 near 1.",
    ),
]
Reduce = Annotated[
    list[str] | None,
    typer.Option(
        "--reduce",
        help="OP:DIM[,DIM...] with OP max, min, mean, argmax or argmin (repeat): reduce on the device as the sweep runs; the cube keeps the other dims (and, for argmax/argmin, the coordinate of the extreme). One family per sweep: max/argmax, min/argmin or mean.",
    ),
]


@options(
    MODEL,
    axis_parameters(notes=LARGE_MODEL_NOTES),
    BUSBW,
    SETTINGS,
    KERNEL,
    CACHE,
    DISTRIBUTED,
    LAYOUT,
)
def grid(
    ctx: typer.Context,
    out: Out = None,
    force: GridForce = False,
    resume: GridResume = False,
    quiet: Quiet = False,
    block_configs: BlockConfigs = None,
    vars: Variables = None,
    store: Store = None,
    reduce: Reduce = None,
    **settings,
):
    """Sweep every combination of the axes and write an HDF5 cube.

    Example: sweep grid --model resnet50 --bw 10,25,100 --ratio 1..100
    """
    from netsweep_jax.sweep.analysis import layout_jobs
    from netsweep_jax.sweep.cli.progress import progress_bar
    from netsweep_jax.sweep.engine.dispatch import check_kernel
    from netsweep_jax.sweep.io import job

    _check_distributed(ctx, settings)
    family = layout_jobs.family_of(
        settings.get("model"), settings.get("arch"), given(ctx, "model"), settings.get("profile")
    )
    g, assumed = family.hook("grid_command")(
        settings, given_options(ctx), {"variables": vars, "store": store, "reduce": reduce}
    )
    settings = {name: settings[name] for name in ("kernel", "distributed", *DISTRIBUTED_NAMES)}

    def announce() -> None:  # once the output is claimed: a refusal is one line
        say_assumed(assumed)

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
        announce=announce,
    )
    summary = _sweep(g, out, target, settings, common)
    _echo_summary(summary, g, quiet=quiet)


def grid_of_large_model(
    settings: dict[str, Any], chosen: Collection[str], kept: dict[str, Any]
) -> tuple[Any, str]:
    """``sweep grid``'s grid of a large model and its assumed line (the layout family's ``grid_command`` hook:
    :mod:`sweep.core.families`): its options checked (a data-parallel one set is refused) and filled as
    ``sweep plan`` fills them (:func:`~sweep.analysis.layout_jobs.layout_grid_from`)."""
    from netsweep_jax.sweep.analysis import layout_jobs

    layout_jobs.refuse_data_parallel_options(settings, chosen)
    g = layout_jobs.layout_grid_from(settings, chosen, say=say, **kept)
    return g, assumed_line(g.assumed)


def grid_of_data_parallel(
    settings: dict[str, Any], chosen: Collection[str], kept: dict[str, Any]
) -> tuple[Any, str]:
    """``sweep grid``'s grid of data-parallel profiles and its assumed line (the data-parallel family's
    ``grid_command`` hook): :func:`data_parallel_options`, then :func:`make_grid_from`."""
    options, network = data_parallel_options(settings, chosen)  # the engine's options stay in settings
    g = make_grid_from(options, **kept, **network)
    return g, g.assumed


def _check_distributed(ctx: typer.Context, settings: dict[str, Any]) -> None:
    """``--distributed``'s options, checked before anything starts; one given without it is refused (it would
    do nothing: the run is one process)."""
    if settings.get("distributed"):
        from netsweep_jax.sweep.io.distributed import check_options

        check_options(settings["coordinator"], settings["stitch_timeout"])
        return
    for name in DISTRIBUTED_NAMES:
        if given(ctx, name):
            raise InputError(
                "takes effect only with --distributed: add it, or leave this option out", param=name
            )


def _interrupted(
    e: BaseException,
    out: Path | None,
    cube: Path | None = None,
    finished: int = 0,
    force: bool = False,
    unwritten: Sequence[Path] | None = None,
) -> None:
    """End a sweep or a plan that a signal stopped with one line: where its finished blocks are kept and how to
    finish it (naming the --out that finds them where none was given: each run's default name is stamped anew;
    ``cube``, that --out where it is not the kept file's: a list of plans', of which ``finished`` were written
    before a signal between two of them, ``unwritten`` the cubes of those not written: :func:`_finishing`), or
    that nothing was kept; the exit code says which signal."""
    from netsweep_jax.sweep.io import paths

    kept = paths.kept_partial(e)  # only this run's own partial file, never another run's
    if kept is not None and kept.exists():
        fail(f"interrupted; finished blocks are kept in {kept}. Finish with "
             f"{_finishing(out, cube or _cube_of(kept), force, unwritten)}.", code=exit_code(e))  # fmt: skip
    if finished and cube is not None:  # stopped between two plans of a list (a review)
        fail(f"interrupted; {finished} of the plans finished. Finish with "
             f"{_finishing(out, cube, force, unwritten)}.", code=exit_code(e))  # fmt: skip
    fail("interrupted before any block was written; nothing was kept", code=exit_code(e))


def _cube_of(kept: Path) -> Path:
    """The cube whose finished blocks ``kept`` (``OUT.partial``) holds."""
    return kept.with_name(kept.name.removesuffix(".partial"))


def _finishing(out: Path | None, cube: Path, force: bool, unwritten: Sequence[Path] | None = None) -> str:
    """What finishes a run of ``cube``: the same command plus ``--resume``, and ``--out cube`` where the run had
    none (each run's default name is stamped anew, so the same command finds another). A run given ``--force``:
    ``--resume`` in its place (they cannot go together), the finished cubes it was to replace and did not yet
    moved away first (a resumed run never replaces a file: a hunt followed the hint into two refusals): those
    of ``unwritten`` (a list of plans' cubes not written), else ``cube``, that exist."""
    resume = "--resume" if out is not None else f"--resume --out {cube}"
    if not force:
        return f"the same command plus {resume}"
    old = [p for p in ([cube] if unwritten is None else unwritten) if p.exists()]
    moved = f"{', '.join(map(str, old))} moved away (a resumed run never replaces a file), " if old else ""
    return f"{moved}the same command with {resume} in place of --force"


def _sweep(
    g: Any, out: Path | None, target: Path, settings: dict[str, Any], common: dict[str, Any]
) -> dict[str, Any]:
    """Run ``sweep grid``'s sweep (on this machine, or its share under ``--distributed``) and return its summary;
    an interrupt, a timeout or a failing file system ends the command with one line."""
    from netsweep_jax.sweep.io import job, paths

    try:
        if settings.pop("distributed"):
            from netsweep_jax.sweep.io import distributed

            summary = distributed.run(g, out, **common, **settings)
        else:
            summary = job.run_grid(g, target, default_out_dir=out is None, **common)
    except (KeyboardInterrupt, Interrupted) as e:
        _interrupted(e, out, force=common["force"])
    except JoinTimeout as e:
        abandon(str(e), 3)
    except StitchTimeout as e:
        fail(str(e), code=3)
    except DiskFull as e:  # its text ends "plus --resume"
        fail(str(e) + ("" if out is not None else f" --out {target}"), code=1)
    except OSError as e:  # the file system failed under us (not bad input): one line, the partial kept
        kept = paths.kept_partial(e)
        said = " ".join(str(e.strerror or e).split())  # one line: HDF5's messages hold line breaks
        fail(
            f"writing {target} failed ({said})"
            + (
                f"; finished blocks are kept in {kept}: finish with {_finishing(out, _cube_of(kept), common['force'])}"
                if kept is not None and kept.exists()
                else ""
            ),
            code=1,
        )
    return summary


def _echo_summary(summary: dict[str, Any], g: Any, *, quiet: bool) -> None:
    """Print ``sweep grid``'s last line: the cube's path alone with ``--quiet``, else the run's summary, and for a
    whole cube that keeps them what its configurations are (a layout cube's: as plan would say)."""
    from netsweep_jax.sweep.analysis import layout_jobs
    from netsweep_jax.sweep.io import job

    if quiet:
        typer.echo(summary["out"])
        return
    # A whole cube that keeps a layout's status or fit (a data-parallel cube keeps neither: not opened again).
    counted = g.reduction is None and "shard" not in summary and {"status", "fits"} & set(g.variables)
    counts = layout_jobs.configuration_counts(summary["out"]) if counted else ""
    typer.echo(f"{job.summary_line(summary)}{'; ' if counts else ''}{counts}")


# plan's own options.
PlanOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Output cube (.h5) of the best layouts. Default: results/plan-<model>-<timestamp>.h5.",
    ),
]
Keep = Annotated[
    int,
    typer.Option(
        "--keep",
        parser=typed_number(int, 1, 100),
        help="Layouts to keep per setting, fastest first (1-100).",
    ),
]
PlanResume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Finish an interrupted plan of the same command from OUT.partial (a --fabric or "
        "--oversubscription list: keep the plans it finished, go on from the one it stopped in).",
    ),
]
AsCsv = Annotated[bool, typer.Option("--csv", help="Print the plan as CSV (one row per setting and layout).")]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print the plan as JSON (null for what is not a number).")
]


@options(PLAN_MODEL, LAYOUT, PLAN_NETWORK, BUSBW, CACHE, DISTRIBUTED)
def plan(
    ctx: typer.Context,
    out: PlanOut = None,
    keep: Keep = 3,
    force: Force = False,
    resume: PlanResume = False,
    quiet: Quiet = False,
    as_csv: AsCsv = False,
    as_json: AsJson = False,
    **settings: Any,
):
    """The fastest layouts of a large model on a cluster, per network setting, what each waits on, and what the
    network costs the best one against an ideal network.

    Layout options you do not give are searched: tp 1,2,4,8; pp in powers of two; cp 1,2,4; ep for MoE models; micro-batch 1,2,4,8; 1f1b and interleaved:2; recompute none, selective and full; ZeRO 0, 1 and 3.

    Example:

    \b
    sweep plan --model llama3-70b --gpus 1024 --global-batch 1024 \\
        --bw 100,200,400 --nics-per-node 1,8
    """

    from netsweep_jax.sweep.analysis.layout_jobs import (
        fabric_label,
        fabric_values,
        layout_grid_from,
        spine_of,
    )

    if settings.get("model") is None and settings.get("arch") is None:
        raise InputError("name a large-model preset (sweep models lists them) or give --arch", param="model")
    if as_csv and as_json:
        raise InputError("--csv and --json both choose what is printed: give one")
    _check_distributed(ctx, settings)
    fabrics = fabric_values(str(settings["fabric"])) if settings.get("fabric") is not None else (None,)
    # Every value's grid before any work: a bad one is refused before the first plan.
    grids = [
        (fabric_label(f) if f is not None else "", layout_grid_from(spine_of(settings, f, fabrics),
                                                                     given_options(ctx), search=True, say=say))
        for f in fabrics
    ]  # fmt: skip
    g = grids[0][1]
    if len(grids) > 1 or len(g.oversubscription) > 1:  # a plan per value (one compile: kernel input columns)
        _plan_each(
            grids, out, settings, keep=keep, force=force, resume=resume, as_csv=as_csv, as_json=as_json
        )
        return
    ds, target, share = _search_plan(g, out, settings, keep=keep, force=force, resume=resume, quiet=quiet)
    if ds is None:  # another process than 0 under --distributed: its share is in its shard
        assert share is not None
        typer.echo(f"process {share[0]} of {share[1]}: searched its share of the plan into {target}")
        return
    _echo_plan(ds, target, as_csv=as_csv, as_json=as_json)


def _plan_each(
    grids: list[tuple[str, Any]],
    out: Path | None,
    settings: dict[str, Any],
    *,
    keep: int,
    force: bool,
    resume: bool,
    as_csv: bool,
    as_json: bool,
) -> None:
    """``sweep plan`` over a list of fabrics or oversubscriptions: a plan per value, each printed and written as
    it finishes; an interrupt ends the command with one line naming what finishes it."""
    from netsweep_jax.sweep.analysis.layout_jobs import plan_cubes, plans_out, write_plans

    listed = "--fabric" if len(grids) > 1 else "--oversubscription"
    for option, used in (
        ("--distributed", settings.get("distributed")),
        ("--csv", as_csv),
        ("--json", as_json),
    ):
        if used:
            raise InputError(f"{option} plans one {listed} value at a time: give one")
    base = plans_out(grids, out)
    finished = 0
    try:
        for table, done in write_plans(
            grids, base, keep=keep, force=force, command=command_line(), say=say, resume=resume
        ):
            typer.echo(table)
            typer.echo(done)
            finished += 1
    except (KeyboardInterrupt, Interrupted) as e:
        unwritten = plan_cubes(grids, base)[finished:]  # the old cubes --force has not replaced yet
        _interrupted(e, out, cube=base, finished=finished, force=force, unwritten=unwritten)


def _search_plan(
    g: Any, out: Path | None, settings: dict[str, Any], *, keep: int, force: bool, resume: bool, quiet: bool
) -> tuple[Any, Path, tuple[int, int] | None]:
    """Search ``sweep plan``'s layouts into its cube: (the plan, or None on a process other than 0 under
    ``--distributed``; the cube; this process's share); an interrupt or a timeout ends the command with one line."""
    from netsweep_jax.sweep.analysis.layout_jobs import write_plan
    from netsweep_jax.sweep.cli.progress import progress

    bar = progress(quiet, "plan", "layouts searched")
    share = None
    try:
        if settings.get("distributed"):
            from netsweep_jax.sweep.io.distributed import rendezvous

            share = rendezvous(
                settings["coordinator"],
                settings["num_processes"],
                settings["process_id"],
                # the file name too: processes given other --out files each waited for shards never written
                options=f"plan {g.fingerprint()} keep={keep} out={Path(out).name if out is not None else ''}",
            )
        ds, target = write_plan(
            g,
            out,
            keep=keep,
            force=force,
            resume=resume,
            command=command_line(),
            say=say,
            progress_bar=bar,
            share=share,
            stitch_timeout=settings["stitch_timeout"],
        )
    except JoinTimeout as e:
        abandon(str(e), 3)
    except StitchTimeout as e:
        fail(str(e), code=3)
    except (KeyboardInterrupt, Interrupted) as e:
        _interrupted(e, out, force=force)
    return ds, target, share


def _echo_plan(ds: Any, target: Path, *, as_csv: bool, as_json: bool) -> None:
    """Print the plan written to ``target``: its table and tiers, or one CSV or JSON document."""
    # The cube is in place: a signal while its plan is printed ends the command saying so (the printing is the
    # last 0.1-1 s of a run, where an interrupt said only "interrupted"); its imports are inside for that too.
    try:
        from netsweep_jax.sweep.analysis.plan_tiers import tier_lines
        from netsweep_jax.sweep.analysis.planning import infeasible_lines, plan_csv, plan_json, plan_table

        if as_csv or as_json:  # stdout is one CSV or JSON document; the cube said first, on stderr: a reader
            # that leaves early (| head) ends the command before anything after its output.
            say(f"wrote {target}")
            for line in infeasible_lines(ds):  # the table says these in place; a document has no row for them
                typer.echo(line, err=True)
            typer.echo(plan_csv(ds) if as_csv else plan_json(ds), nl=not as_csv)
            return
        typer.echo("\n".join([plan_table(ds), *tier_lines(ds)]))
        typer.echo(f"wrote {target}")
    except (KeyboardInterrupt, Interrupted) as e:
        fail(f"interrupted while printing the plan; {target} was written and is complete", code=exit_code(e))


def models():
    """List the built-in profiles, large models, GPU and fabric presets and precisions."""
    from netsweep_jax.sweep.model.builtin import models_table

    typer.echo(models_table())
