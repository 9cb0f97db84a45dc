"""Figures from cubes: line plots and heatmaps with labels and units from attributes.

Figures are plain :class:`matplotlib.figure.Figure` objects rendered by Agg when
saved: no pyplot, so nothing here selects a backend or keeps global figure state.
"""

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.families import family_of
from netsweep_jax.sweep.core.values import all_whole, decimal, digits12
from netsweep_jax.sweep.io.paths import check_new_file, write_atomically
from netsweep_jax.sweep.io.reader import as_coordinates, check_selection, open_cube, system_shown, why_no_dim
from netsweep_jax.sweep.model.compressors import parse_compressors

# Fixed metadata so the same data give the same PNG bytes.
PNG_METADATA = {"Software": None}


# The most characters of an axis label on one line: about the height of a 4-inch figure's axes in 10-point
# text. A longer label (``communication not hidden behind the backward pass [s]``) runs past the end of its axis
# and into the title; it is broken between words instead.
LABEL_LINE = 40


def label(da: xr.DataArray) -> str:
    """``long_name [units]`` of a DataArray (units omitted when dimensionless), broken into lines of at most
    :data:`LABEL_LINE` characters between words."""
    units = da.attrs.get("units", "")
    name = da.attrs.get("long_name", da.name)
    # "tokens trained per second [1/s]": the name says its unit already (a hunt)
    said = units in ("", "1") or (
        units == "1/s" and "per second" in str(name)
    )  # "max of ... per second over"
    text = str(name) if said else f"{name} [{units}]"
    return textwrap.fill(text, LABEL_LINE, break_long_words=False, break_on_hyphens=False)


def parse_sel(items: Iterable[str], ds: xr.Dataset) -> dict[str, Any]:
    """``["ratio=1", "model=vgg16"]`` -> {dim: value} with values typed like the coords."""
    sel: dict[str, Any] = {}
    for item in items:
        dim, eq, text = (s.strip() for s in item.partition("="))
        if not eq or not dim or not text:  # 'ratio=' was "ratio=':  is not a number" (a hunt)
            raise InputError(f"{item!r}: expected DIM=VALUE, e.g. ratio=1", param="sel")
        if dim not in ds.dims:
            raise InputError(f"{item!r}: {why_no_dim(ds, dim)}", param="sel")
        if dim in sel:  # the last one won, in silence (select refuses it too)
            raise InputError(f"{item!r}: {dim} is selected twice; give it once", param="sel")
        coord = ds[dim].values
        if "," in text and not (dim == "compressor" and _one_compressor(text)):
            raise InputError(
                f"{item!r}: fixes {dim} to one value; give one (--hue draws several)", param="sel"
            )
        if coord.dtype.kind in "OUS":  # a name, in any case: VGG16 is vgg16; a compressor as select reads it
            text = _one_compressor(text) or text if dim == "compressor" else text
            text = next((str(c) for c in coord if str(c).lower() == text.lower()), text)
        elif not _is_number(text):
            raise InputError(f"{item!r}: {text} is not a number", param="sel")
        # a number is the coordinate it stands for, as select reads it (the GPU's system's value, 12 digits)
        value = (
            text if coord.dtype.kind in "OUS" else as_coordinates(ds, dim, [float(text)], f"--sel {dim}")[0]
        )
        if not np.any(coord.astype(type(value)) == value):
            # to the 12 digits a value is matched to (a hunt: 1.9307 listed, then refused, for 1.93069772888)
            values = [digits12(v) if coord.dtype.kind in "fiu" else str(v) for v in coord]
            shown = ", ".join(values[:12]) + (f", ... ({len(values)} values)" if len(values) > 12 else "")
            raise InputError(f"{item!r}: {text} is not a value of {dim} in the cube ({shown})", param="sel")
        sel[dim] = value
    return sel


def _one_compressor(text: str) -> str | None:
    """The name of the one compressor ``text`` spells (``topk:0.010`` is ``topk:0.01``), else None."""
    try:
        found = parse_compressors(text)
    except InputError:
        return None
    return found[0].name if len(found) == 1 else None


def _is_number(text):
    try:
        decimal(text)  # the one notation of a number (values.decimal), as every option takes it
        return True
    except ValueError:
        return False


def reduce_to(
    ds: xr.Dataset, var: str, keep: Sequence[str | None], sel: Mapping[str, Any], param: str = "var"
) -> xr.DataArray:
    """Select, squeeze, and refuse if dims other than ``keep`` remain (``param``: the option that named ``var``)."""
    if var not in ds.data_vars:
        raise InputError(
            f"{var!r}: not a variable; variables: {', '.join(map(str, ds.data_vars))}", param=param
        )
    if not np.issubdtype(ds[var].dtype, np.number):  # an argmax over a text dim, a plan's layout names
        raise InputError(
            f"{var!r} holds names, not numbers, so it has no axis to plot on; sweep select FILE --vars {var} "
            "prints them"
        )
    for d in keep:
        if d is not None and d not in ds.dims:
            dims = (
                ", ".join(map(str, ds.dims)) or "none (a cube reduced over every dim: sweep select prints it)"
            )
            raise InputError(f"{d!r}: not a dim; dims: {dims}")
    for d in keep:
        if d is not None and d not in ds[var].dims:  # a plan's tokens_per_s has no switch dim
            raise InputError(
                f"{d!r}: {var} does not vary with it; its dims: {', '.join(map(str, ds[var].dims))}"
            )
    # A --sel on a dim the variable does not have (a plan's switch, for tokens_per_s) fixes nothing of it.
    da = ds[var].sel({d: v for d, v in sel.items() if d in ds[var].dims})
    extra = [d for d in da.dims if d not in keep and da.sizes[d] > 1]
    if extra:
        left = ", ".join(f"{d} ({da.sizes[d]} values)" for d in extra)
        raise InputError(
            f"the selection leaves {left} besides the plotted dims; add --sel DIM=VALUE for each"
        )
    if not np.isfinite(np.asarray(da.values, dtype=np.float64)).any():
        raise InputError(
            f"the selection holds no value of {var} (NaN everywhere: a layout that cannot exist or does not fit "
            f"in memory, a plan's setting with no feasible layout, a rank not filled, an answer not reached); "
            "nothing to draw"
        )
    return da.squeeze([d for d in da.dims if d not in keep])


def line_plot(
    ds: xr.Dataset,
    x: str,
    var: str = "scaling_factor",
    hue: str | None = None,
    sel: Mapping[str, Any] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    hue_label: Callable[[Any], str] | None = None,
) -> Axes:
    """Draw ``var`` against dim ``x``, one line per value of ``hue``; returns the axes.

    ``hue_label(value) -> str`` names the lines (default ``"hue=value"``); a line with no finite value (a
    target unreachable everywhere) says so in its name, as it draws nothing.
    """
    da = reduce_to(ds, var, [x, hue], sel or {}, param="y")
    if da[x].dtype.kind in "iuf":  # joined in the x order, not as typed (a hunt: --bw 100,10,40 zig-zagged)
        da = da.sortby(x)
    ax = ax or Figure(figsize=(6, 4)).gca()
    hues: np.ndarray = da[hue].values if hue else np.array([None])
    # Past LEGEND_MOST numbers a legend ran off the axes (64 node counts, a hunt): a color scale says them.
    scale = hue is not None and len(hues) > LEGEND_MOST and hues.dtype.kind in "iuf"
    colors = _hue_scale(ax, ds[hue], hues) if hue is not None and scale else None
    shown = _distinct(hues) if hue else [None]
    named = da[x].dtype.kind not in "iuf"  # models or compressors on x: points, no line joining two of them
    for i, h in enumerate(hues):
        line = da.sel({hue: h}) if hue else da
        name = (hue_label(h) if hue_label else f"{hue}={shown[i]}{_unit(ds[hue])}") if hue else None
        if name is not None and not np.isfinite(line.values).any():
            name = f"{name} (no value)"
        style = {"color": colors[i]} if colors is not None else {"label": name, **_style(i, len(hues))}
        ax.plot(
            line[x].values,
            line.values,
            **{"marker": "o", "ms": 5 if named else 3, **style},
            ls="none" if named else "-",
        )
    ax.set_xlabel(label(ds[x]))
    ax.set_ylabel(label(ds[var]))
    # any numeric axis spanning 50x (a layout cube's GPUs 8-1024 labelled 8, 16, 32, 64 in one blot: a review)
    if not named and ds[x].size > 2 and np.all(ds[x].values > 0):
        v = ds[x].values
        if v.max() / v.min() >= 50:
            ax.set_xscale("log")
    if _spans_decades(da.values, ds[var]):  # a step of 0.19-8.9 s drew all but the slowest flat at 0 (a hunt)
        ax.set_yscale("log")
    # a name with no value at all (need's unreachable compressor) kept on the axis, said so (a hunt: dropped)
    empty = [not np.isfinite(da.sel({x: v}).values).any() for v in da[x].values] if named else []
    _ticks_at_values(ax, da[x].values, named, empty)
    # many names, or points in columns (which a legend inside covered: a hunt), beside the axes, not over them
    if hue and not scale and (len(hues) > LEGEND_INSIDE or named):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), ncol=-(-len(hues) // 30))
    elif hue and not scale:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(_lines(title))
    return ax


LEGEND_MOST = 12  # lines a legend names; past it, numbers get a color scale
LEGEND_INSIDE = (
    6  # lines a legend inside the axes names; past it, beside them (12 covered half the lines, a hunt)
)
FEW_TICKS = 10  # values an axis labels each of, where they are no more


def _style(i: int, lines: int) -> dict[str, Any]:
    """Line ``i``'s color and marker among ``lines``: matplotlib's ten colors, else twenty paler pairs, and past
    twenty a marker of its own too (a hunt: with 14 compressors ``none`` and ``powersgd:1`` were both blue)."""
    if lines <= 10:
        return {}
    from matplotlib import colormaps

    return {"color": colormaps["tab20"](i % 20), "marker": "osD^v<>ph*"[(i // 20) % 10]}


def _spans_decades(values: np.ndarray, coordinate: xr.DataArray) -> bool:
    """Whether ``values`` (NaN ignored) are drawn on a log scale: all above 0, spanning 50 times and more, and no
    fraction (a scaling factor or an MFU, dimensionless and at most 1, reads on its own linear scale)."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2 or v.min() <= 0 or v.max() / v.min() < 50:
        return False
    return str(coordinate.attrs.get("units", "")) not in ("", "1") or v.max() > 1


def _slant_names(ax: Axes, count: int) -> None:
    """An x axis of more than three names slanted, each ending under its tick (upright, they ran together)."""
    if count > 3:
        ax.tick_params(axis="x", labelrotation=30)
        for text in ax.get_xticklabels():
            text.set_horizontalalignment("right")


def _ticks_at_values(ax: Axes, values: np.ndarray, named: bool, empty: Sequence[bool] = ()) -> None:
    """An x axis of at most :data:`FEW_TICKS` values labelled at each one (one bandwidth read 9.45 ... 10.5,
    GPU counts 16, 64, 256 were ticked 50, 100, ..., node counts on a log axis 10 and 100 alone: hunts), names
    slanted where several, each on the axis, those ``empty`` (no value) said so; more numbers, whole ones ticked
    at whole numbers (node counts read 1.2, 1.4, ...)."""
    if (
        named
    ):  # matplotlib's categories sit at 0, 1, ... in the order plotted; its view had held the drawn ones
        labels = [
            f"{v} (no value)" if none else str(v) for v, none in zip(values, empty or [False] * len(values))
        ]
        ax.set_xticks(range(len(values)), labels)
        ax.set_xlim(-0.5, len(values) - 0.5)
        _slant_names(ax, len(values))
        return
    at = np.log(np.sort(values)) if ax.get_xscale() == "log" else np.sort(values)
    span = float(at[-1] - at[0]) if len(at) > 1 else 0.0
    # each labelled where no two labels meet: the closest two at least a third of an even spacing apart
    apart = span == 0 or float(np.diff(at).min()) >= span / (3 * len(at))
    if len(values) <= FEW_TICKS and apart:
        from matplotlib.ticker import NullLocator

        ax.set_xticks(values, _distinct(values))
        ax.xaxis.set_minor_locator(NullLocator())
    elif all_whole(values) and ax.get_xscale() == "linear":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _hue_scale(ax: Axes, coordinate: xr.DataArray, hues: np.ndarray) -> list[Any]:
    """Each of ``hues``' color on a scale drawn beside ``ax`` (log where they span 50x and more)."""
    from matplotlib import cm, colors

    low, high = float(np.min(hues)), float(np.max(hues))
    log = low > 0 and high / low >= 50
    norm = colors.LogNorm(low, high) if log else colors.Normalize(low, high if high > low else low + 1)
    mapped = cm.ScalarMappable(norm=norm, cmap="viridis")
    ax.figure.colorbar(mapped, ax=ax, label=label(coordinate))
    return list(mapped.to_rgba(np.asarray(hues, np.float64)))


def heatmap(
    ds: xr.Dataset,
    x: str,
    y: str,
    var: str = "scaling_factor",
    sel: Mapping[str, Any] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Color ``var`` over dims ``x`` (columns) and ``y`` (rows)."""
    da = reduce_to(ds, var, [x, y], sel or {}).transpose(y, x)
    fig = None
    if ax is None:
        fig = Figure(figsize=(6, 4.5))
        ax = fig.gca()
    norm = _color_norm(da.values, ds[var])
    mesh = ax.pcolormesh(
        np.arange(da.sizes[x] + 1), np.arange(da.sizes[y] + 1), da.values, shading="flat", norm=norm
    )
    for setter, ticks in ((ax.set_xticks, da[x].values), (ax.set_yticks, da[y].values)):
        # Numbers: at most 8 labels of 3 significant digits (19 of 7 digits ran into each other, a hunt). Names:
        # each one (every second model or compressor was unnamed, the worst among them, a hunt).
        named = ticks.dtype.kind not in "iuf"
        idx = np.arange(len(ticks)) if named else np.arange(0, len(ticks), -(-len(ticks) // 8))
        setter(
            idx + 0.5,
            [
                f"{float(f'{t:.3g}'):.7g}" if isinstance(t, (float, np.floating)) else _shown(t)
                for t in ticks[idx]
            ],
        )
    if da[x].dtype.kind not in "iuf":
        _slant_names(ax, da.sizes[x])
    missing = bool(np.isnan(np.asarray(da.values, np.float64)).any())
    if missing:
        ax.patch.set(**HATCHED)
    ax.set_xlabel(label(ds[x]))
    ax.set_ylabel(label(ds[y]))
    # what the hatching is, said on the color scale (below the axes it met slanted names: a review)
    (fig or ax.figure).colorbar(
        mesh, ax=ax, label=label(ds[var]) + ("\nhatched: no value" if missing else "")
    )
    if title:
        ax.set_title(_lines(title))
    return ax


def _color_norm(values: np.ndarray, coordinate: xr.DataArray) -> Any:
    """A heatmap's color scale: log where its values span decades (:func:`_spans_decades`: exposed communication
    of 1e-4 to 8.7 s drew every cell but one alike, a hunt), else linear (None: matplotlib's)."""
    if not _spans_decades(values, coordinate):
        return None
    from matplotlib.colors import LogNorm

    return LogNorm(float(np.nanmin(values)), float(np.nanmax(values)))


# A heatmap's cells with no value (a layout that cannot run, an answer not reached, a block not computed) drawn
# hatched grey over the axes' background, and said on the color scale: left white, they read as a value (a hunt:
# "needs nothing").
HATCHED = {"facecolor": "0.9", "edgecolor": "0.6", "hatch": "//"}


def _unit(coordinate: xr.DataArray) -> str:
    """`` Gbit/s`` after a line's value in the legend, as the axis labels give units (none where dimensionless:
    ``bandwidth=10`` said no unit where a latency's legend would be ambiguous, a hunt)."""
    units = str(coordinate.attrs.get("units", ""))
    return "" if units in ("", "1") else f" {units}"


def _shown(value: Any) -> str:
    """A coordinate as a label says it: ``1``, not ``1.0``; ``0.01``; a name as it is."""
    return f"{value:g}" if isinstance(value, (float, np.floating, int, np.integer)) else str(value)


def _distinct(values: np.ndarray) -> list[str]:
    """Each of a legend's values as ``_shown`` says it, or to the 12 digits the tool matches values to where
    two would read alike (1.0000001 and 1.0000002 were two lines named ``1``)."""
    shown = [_shown(v) for v in values]
    if len(set(shown)) == len(shown):
        return shown
    return [digits12(v) if isinstance(v, (float, np.floating)) else s for v, s in zip(values, shown)]


TITLE_LINE = 72  # characters a line of a plot's title holds at its default size


def _lines(title: str) -> str:
    """A title broken between its ``, `` parts (never inside ``tp = 8``) into lines of at most
    :data:`TITLE_LINE` characters where the parts allow."""
    lines: list[str] = []
    for part in title.split(", "):
        if lines and len(lines[-1]) + 2 + len(part) <= TITLE_LINE:
            lines[-1] += ", " + part
        else:
            lines.append(part)
    return ",\n".join(lines)


def selection_title(ds: xr.Dataset, sel: Mapping[str, Any]) -> str:
    """The fixed dims as a title: a cube's one model (a layout cube's GPU, GPU count, global batch where it has
    one; a plan's ``rank = 1`` alone says nothing of what was planned), then the ``sel`` choices, then a need
    cube's one target: ``model = llama3-70b, gpus = 1024, rank = 1``; ``model = resnet50, nodes = 8, target =
    0.99``."""
    titled = family_of(ds.attrs).title_dims
    fixed = {d: ds[d].values[0].item() for d in titled if d in ds.dims and ds.sizes[d] == 1}
    parts = []
    for dim, value in {**{d: v for d, v in fixed.items() if d not in sel}, **sel}.items():
        units = ds[dim].attrs.get("units", "")
        parts.append(f"{dim} = {_shown(value)}" + (f" {units}" if units not in ("", "1") else ""))
    target = ds.attrs.get("target_scaling_factor")  # one target (several are a dim, chosen by --sel)
    if "solved_axis" in ds.attrs and target is not None:  # a hunt: what "smallest ratio" reaches went unsaid
        parts.append(f"target = {_shown(target)}")  # as a need cube of several names its dim
    return ", ".join(parts)


FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def save(fig: Figure, out: str | Path, *, overwrite: bool = True, tight: bool = True) -> Path:
    """Render ``fig`` to ``out`` (PNG, PDF or SVG by its suffix), atomically; without ``overwrite``, a file that
    appeared at ``out`` since it was checked is kept and this one refused (:func:`~sweep.io.paths.write_atomically`).
    ``tight``: cropped to what is drawn; False keeps the figure's own margins, for a figure that sets them (the
    crop draws the figure twice: 1.5 of 3.8 s for ``validate --nccl``'s thirty panels, 2026-12-04)."""
    out = Path(out)
    fmt = out.suffix.lstrip(".").lower()
    metadata = PNG_METADATA if fmt == "png" else None
    crop = "tight" if tight else None
    return write_atomically(
        out,
        lambda path: fig.savefig(path, format=fmt, dpi=110, metadata=metadata, bbox_inches=crop),
        overwrite=overwrite,
    )


# The variable a plot draws where none is named, the first a cube has: a data-parallel sweep's scaling factor, a
# large model's tokens per second (a grid's or a plan's); else the cube's first numeric variable (sweep need's).
HEADLINES = ("scaling_factor", "tokens_per_s")


def headline(ds: xr.Dataset) -> str:
    """The variable a plot of ``ds`` draws where none is named (:data:`HEADLINES`), else its first numeric one
    that is no code or flag (a layout's ``status`` and ``fits``: a cube written with ``--vars`` that left the
    headline out drew the fits flag)."""
    numeric = [n for n in map(str, ds.data_vars) if np.issubdtype(ds[n].dtype, np.number)]
    for name in (*HEADLINES, *(n for n in numeric if n not in ("status", "fits")), *numeric):
        if name in numeric:
            return name
    raise InputError("the cube has no numeric variable to plot")


# A layout cube's variables that mean something for a layout that does not fit in memory: its memory, and
# the checks themselves. Every other one (speed, MFU, the step's terms) is drawn only where the layout runs.
WHERE_IT_CANNOT_RUN = ("status", "fits", "memory_gb", "memory_free_gb")


def runnable_only(ds: xr.Dataset, var: str, sel: Mapping[str, Any]) -> tuple[xr.Dataset, int]:
    """``ds`` with ``var`` NaN where its layout cannot run (a layout cube's ``status`` not 0, or ``fits`` 0 for
    a variable not in :data:`WHERE_IT_CANNOT_RUN`), and how many values of the selection ``sel`` that left out.
    Nothing is left out of a cube without those variables (a data-parallel one), of a reduced one (its status is
    reduced too: a max over tp is no layout's), or of a variable that is no layout's (a plan's network cost)."""
    if "status" not in ds.data_vars or "fits" not in ds.data_vars or var in ("status", "fits"):
        return ds, 0
    if "reduced" in ds.attrs or not set(ds["status"].dims) <= set(ds[var].dims):
        return ds, 0
    runs = ds["status"] == 0
    if var not in WHERE_IT_CANNOT_RUN:
        runs = runs & (ds["fits"] > 0)
    masked = ds[var].where(runs)
    chosen = {d: v for d, v in sel.items() if d in masked.dims}
    # A layout that cannot exist has no values either; a block not computed yet (status -1) is no layout's.
    left = int((masked.isnull() & ~runs & (ds["status"] >= 0)).sel(chosen).sum())
    return ds.assign({var: masked}), left


def _kind(kind: str, var: str | None, hue: str | None) -> str:
    """``--kind`` in lower case (line or heatmap), refusing what the kind does not draw (``--var`` of a line plot,
    ``--hue`` of a heatmap: each was ignored in silence)."""
    typed, kind = (
        kind,
        kind.strip().lower() if isinstance(kind, str) else kind,
    )  # case-insensitive (the guide)
    if kind not in ("line", "heatmap"):
        raise InputError(f"{typed!r}: must be line or heatmap", param="kind")
    if kind == "line" and var is not None:  # it was ignored: the headline drawn, whatever --var named
        raise InputError(f"{var!r}: colours a heatmap (--kind heatmap); a line plot draws --y", param="var")
    if kind == "heatmap" and hue is not None:  # it was ignored in silence (a hunt)
        raise InputError(f"{hue!r}: draws a line plot's lines; a heatmap's second dim is --y", param="hue")
    return kind


def plot_cube(
    path: str | Path,
    *,
    x: str,
    y: str | None = None,
    hue: str | None = None,
    sel: Iterable[str] = (),
    kind: str = "line",
    var: str | None = None,
    out: str | Path = "figure.png",
    force: bool = False,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Draw a line plot (``y`` a variable) or a heatmap (``y`` a dim, ``var`` colored) of a cube; the variable
    not given is the cube's headline (:func:`headline`). A layout cube's layouts that cannot run are left out
    (:func:`runnable_only`), and ``say`` told how many."""
    kind = _kind(kind, var, hue)
    dims = [x, hue] if kind == "line" else [x, y]
    if dims[0] == dims[1]:
        other = "hue" if kind == "line" else "y"
        raise InputError(f"x and {other} are both {x!r}; the two plotted dims must differ", param=None)
    check_new_file(out, force=force, suffixes=FIGURE_SUFFIXES)
    if kind == "heatmap" and y is None:
        raise InputError("needed: the dim on a heatmap's y axis", param="y")
    ds = open_cube(path)
    # The variable drawn (a line plot's y, a heatmap's var): the cube's headline where not named.
    named = y if kind == "line" else var
    plotted = named if named is not None else headline(ds)
    if named is None and plotted not in HEADLINES and say is not None:
        option = "--y" if kind == "line" else "--var"
        say(f"drawing {plotted}: the cube holds no {' or '.join(HEADLINES)} ({option} names another)")
    if kind == "line":
        y = plotted
    assert y is not None  # a line plot's variable, or a heatmap's y dim (checked above)
    chosen = parse_sel(sel, ds)
    for dim in dims if kind == "line" else [x, y]:
        if dim in chosen:  # a traceback (--hue), or "damaged" (a heatmap's)
            raise InputError(
                f"{dim}={_shown(chosen[dim])}: {dim} is plotted; drop it from --sel", param="sel"
            )
    drawn = ds[plotted] if plotted in ds.data_vars else None
    held = {d: v for d, v in chosen.items() if drawn is None or d in drawn.dims}  # what it depends on
    check_selection(path, ds, chosen, say)  # what is drawn is what was written
    ds, left = runnable_only(ds, plotted, chosen) if drawn is not None else (ds, 0)
    # What else the cube holds no value of (NaN: a need cube's answer not reached, an unfinished run's block): not
    # drawn, and said, as what cannot run is.
    kept = {d: v for d, v in chosen.items() if d in ds[plotted].dims} if drawn is not None else {}
    absent = 0 if drawn is None else int(ds[plotted].sel(kept).isnull().sum()) - left
    # an axis at 0, "the GPU's system", drawn at what it stands for
    ds = system_shown(ds, ds, [d for d in (x, hue if kind == "line" else y) if d is not None])
    title = selection_title(ds, held) or None  # the cube's one model and the --sel choices: what it holds
    ax = (
        line_plot(ds, x, var=plotted, hue=hue, sel=chosen, title=title)
        if kind == "line"
        else heatmap(ds, x, y, var=plotted, sel=chosen, title=title)
    )
    if left and say is not None:  # said once something is drawn (with nothing left, the refusal says why)
        say(
            f"left out: {left} value(s) of {plotted} whose layout cannot exist or does not fit in memory "
            "(sweep select shows them)"
        )
    if absent and say is not None:
        say(
            f"left out: {absent} value(s) of {plotted} the cube holds none of (NaN: an answer not reached, or a "
            "block not computed yet; sweep select shows them)"
        )
    figure = ax.figure
    assert isinstance(figure, Figure)  # drawn on a Figure of its own above
    return save(figure, out, overwrite=force)
