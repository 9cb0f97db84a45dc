"""Reading cubes back: open with xarray, describe, select slices. Writing is :mod:`sweep.io.cube`'s."""

import dataclasses
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xarray as xr

from netsweep_jax.sweep.core.axes import NUMERIC_AXES, AxisSpec, show
from netsweep_jax.sweep.core.errors import Damaged, InputError, reason
from netsweep_jax.sweep.core.families import family_of
from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.core.textfile import not_a_file
from netsweep_jax.sweep.core.values import all_whole, digits12, number, parse_names, parse_values
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.io import h5store
from netsweep_jax.sweep.io.checkpoints import is_checkpoint
from netsweep_jax.sweep.io.cube import FORMAT
from netsweep_jax.sweep.io.integrity import (
    check_read,
    damage,
    verify,
    verify_static_file,
    written_whole,
)
from netsweep_jax.sweep.io.paths import PARTIAL_SUFFIX, held_open, holder
from netsweep_jax.sweep.model.compressors import parse_compressors
from netsweep_jax.sweep.model.compute import GPUS, PRECISIONS, system_settings

EXPECTED = "expected a cube from sweep grid, sweep plan or sweep need --out"


def open_cube(path: str | Path) -> xr.Dataset:
    """A cube from ``sweep grid``, ``sweep plan`` or ``sweep need --out`` as an ``xarray.Dataset`` (lazily
    loaded)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {'no such cube' if not path.exists() else not_a_file(path, 'cube')}")
    try:
        ds = h5store.open_dataset(path)
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
        # HDF5 failing inside a file it opened is damage (a flipped bit in a dim's reference was a KeyError out
        # of the API, a hunt; a null one a ValueError, a review); a file held open by a writer (an OSError) never
        # is. Else: not HDF5 or held open (the CLI says which), or, another error, raised as it came.
        why = None if isinstance(e, OSError) else damage(path)
        if why is not None:
            raise Damaged(f"{path}: damaged (HDF5 cannot read it: {why})") from None
        if "unable to lock file" in reason(e):  # a sweep writing it, as the CLI says (a hunt)
            raise InputError(held_open(path, holder(path) or "writing")) from None
        if isinstance(e, (OSError, ValueError)):
            raise InputError(f"{path}: not a readable HDF5 cube ({reason(e)}); {EXPECTED}") from None
        raise
    if ds.attrs.get("format") != FORMAT and "solved_axis" not in ds.attrs:
        checkpoint = is_checkpoint(ds.attrs)
        ds.close()
        if checkpoint:
            raise InputError(
                f"{path}: the checkpoint of an interrupted sweep grid --reduce or sweep plan (their state, not a "
                "cube: its checksum is checked when the same command with --resume goes on from it)"
            )
        raise InputError(f"{path}: not made by netsweep; {EXPECTED}")
    if "shard" in ds.attrs:
        # a shard's file is sparse (sweep.io.cube.create): the other processes' blocks were never written, and
        # read as 0, not NaN (show's minimum and median were 0, a hunt)
        shard = str(ds.attrs["shard"])
        ds.close()
        raise InputError(
            f"{path}: the shard of process {shard} of a --distributed sweep: it holds that "
            "process's blocks only, the others never written (they read 0, not NaN); read the cube process 0 "
            "stitches from every shard, or finish it with the same command plus --resume on every process"
        )
    return ds


def variables(ds: xr.Dataset) -> list[str]:
    """A cube's data variables: the grid's variables in their order, then any others (``need``'s)."""
    names = [str(v) for v in ds.data_vars]
    known = family_of(ds.attrs).in_cube_order(names)
    return known + sorted(v for v in names if v not in known)


def _value(x: Any) -> str:
    """A coordinate as a reader writes it: integers without a decimal point (64, not 64.0)."""
    if isinstance(x, (float, np.floating)) and np.isfinite(x) and float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return digits12(x)
    return str(x)


def _status_counts(ds: xr.Dataset, name: str) -> str:
    """How many configurations of a status variable each rule stopped, as ``show`` says it. Code 0 is "can
    exist" (the rules' "ok": whether it fits is the fits variable's to say); a plan's rank with no layout (fewer
    feasible than --keep) has fits NaN, and its status is no layout's."""
    a = ds[name].values
    rules = {**_rules(str(ds[name].attrs["rules"])), 0: "can exist"}
    empty = _no_layout(ds, name)
    codes, counts = np.unique(a[np.isfinite(a) & ~empty].astype(np.int64), return_counts=True)
    said = [f"{rules.get(int(c), f'code {c}')} ({n:,})" for c, n in zip(codes, counts)]
    return ", ".join(said + ([f"no layout ({int(empty.sum()):,})"] if empty.any() else []))


def _stored(attrs: Mapping[str, Any]) -> str:
    """How a cube's floats are stored where not in the dtype computed (``--store``): ', stored float16'."""
    store = attrs.get("store")
    return f", stored {store}" if store and store != attrs.get("dtype") else ""


def _no_layout(ds: xr.Dataset, status: str) -> np.ndarray:
    """Where a plan cube's ``status`` is no layout's (a rank not filled: its ``fits`` NaN, its status -1), as a
    mask of its shape; none in a cube whose fits spans other dims (a reduced one) or that has none."""
    # a layout cube's layout that cannot exist has fits NaN too, and a status that says why
    if "fits" not in ds.data_vars or ds["fits"].dims != ds[status].dims or "rank" not in ds[status].dims:
        return np.zeros(ds[status].shape, bool)
    return np.isnan(np.asarray(ds["fits"].values, np.float64))


def _flags(attrs: Mapping[str, Any]) -> dict[int, str]:
    """A CF flag variable's codes and meanings (``flag_values``, ``flag_meanings``: a need cube's status, 0
    solved, 1 met at the limit, 2 unreachable) as {code: meaning in words}; {} for any other variable."""
    values, meanings = attrs.get("flag_values"), attrs.get("flag_meanings")
    if values is None or not isinstance(meanings, str):
        return {}
    words = meanings.split()
    codes = np.atleast_1d(values)
    return {int(c): w.replace("_", " ") for c, w in zip(codes, words)} if len(words) == len(codes) else {}


def _rules(attr: str) -> dict[int, str]:
    """A status variable's ``rules`` attribute (``0: ok; 1: ...``) as {code: rule}."""
    out = {}
    for item in attr.split("; "):
        code, _, rule = item.partition(": ")
        if re.fullmatch(r"-?\d+", code.strip()):  # -1: a plan's rank with no layout
            out[int(code)] = rule
    return out


def describe(path: str | Path) -> str:
    """Human summary of a cube: dims, variables' min/median/max, command, what was assumed, profiles."""
    ds = open_cube(path)
    derived_zero = family_of(ds.attrs).derived_zero  # dims where 0 is a derived value, and what it is
    lines = [
        f"{path}",
        f"  made by: {ds.attrs.get('command', '?')}",
        f"  created {ds.attrs.get('created', '?')}, netsweep {ds.attrs.get('netsweep_version', '?')}, "
        f"jax {ds.attrs.get('jax_version', '?')} on {ds.attrs.get('device_kind', '?')}, "
        f"dtype {ds.attrs.get('dtype', '?')}{_stored(ds.attrs)}",
    ]
    if ds.attrs.get("assumed"):
        lines.append(f"  assumed: {ds.attrs['assumed']}")
    lines.append("  dims:")
    width = max([15, *(len(str(n)) for n in [*ds.dims, *ds.data_vars])])
    for d in ds.dims:
        v = ds[d].values
        texts = [_value(x) for x in v[:6]]
        if str(d) in derived_zero:
            texts = [f"0 = {derived_zero[str(d)]}" if t == "0" else t for t in texts]
        shown = ", ".join(texts) + (", ..." if len(v) > 6 else "")
        units = ds[d].attrs.get("units", "")
        lines.append(
            f"    {d:<{width}} {len(v):>6}  [{shown}] {units if units not in ('', '1') else ''}".rstrip()
        )
    lines.append("  variables (min / median / max):")
    for name in variables(ds):
        a = ds[name].values
        if a.dtype.kind in "USO":  # an argmax/argmin label: the coordinates it takes
            values, counts = np.unique(a, return_counts=True)
            # An empty text (a feasible plan's infeasible) said so.
            said = [str(v) or "(empty)" for v in values]
            lines.append(f"    {name:<{width}} " + ", ".join(f"{v} ({c:,})" for v, c in zip(said, counts)))
            continue
        if "rules" in ds[name].attrs:  # a status: how many configurations each rule stopped
            lines.append(f"    {name:<{width}} {_status_counts(ds, str(name))}")
            continue
        flags = _flags(ds[name].attrs)
        if flags:  # CF flags (a need cube's status): how many of each, by name
            codes, counts = np.unique(a, return_counts=True)
            each = ", ".join(f"{flags.get(int(c), f'code {c}')} ({n:,})" for c, n in zip(codes, counts))
            lines.append(f"    {name:<{width}} {each}")
            continue
        # in float64: the median of an even count is the mean of two values, which float16 rounds (a hunt: a
        # --store float16 cube's median was 0.767578 for 0.767822)
        finite = a[np.isfinite(a)].astype(np.float64)
        stats = (
            f"{finite.min():.6g} / {np.median(finite):.6g} / {finite.max():.6g}"
            if finite.size
            else "no values"
        )
        missing = a.size - finite.size
        units = ds[name].attrs.get("units", "")
        derived = str(name).removeprefix("layout_")  # a plan cube of before 2026-12-05 kept dp 0 (derived)
        if str(name).startswith("layout_") and derived in derived_zero and np.any(finite == 0):
            units = f"{units if units != '1' else ''} (0 = {derived_zero[derived]})".strip()
        lines.append(
            f"    {name:<{width}} {stats} {units if units != '1' else ''}".rstrip()
            + (f"  ({missing:,} unset)" if missing else "")
        )
    # what a reduced or solved cube is (its profiles too, since 2026-12-05: said after)
    if "reduced" in ds.attrs:
        lines.append(f"  reduced: {ds.attrs['reduced']} (over {ds.attrs['reduced_dims']})")
    elif "solved_axis" in ds.attrs:
        target = ds.attrs.get("target_scaling_factor")  # several (need --target 0.9,0.99): a dim
        targets = show(target) if target is not None else ", ".join(show(t) for t in ds["target"].values)
        lines.append(f"  solved for {ds.attrs['solved_axis']} reaching scaling factor {targets}")
    with h5py.File(path, "r") as f:
        if "profiles" in f:
            lines.append("  profiles:")
        for name, g in f.get("profiles", {}).items():
            a = g.attrs
            lines.append(
                f"    {name}: {len(g['layer'])} tensors, {int(np.sum(g['grad_bytes'])):,} B, "
                f"backward {a['backward_time_s'] * 1e3:.2f} ms, T1 {a['iteration_time_single_gpu_s']:.6g} s, "
                f"source {a['source']}, sha256 {a['sha256'][:12]}"
            )
    ds.close()
    return "\n".join(lines)


def verify_text(path: str | Path) -> tuple[str, int]:
    """A line on the cube's block checksums (or, for a cube written whole, its datasets'), and the number of
    damaged blocks or datasets."""
    finished, damaged, total = verify(path)
    changed = verify_static_file(path) or []  # coordinates and profiles, against their checksums at creation
    with h5py.File(path, "r") as f:
        whole, shard = written_whole(f), "shard" in f.attrs
    if whole:
        verdict = (
            "all intact"
            if not changed
            else f"{', '.join(changed)} changed since it was written (damaged: run the command again)"
        )
        return f"  verify: written whole, {verdict}", len(changed)
    # A partial cube's damaged blocks are computed again by --resume; a finished cube has no checkpoint left
    # to resume (its sweep says 'nothing to resume'): only the whole sweep again rewrites it.
    redo = (
        "rerun the sweep with --resume to redo them"
        if str(path).endswith(PARTIAL_SUFFIX)
        else "the cube is finished: run its command again with --force to compute it again"
    )
    verdict = "all intact" if not damaged else f"{damaged} damaged ({redo})"
    unfinished = 0 if _unfinished_is_expected(path, shard) else total - finished
    if unfinished:  # a finished cube's progress flags have no checksum of their own (a hunt: "all intact", 0)
        named = f"{counted(unfinished, 'block')} not computed under a finished cube's name"
        verdict += f"; but {named} ({COPY_OR_DAMAGE})"
    if changed:
        verdict += (
            f"; but {', '.join(changed)} changed since the cube was made (damaged: the sweep "
            f"must be run again)"
        )
    return f"  verify: {finished} of {total} blocks finished, {verdict}", damaged + unfinished + len(changed)


# What a cube named as a finished one (not OUT.partial) with blocks not computed is: nothing in the file tells
# which (a review: a copy of OUT.partial, to read while its run holds it, is one).
COPY_OR_DAMAGE = (
    "a finished cube damaged: run its command again with --force; or a copy of an unfinished run's OUT.partial: "
    "give the copy a .partial suffix to read it"
)


def _unfinished_is_expected(path: str | Path, shard: bool) -> bool:
    """Whether a cube on disk may hold blocks not computed: an unfinished run's (``OUT.partial``) or one process's
    shard of a distributed sweep (the other processes' blocks); a finished cube holds every block."""
    return str(path).endswith(PARTIAL_SUFFIX) or shard


def check_selection(
    path: str | Path, ds: xr.Dataset, sel: Mapping[Any, Any], say: Callable[[str], None] | None = None
) -> None:
    """Refuse (:class:`~sweep.core.errors.Damaged`) to show a selection ``sel`` ({dim: value or values}) of
    the cube ``ds`` read from ``path`` when a block it reads no longer matches its checksum
    (:func:`~sweep.io.integrity.check_read`), or is not computed under a finished cube's name (a finished cube
    damaged, or a copy of ``OUT.partial`` named otherwise); ``say`` how many of the blocks it reads are not
    computed yet (an unfinished run's partial cube: their NaN are no results)."""
    positions = {
        str(d): np.flatnonzero(np.isin(ds[d].values, np.atleast_1d(np.asarray(v, dtype=object))))
        for d, v in sel.items()
    }
    missing, blocks = check_read(path, positions)
    if missing and not _unfinished_is_expected(path, "shard" in ds.attrs):
        # its blocks not computed hold what no checksum vouches for (a hunt; a review: a flag cleared over changed
        # values showed them under "NaN there is no result")
        raise Damaged(f"{path}: {counted(missing, 'block')} of what was asked for not computed under a finished "
                      f"cube's name ({COPY_OR_DAMAGE})")  # fmt: skip
    if missing and say is not None:
        say(
            f"{path}: an unfinished run's cube; "
            + (
                f"{missing} of the {blocks} blocks this reads {'is' if missing == 1 else 'are'}"
                if blocks > 1
                else "the block this reads is"
            )
            + " not computed yet (NaN there is no result: --resume finishes the run)"
        )


def _nearest(
    have: np.ndarray,
    values: Iterable[Any],
    option: str,
    picked: Callable[[str], None] | None,
    system: float | None = None,
    whose: str = "the GPU's system",
) -> list[Any]:
    """The coordinates of ``have`` nearest each value (once each), each pick that is not the value said; a
    layout cube's 0 said with the value it stands for (``system``, ``whose``: the table shows that value, where
    the pick had been said as 0, a hunt)."""
    out: list[Any] = []
    numbers = have.astype(np.float64)
    for v in values:
        # within the coordinates' range first: 1e20 is nearest the largest, where its float distances all tie
        inside = min(max(float(v), float(numbers.min())), float(numbers.max()))
        c = have[int(np.argmin(np.abs(numbers - inside)))]
        if c != v and picked is not None:
            stands = f" ({whose}, {system:g})" if c == 0 and system is not None else ""
            picked(f"{option} {v:g}: not in the cube; the nearest, {c:.12g}{stands}, selected")
        if not any(c == o for o in out):
            out.append(c)
    return out


def _as_shown(have: np.ndarray, value: Any) -> Any:
    """The coordinate of ``have`` that ``value`` is, or that prints as ``value`` to 12 significant digits (as
    ``show`` and the ``assumed:`` line say a fitted constant: 0.603199771193 is the cube's 0.6031997711931796);
    else ``value``, to be refused as not in the cube."""
    if np.any(have == value):
        return value
    shown = [h for h in have if digits12(h) == digits12(value)]
    return shown[0] if len(shown) == 1 else value


def whose_zero(dim: str) -> str:
    """What a layout cube's 0 along ``dim`` stands for, in words: a gradient dtype's, the precision's; the
    others', the GPU's system's (:func:`stands_for`)."""
    return "the precision's gradients" if dim == "grad_bytes" else "the GPU's system"


def stands_for(ds: xr.Dataset, dim: str) -> float | None:
    """What a layout cube's 0 along ``dim`` stands for (the GPU's system's NIC rate, NICs, GPUs a host, NVLink:
    :func:`~sweep.model.compute.system_settings`; a gradient dtype's, the precision's main-gradient bytes, as
    ``sweep plan``'s rows print it: a hunt, ``--sel grad_bytes=4`` from a plan's JSON row refused) where the cube's
    GPUs' systems (precisions) share it; else None."""
    if dim == "grad_bytes" and dim in family_of(ds.attrs).derived_zero and "precision" in ds.coords:
        precisions = {str(p) for p in ds["precision"].values.ravel()}
        kinds = {PRECISIONS[p].main_grad_bytes for p in precisions if p in PRECISIONS}
        return kinds.pop() if len(kinds) == 1 and precisions <= set(PRECISIONS) else None
    if dim not in family_of(ds.attrs).derived_zero or "gpu" not in ds.coords:
        return None
    gpus = [str(g) for g in ds["gpu"].values.ravel()]
    # The NVLink domain and NICs follow a host's GPUs given (compute.host_system): one host size fixes them too.
    per_node = np.unique(ds["gpus_per_node"].values) if "gpus_per_node" in ds.coords else np.zeros(1)
    if per_node.size != 1 and dim in ("nvlink_domain", "nics_per_node") or not set(gpus) <= set(GPUS):
        return None
    # Several GPUs: the value their systems share (two systems of 400 Gbit/s NICs), else none fixes it.
    values = {system_settings(g, float(per_node[0])).get(dim) for g in gpus}
    return values.pop() if len(values) == 1 else None


def _system_zero(
    ds: xr.Dataset, dim: str, have: np.ndarray, values: list[Any], option: str, say: Any
) -> list[Any]:
    """``values`` of a layout cube's system ``dim`` with the one the cube's 0 stands for (:func:`stands_for`)
    read as that 0: the cube keeps 0 where the GPU's system gave the value (``--bw 400`` on an H100 plan selects
    its bandwidth 0, which the ``assumed:`` line says is 400 Gbit/s); ``say`` is told so."""
    system = stands_for(ds, dim)
    if system is None or not np.any(have == 0):
        return values
    out = []
    for v in values:
        if not np.any(have == v) and float(v) == system:
            if say is not None:
                say(f"{option} {v:g}: the cube's 0, {whose_zero(dim)} ({v:g}), selected")
            v = have[have == 0][0]
        out.append(v)
    return out


def as_coordinates(
    ds: xr.Dataset, dim: str, values: list[Any], option: str, say: Any = None, nearest: bool = False
) -> list[Any]:
    """Numbers typed for a numeric ``dim`` as the cube's coordinates they stand for: the GPU's system's value as
    a layout cube's 0 (:func:`_system_zero`), then the nearest coordinate (``nearest``) or the one a value prints
    as to 12 digits (:func:`_as_shown`); a value that is none of these is kept, to be refused. ``select`` and
    ``plot`` read a selection so."""
    have = ds[dim].values
    values = _system_zero(ds, dim, have, list(values), option, say)
    system = stands_for(ds, dim) if np.any(have == 0) else None
    if nearest:
        return _nearest(have, values, option, say, system, whose_zero(dim))
    return [_as_shown(have, v) for v in values]


def why_no_dim(ds: xr.Dataset, dim: str) -> str:
    """Why a cube has no ``dim`` to select on: it is an option's name for a dim (``bw``, ``gpus-per-node``: said,
    with why that dim is not here where it is not), a plan searched it (each rank's value is ``layout_<dim>``),
    an inverse query solved for it, a reduction reduced it, or it is not one of this cube's dims."""
    name = dim.replace("-", "_")
    spec = next(
        (s for s in (*NUMERIC_AXES.values(), *AXES.values()) if s.option[2:].replace("-", "_") == name), None
    )
    if spec is not None and spec.name != dim:  # an option's name for its dim: --bw's is bandwidth
        if spec.name in ds.dims:
            return f"this cube has no {dim} dim: {spec.option} selects its {spec.name} dim (--sel {spec.name}=VALUE)"
        return f"{spec.option} selects {spec.name}: {why_no_dim(ds, spec.name)}"
    if f"layout_{dim}" in ds.data_vars:
        return f"a plan cube has no {dim} dim: each rank's {dim} is its variable layout_{dim}, in every row"
    if ds.attrs.get("solved_axis") == dim:
        return f"this cube has no {dim} dim (it was solved for it)"
    if dim in str(ds.attrs.get("reduced_dims", "")).split(","):
        # an argmax's or argmin's labels name the dim (whichever of the --reduce items reduced it)
        where = [str(v) for v in ds.data_vars if str(v).endswith((f"_argmax_{dim}", f"_argmin_{dim}"))]
        named = " and ".join(where) if len(where) <= 2 else f"each variable's, as {where[0]}"
        said = f": the {dim} of each extreme is {named}" if where else ""
        return f"this cube has no {dim} dim (--reduce {ds.attrs.get('reduced', '')} reduced it){said}"
    return f"this cube has no {dim} dim; its dims: {', '.join(map(str, ds.dims))}"


def _axis_values(text: str, spec: AxisSpec, zero: bool) -> list[float]:
    """Values typed for an axis's dim; with ``zero``, a 0 too, where a layout cube's 0 stands for the GPU's
    system's value: typed as shown (``--sel bandwidth=0`` was refused as below --bw's range, a hunt), the rest
    held to the axis's rule (a review: -1 was said to be below 0, and 0.0005 --nearest picked the 0)."""
    if not zero:
        return list(parse_values(text, spec))
    try:  # 0..400@3 from the cube's 0 too
        values = list(parse_values(text, dataclasses.replace(spec, low=0.0)))
    except InputError:
        parse_values(text, spec)  # refused as the axis refuses it (-1 is below its rule, not below 0)
        raise
    for v in values:
        if v != 0:
            spec.check(v)
    return values


def _selection(
    ds: xr.Dataset,
    chosen: Mapping[str, str],
    nearest: bool = False,
    picked: Callable[[str], None] | None = None,
) -> dict[Hashable, list[Any]]:
    sel: dict[Hashable, list[Any]] = {}
    for dim, text in chosen.items():
        if dim not in ds.dims:
            raise InputError(f"{text}: {why_no_dim(ds, dim)}", param=dim)
        values: Iterable[Any]
        family = family_of(ds.attrs)
        specs = family.axes  # the cube's own axes
        if dim in specs:
            values = _axis_values(
                text, specs[dim], dim in family.derived_zero and bool(np.any(ds[dim].values == 0))
            )
        elif dim == "compressor":  # topk:0.010 is topk:0.01
            values = [c.name for c in parse_compressors(text)]
        elif ds[dim].dtype.kind in "iuf":  # a dim no axis describes (a plan's rank): plain numbers
            values = [number(t.strip(), f"{dim}") for t in str(text).split(",")]
            if len(set(values)) != len(values):  # as an axis's values: each once (a row was shown twice)
                raise InputError(f"{text}: give each value once", param=dim)
        else:
            values = parse_names(text, dim, [str(x) for x in ds[dim].values])
        have = ds[dim].values
        numeric = have.dtype.kind in "iuf"  # any numeric dim, the axes' and the rest (a need cube's target)
        if numeric:  # the GPU's system's value is the cube's 0 it stands for (said as such, --nearest or not)
            option = specs[dim].option if dim in specs else f"--sel {dim}"
            values = as_coordinates(ds, dim, list(values), option, picked, nearest)
            if len({float(v) for v in values}) != len(values):  # two values of one coordinate: a row twice
                raise InputError(
                    f"{text}: give each value once (two of them are one value of the cube)", param=dim
                )
        for v in values:
            if not np.any(have == v):
                # to 12 digits either side (1.0000001 is not 1), and the range it came from where expanded
                shown = f"{v:.12g}" if not isinstance(v, str) else v
                typed = f" (of {text})" if str(text).strip() not in (shown, str(v)) and numeric else ""
                hint = " (--nearest selects the nearest)" if numeric else ""
                system = stands_for(ds, dim) if numeric else None
                listed = ", ".join(
                    f"{h:.12g}"
                    + (f" (= {whose_zero(dim)}, {system:g})" if h == 0 and system is not None else "")
                    if numeric
                    else str(h)
                    for h in have
                )
                raise InputError(f"{shown}{typed}: not in the cube; it has {listed}{hint}", param=dim)
        sel[dim] = list(values)
    return sel


def select_table(
    path: str | Path,
    chosen: Mapping[str, str],
    csv: bool = False,
    nearest: bool = False,
    picked: Callable[[str], None] | None = None,
    variables_text: str | None = None,
) -> str:
    """The selected slice as text: a table of the remaining dims and the variables (``variables_text``: a
    comma list of them; default all), one table per set of dims the variables span.

    ``nearest``: a numeric value not in the cube selects the coordinate nearest it, and
    ``picked(text)`` is told which (and how much of the selection an unfinished run has not computed)."""
    with open_cube(path) as ds:  # closed where a selection is refused too: no file left open in a caller
        return _select_text(ds, path, chosen, csv, nearest, picked, variables_text)


def _select_text(
    ds: xr.Dataset,
    path: str | Path,
    chosen: Mapping[str, str],
    csv: bool,
    nearest: bool,
    picked: Callable[[str], None] | None,
    variables_text: str | None,
) -> str:
    """:func:`select_table`'s text of the open cube ``ds``."""
    selection = _selection(ds, chosen, nearest, picked)
    check_selection(path, ds, selection, picked)  # what is shown is what was written
    sub = system_shown(ds, ds.sel(selection))
    if variables_text is not None:
        names = parse_names(variables_text, "vars", variables(ds))
    else:
        names = variables(ds)
    # One table per set of dims the variables span: a plan's per-rank outputs, its per-setting verdicts and
    # its per-switch changes apart, so no row is repeated once per value of a dim it does not depend on.
    groups: dict[tuple[Hashable, ...], list[str]] = {}
    for name in names:
        groups.setdefault(tuple(d for d in ds.dims if d in sub[name].dims), []).append(name)
    if csv and len(groups) > 1:
        raise InputError(
            "prints one table, and these variables span different dims ("
            + "; ".join(f"{', '.join(v[:3])}{', ...' if len(v) > 3 else ''}" for v in groups.values())
            + "): choose the variables of one with --vars",
            param="csv",
        )
    rows = max(int(np.prod([sub.sizes[d] for d in dims])) for dims in groups)
    # built whole in memory, about 500 bytes a row: 12 GB and more for a 1 GB cube (a hunt)
    if rows > MOST_ROWS:
        raise InputError(
            f"{path}: the selection is {rows:,} rows, more than the {MOST_ROWS:,} select prints; choose a slice "
            "(--sel or a dim's option) or read the cube from Python (sweep.open_cube, an xarray Dataset)"
        )
    tables = [_table(ds, sub, group, chosen) for group in groups.values()]
    if csv:  # every digit the cube holds (a review: a 12-digit coordinate no longer matched the cube's)
        return tables[0].to_csv(index=False).rstrip("\n")
    # A table wider than a screen (a plan's 30 outputs per layout) continues below, in blocks of columns.
    return "\n\n".join(
        _coordinates_shown(df, ds).to_string(index=False, line_width=TABLE_WIDTH) for df in tables
    )


def _coordinates_shown(df: Any, ds: xr.Dataset) -> Any:
    """``df`` with each coordinate that is not a whole number to the 12 digits a selection takes back (pandas'
    6 decimals, 3.162278, were refused as not in the cube, a hunt)."""
    for d in ds.dims:
        if str(d) in df.columns and df[str(d)].dtype.kind == "f" and not all_whole(df[str(d)]):
            df[str(d)] = [digits12(v) for v in df[str(d)]]
    return df


TABLE_WIDTH = 160  # characters: select's tables wrap their columns beyond it
MOST_ROWS = 5_000_000  # rows select prints at most (2.5 GB of memory as it builds them)


def system_shown(ds: xr.Dataset, sub: xr.Dataset, dims: Iterable[Hashable] | None = None) -> xr.Dataset:
    """The slice ``sub`` of a layout cube with each system dim's 0 (of ``dims``; None: every one) shown as the
    value it stands for (:func:`stands_for`): ``select`` prints it (``--bw 400`` selected the cube's 0 and printed
    bandwidth 0, read from a CSV as 0 Gbit/s: a hunt) and ``plot`` draws its axes so. A column of such a dim is
    one a selection named, which said it."""
    for dim in family_of(ds.attrs).derived_zero if dims is None else dims:
        system = stands_for(ds, str(dim)) if dim in sub.dims else None
        if system is not None:
            sub = sub.assign_coords({dim: sub[dim].where(sub[dim] != 0, system)})
    return sub


def _table(ds: xr.Dataset, sub: xr.Dataset, names: list[str], chosen: Mapping[str, str]) -> Any:
    """The selected slice ``sub`` of variables ``names`` (which share their dims) as a DataFrame."""
    # A float16 store printed as float32 (the same values): pandas' formatter overflows a cast of float16.
    # A status printed without fits beside it still says a layout that cannot fit: fits read along, not shown.
    statuses = [n for n in names if "rules" in ds[n].attrs]
    along = ["fits"] if statuses and "fits" in sub.data_vars and "fits" not in names else []
    along = [n for n in along if sub[n].dims == sub[statuses[0]].dims]
    picked = sub[names + along]
    widened = picked.map(lambda v: v.astype(np.float32) if v.dtype == np.float16 else v)
    if picked.dims:
        df = widened.to_dataframe(dim_order=list(picked.dims)).reset_index()  # the rows in the cube's order
    else:  # reduced over every dim: one row (to_dataframe refuses a 0-d Dataset: a traceback, a hunt)
        df = widened.expand_dims("row").to_dataframe().reset_index(drop=True)
    keep = [str(d) for d in ds.dims if str(d) in df.columns and (sub.sizes[d] > 1 or d in chosen)]
    df = df[keep + names + along]
    if family_of(ds.attrs).whole_numbers:  # dims that count (tp 8, gpus 1024) read as whole numbers,
        for d in keep:  # and the status as the rule a layout breaks
            if df[d].dtype.kind == "f" and all_whole(df[d]):
                df[d] = df[d].astype(np.int64)
        for name in names:  # a plan's layout_tp 2, not 2.0 ('' where a setting has no layout)
            column = df[name]
            if name.startswith("layout_") and column.dtype.kind == "f":
                whole = column[np.isfinite(column)]
                if all_whole(whole):
                    df[name] = [str(int(v)) if np.isfinite(v) else "" for v in column]
        for name in names:
            if "rules" in ds[name].attrs:
                rules = _rules(str(ds[name].attrs["rules"]))
                fits = df["fits"] if "fits" in df.columns else None  # status 0 is "can exist", not "fits"
                ranked = "rank" in ds[name].dims  # a plan's: fits NaN is a rank with no layout
                if fits is None:  # code 0 says the layout can exist, not that it fits (show says the same)
                    rules[0] = "can exist"
                # '' where a plan's rank has no layout (fits NaN), as its layout_ columns print it
                df[name] = [
                    ("does not fit in memory" if fits is not None and fits.iloc[i] == 0 and c == 0 else
                     rules.get(int(c), f"code {c}"))
                    if np.isfinite(c) and not (ranked and fits is not None and np.isnan(fits.iloc[i])) else ""
                    for i, c in enumerate(df[name])
                ]  # fmt: skip
    for name in names:  # a CF flag variable (a need cube's status) as its meanings' words
        flags = _flags(ds[name].attrs)
        if flags:
            df[name] = [flags.get(int(c), f"code {c}") for c in df[name]]
    return df.drop(columns=along)
