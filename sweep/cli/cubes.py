"""``sweep show``, ``sweep select`` and ``sweep plot``: reading a cube, and saying so when it is damaged."""

from pathlib import Path
from typing import Annotated, Any

import typer

from netsweep_jax.sweep.cli.options import axis_parameters, fail, options, param, say
from netsweep_jax.sweep.cli.parameters import Cube, Force
from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError, reason
from netsweep_jax.sweep.core.layout_axes import DIMS as LAYOUT_DIMS
from netsweep_jax.sweep.core.layout_axes import LAYOUT_AXES


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
        from netsweep_jax.sweep.io.integrity import crashes_hdf5, damage, record_damage_file, record_damaged

        if crashes_hdf5(path):
            fail(f"{path}: damaged (HDF5 crashes reading its metadata)", code=1)
        try:
            yield
        except InputError:
            why = damage(path)  # an HDF5 file HDF5 cannot read is damaged, not bad input
            if why is not None:
                _held_or_damaged(path, why)
            raise
        except (OSError, KeyError, ValueError, RuntimeError, TypeError, AttributeError, IndexError) as e:
            # a cube's record of its blocks changed (show read past it: an index past the blocks), checked here,
            # where reading failed, not on every read (a review: it cost a second open)
            record = record_damage_file(path)
            if record is not None:
                fail(record_damaged(path, record), code=1)
            readers = ("h5py", "h5netcdf", "xarray", "h5store")
            if not any(
                name in frame.filename for frame in traceback.extract_tb(e.__traceback__) for name in readers
            ):
                raise
            if not isinstance(e, (OSError, RuntimeError)) and damage(path) is None:
                raise  # xarray refusing a call of ours on a file that reads: no damage to call it (a bug)
            _held_or_damaged(path, reason(e))

    return context()


def _held_or_damaged(path: Path, why: str) -> None:
    """One line and exit code 1 for a cube HDF5 cannot read: held by another process (HDF5 locks a file open
    for writing: a sweep still running; never called damaged, lest a user delete a good file), or damaged; exit
    code 2 for one gone while read (no such cube, as for a path that never was)."""
    from netsweep_jax.sweep.io.paths import held_open

    if "unable to lock file" in why:
        fail(held_open(path, "writing"), code=1)
    if not path.exists():  # renamed or removed while read (a finishing run renames its partial: a hunt)
        fail(
            f"{path}: no such cube (it went away while read: a run that finishes renames OUT.partial to OUT)"
        )
    fail(f"{path}: damaged (HDF5 cannot read it: {why})", code=1)


@options(
    [
        param("model", str | None, None, "--model", help="Model name(s)."),
        param("collective", str | None, None, "--collective", help="Collective(s)."),
        param("bucketing", str | None, None, "--bucketing", help="Bucketing schedule(s)."),
        param(
            "compressor", str | None, None, "--compressor", help="Compressor(s), as in the cube: topk:0.01."
        ),
    ],
    axis_parameters({name: None for name in NUMERIC_AXES}, help_suffix=" Value(s) as in the cube."),
    [
        param(
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
        param(
            name,
            str | None,
            None,
            spec.option,
            rich_help_panel="Layout cubes",
            help=f"{spec.long_name[:1].upper()}{spec.long_name[1:]}. Value(s) as in the cube.",
        )
        for name, spec in LAYOUT_AXES.items()
        if name in LAYOUT_DIMS  # --mtp-layers: the model's, not a dim to select on
    ],
)
def select(
    file: Cube,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    nearest: Annotated[
        bool,
        typer.Option(
            "--nearest",
            help="A number not in the cube selects the value the cube has "
            "nearest it, by difference (so a log-spaced axis's values may be "
            "typed rounded); each pick is said on stderr.",
        ),
    ] = False,
    sel: Annotated[
        list[str] | None,
        typer.Option(
            "--sel",
            help="DIM=VALUE(S) for any dim, one with no option of its own too (a plan's rank, switch); repeat.",
        ),
    ] = None,
    vars: Annotated[
        str | None, typer.Option("--vars", help="The variables to print, comma list (default: all).")
    ] = None,
    **chosen,
):
    """Print a slice of a cube as tables (one row per remaining combination; a table per set of dims the
    variables span).

    Example: sweep select r.h5 --bw 37 --nearest
    """
    from netsweep_jax.sweep.io.reader import select_table

    picked = {k: v for k, v in chosen.items() if v is not None}
    by_sel = set()  # the dims --sel picks: a refusal of their value names --sel, as the user typed it
    for item in sel or []:
        dim, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not dim or not value:
            raise InputError(f"{item!r}: expected DIM=VALUE, e.g. rank=1", param="sel")
        if dim in picked:
            raise InputError(f"{item!r}: {dim} is selected twice", param="sel")
        picked[dim] = value
        by_sel.add(dim)
    with damaged_file(file):
        try:
            table = select_table(
                file,
                picked,
                csv=csv,
                nearest=nearest,
                picked=lambda text: typer.echo(text, err=True),
                variables_text=vars,
            )
        except InputError as e:
            if e.param not in by_sel or e.names:
                raise
            raise InputError(f"{e.param}={e.detail}", param="sel") from None
    typer.echo(table)


@options()
def plot(
    file: Cube,
    x: Annotated[str, typer.Option("--x", help="Dim on the x axis.")],
    y: Annotated[
        str | None,
        typer.Option(
            "--y",
            help="Line plot: the variable (default scaling_factor, tokens_per_s for a large model's cube). "
            "Heatmap: the dim on the y axis.",
        ),
    ] = None,
    hue: Annotated[
        str | None, typer.Option("--hue", help="Line plot: one line per value of this dim.")
    ] = None,
    sel: Annotated[
        list[str] | None, typer.Option("--sel", help="DIM=VALUE to fix a dim; repeat for several.")
    ] = None,
    kind: Annotated[str, typer.Option("--kind", help="line or heatmap.")] = "line",
    var: Annotated[
        str | None, typer.Option("--var", help="Heatmap: the variable to color (default as --y's).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Figure file to write: .png, .pdf or .svg.")] = Path(
        "figure.png"
    ),
    force: Force = False,
):
    """Line plots and heatmaps from a cube, labelled with its units.

    Example:

    \b
    sweep plot r.h5 --x bandwidth --y scaling_factor --hue nodes \\
        --sel ratio=1 --out fig.png
    """
    from netsweep_jax.sweep.analysis.plot import plot_cube

    with damaged_file(file):  # as show and select: a cube HDF5 cannot read is damaged (exit 1)
        written = plot_cube(
            file, x=x, y=y, hue=hue, sel=sel or [], kind=kind, var=var, out=out, force=force, say=say
        )
    typer.echo(f"wrote {written}")
