"""On-device reductions (``--reduce OP:DIM[,DIM...]``): answer a question about a grid no disk could hold.

Ops: ``max``, ``min``, ``mean``, ``argmax``, ``argmin``, over one or more dims; the
option repeats. ``argmax``/``argmin`` reduce like ``max``/``min`` and also keep,
per variable and per dim, the coordinate where the extreme is reached (a variable
``<var>_argmax_<dim>``). One sweep uses one kind, ``max``/``argmax``,
``min``/``argmin`` or ``mean``, over the union U of the dims named: the result per
remaining cell is the extreme (or mean) over every combination of U jointly, so
the order the options come in does not matter; a tie goes to the first
combination in cube order, as ``numpy.argmax`` over U flattened.

How it runs: every block is reduced on the device over the U dims it holds whole
(the dims after the block's split dim, :mod:`sweep.engine.blocks`), so only the reduced block
is copied back; the host reduces the split dim's rows if it is in U and combines
the block into an accumulator the size of the result (max/min with the flat index
of the extreme, mean as a float64 sum). :mod:`sweep.io.reduced` checkpoints
the accumulators of a sweep written to a file.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.families import Family
from netsweep_jax.sweep.engine.blocks import Block, Blocking, check_in_memory
from netsweep_jax.sweep.engine.dataset import Coordinated, coordinates
from netsweep_jax.sweep.engine.outputs import check_float16

if TYPE_CHECKING:  # a type only: a sweep loads xarray only where it builds a Dataset (a reduced result's)
    import xarray as xr


class DeviceReduction(NamedTuple):
    """How a block's outputs are reduced on the device (a compiled function's static argument: hashable).

    Attributes:
      lanes: (kb, ci), the real lanes of the padded kernel output.
      shape: the block tensor shape they hold.
      axes: the axes of it reduced on the device.
      kind: the op's kind (``max``, ``min`` or ``mean``).
    """

    lanes: tuple[int, int]
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    kind: str


Array = npt.NDArray[Any]

OPS = ("max", "min", "mean", "argmax", "argmin")
OP_KIND = {"max": "max", "argmax": "max", "min": "min", "argmin": "min", "mean": "mean"}


@dataclasses.dataclass(frozen=True)
class Reduction:
    """What a sweep reduces.

    Attributes:
      kind: ``max``, ``min`` or ``mean`` (an op's kind: argmax is max's, :data:`OP_KIND`).
      dims: the reduced dims U, in cube order.
      labelled: the dims whose coordinate of the extreme is kept (argmax/argmin).
      text: the options as given, for the cube's attributes.
      cube_dims: every dim of the cube reduced, in cube order.
    """

    kind: str
    dims: tuple[str, ...]
    labelled: tuple[str, ...]
    text: str
    cube_dims: tuple[str, ...]

    @property
    def kept(self) -> tuple[str, ...]:
        """The result's dims, in cube order."""
        return tuple(d for d in self.cube_dims if d not in self.dims)

    def label_name(self, variable: str, dim: str) -> str:
        return f"{variable}_arg{self.kind}_{dim}"


def parse_reductions(given: str | Sequence[str] | None, family: Family) -> Reduction | None:
    """``["argmax:collective", "max:ratio,nodes"]`` -> :class:`Reduction` of a cube of ``family`` (None when
    empty)."""
    if given is None:
        return None
    items = [given] if isinstance(given, str) else list(given)
    if not items or not any(str(item).strip() for item in items):  # empty is refused, never "no reduction"
        shown = repr(items[0]) if len(items) == 1 else repr(given)
        raise InputError(f"{shown}: name a reduction, as max:ratio, or leave it out", param="reduce")
    op_kind: str | None = None
    dims: list[str] = []
    labelled: list[str] = []
    for item in items:
        op, _, text = str(item).partition(":")
        op = op.strip().lower()
        if op not in OPS:
            raise InputError(f"{item!r}: unknown op {op!r}; ops: {', '.join(OPS)}", param="reduce")
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not names:
            raise InputError(
                f"{item!r}: name the dims to reduce, as max:ratio or argmax:collective,nodes", param="reduce"
            )
        for name in names:
            if name not in family.dims:
                raise InputError(
                    f"{item!r}: {name!r} is not a dim; dims: {', '.join(family.dims)}", param="reduce"
                )
            if name in dims:
                raise InputError(f"{item!r}: {name} is reduced twice", param="reduce")
            dims.append(name)
            if op.startswith("arg"):
                labelled.append(name)
        if op_kind not in (None, OP_KIND[op]):
            raise InputError(
                f"{','.join(map(str, items))}: {op_kind} and {OP_KIND[op]} reductions in one sweep would "
                f"depend on their order; use one of max/argmax, min/argmin or mean",
                param="reduce",
            )
        op_kind = OP_KIND[op]
    order = [d for d in family.dims if d in dims]
    assert op_kind is not None  # items is not empty
    return Reduction(
        op_kind,
        tuple(order),
        tuple(d for d in order if d in labelled),
        "; ".join(map(str, items)),
        family.dims,
    )


def _after_split(blocking: Blocking) -> tuple[str, ...]:
    """The varying dims after the split dim: every block holds them whole."""
    varying = blocking.family.varying
    return varying[varying.index(blocking.split_dim) + 1 :]


def in_block(blocking: Blocking, reduction: Reduction) -> tuple[str, ...]:
    """The U dims every block of ``blocking`` holds whole, in cube order."""
    return tuple(d for d in _after_split(blocking) if d in reduction.dims)


def device_reduction(blocking: Blocking, reduction: Reduction) -> DeviceReduction:
    """((kb, ci): the kernel output's real lanes; the block tensor shape they hold: rows of the split dim,
    then the dims after it; the axes of it the device reduces; the op's kind): the static ``reduce`` argument
    of :func:`sweep.engine.compiled.grid_metrics`."""
    after = _after_split(blocking)
    shape = (blocking.rows,) + tuple(blocking.sizes[d] for d in after)
    axes = tuple(1 + after.index(d) for d in in_block(blocking, reduction))
    return DeviceReduction((blocking.kb, blocking.ci), shape, axes, reduction.kind)


STATUS, FITS = "status", "fits"  # the layout family's codes: reduced as codes, never as numbers
CODES = (STATUS, FITS)  # neither has an argmax label: kind_of takes them over every layout of the cell


def kind_of(variable: str, kind: str) -> str:
    """How ``variable`` is reduced under a reduction of ``kind``: as ``kind``, but for the layout family's codes.
    ``status`` (0: the layout can exist, else the code of the rule it breaks): a max or min is taken over the
    layouts that can exist, so its status is the lowest code (0 where any can); a mean is NaN unless every one
    can, so its status is the highest (0 only where all can). Its max over tp read 1 or 2 beside a valid speed,
    its mean 0.5. ``fits`` (1: the layout fits in memory) as the same question: 1 where some layout fits under
    a max or min (0 where layouts exist and none fits; every other output's extreme is taken over the layouts
    that fit: :func:`~sweep.engine.compiled.layout_block_reduced`), 1 where every one does under a mean."""
    if variable == STATUS:
        return "max" if kind == "mean" else "min"
    if variable == FITS:
        return "min" if kind == "mean" else "max"
    return kind


class Accumulator:
    """The reduced result of one variable, combined block by block on the host."""

    def __init__(self, shape: tuple[int, ...], kind: str, labelled: Sequence[str]) -> None:
        self.kind = kind
        self.value = np.full(shape, np.nan if kind != "mean" else 0.0, np.float64)
        self.index = {d: np.zeros(shape, np.int64) for d in labelled}
        self.position = np.full(shape, np.iinfo(np.int64).max, np.int64)  # flat index over U of the extreme

    def combine(
        self, where: tuple[Any, ...], value: Array, position: Array | None, labels: Mapping[str, Array]
    ) -> None:
        """Fold a candidate (value, flat position over U, {dim: index}) into the cells at ``where``."""
        if self.kind == "mean":
            self.value[where] += value
            return
        old, old_pos = self.value[where], self.position[where]
        better = value > old if self.kind == "max" else value < old
        # A value over a NaN; among equal values, and among NaNs (a cell where nothing can exist), the lower
        # position: so the cells are the same whatever order blocks (or processes' shares) are folded in.
        lower = position < old_pos
        better |= np.isnan(old) & (~np.isnan(value) | lower)
        better |= (value == old) & lower
        self.value[where] = np.where(better, value, old)
        self.position[where] = np.where(better, position, old_pos)
        for d, idx in labels.items():
            self.index[d][where] = np.where(better, idx, self.index[d][where])

    def merge(self, other: Accumulator) -> None:
        """Fold ``other`` (the same variable over other blocks: another process's share) into this one. A max or
        min keeps the extreme of the two, a tie the lower position, as one process folding every block in
        order does (the same cube); a mean adds the sums (float64, in another order than one process's)."""
        self.combine((Ellipsis,), other.value, other.position, other.index)


def _block_where(
    blocking: Blocking, block: Block, reduction: Reduction
) -> tuple[tuple[Any, ...], dict[str, int]]:
    """(index into the result for this reduced block, {dim: the block's first index along it})."""
    varying = blocking.family.varying
    split = varying.index(blocking.split_dim)
    axes = [blocking.split_dim] + [
        d for d in _after_split(blocking) if d not in reduction.dims
    ]  # the block's axes
    start = dict(zip(blocking.family.structural, block.task))
    start.update({d: s.start for d, s in zip(varying, block.slab)})
    rows = block.slab[split]
    where: list[Any] = []
    for d in reduction.kept:
        if d == blocking.split_dim:
            where.append(slice(rows.start, rows.stop))
        elif d in axes:
            where.append(slice(None))
        else:
            where.append(start[d])
    return tuple(where), start


class ReducedGrid(Coordinated, Protocol):
    """What :class:`ReducedRun` reads of a :class:`~sweep.engine.grid.Grid` (which holds a
    :class:`Reduction`, so this module cannot import it)."""

    @property
    def reduction(self) -> Reduction | None: ...

    @property
    def variables(self) -> tuple[str, ...]: ...

    @property
    def store_dtype(self) -> str: ...

    @property
    def sizes(self) -> Mapping[str, int]: ...

    def variable_attrs(self, name: str) -> dict[str, str]: ...


def check_reduced_in_memory(grid: ReducedGrid) -> None:
    """Refuse, before any work, a ``--reduce`` sweep whose result is too large to keep in memory, as any sweep
    kept in memory is (:func:`~sweep.engine.blocks.check_in_memory`): it is kept as it accumulates (a hunt: a
    4.37 TiB allocation's traceback), on one machine, in each process of ``--distributed`` (a review) and in the
    API's :func:`~sweep.engine.evaluate.reduced_in_memory` (a read-through: it reached the allocation)."""
    assert grid.reduction is not None
    check_in_memory(
        {d: grid.sizes[d] for d in grid.reduction.kept},
        "reduce more dims (--reduce max:a,b), or write the cube without --reduce",
    )


class ReducedRun:
    """Accumulators of every kept variable, fed one reduced block at a time."""

    def __init__(self, grid: ReducedGrid, blocking: Blocking) -> None:
        assert grid.reduction is not None
        self.grid, self.blocking, self.r = grid, blocking, grid.reduction
        shape = tuple(blocking.sizes[d] for d in self.r.kept)
        self.acc = {
            v: Accumulator(shape, kind_of(v, self.r.kind), self.r.labelled if v not in CODES else ())
            for v in grid.variables
        }
        self.inside = in_block(blocking, self.r)
        self.u_sizes = [blocking.sizes[d] for d in self.r.dims]
        self.done = 0

    def add(self, block: Block, arrays: Mapping[str, Array]) -> None:
        """Fold one reduced block (:meth:`sweep.engine.dispatch.Dispatcher.collect`) into the accumulators."""
        where, start = _block_where(self.blocking, block, self.r)
        split_reduced = self.blocking.split_dim in self.r.dims  # its rows are reduced here, one by one
        sizes = [self.blocking.sizes[d] for d in self.inside]
        for v, acc in self.acc.items():
            value = arrays[v].astype(np.float64)
            flat = arrays.get(f"{v}@index")
            inside = dict(zip(self.inside, np.unravel_index(flat, sizes))) if flat is not None else {}
            for row in range(value.shape[0]) if split_reduced else [None]:
                self._fold(acc, where, value, inside, start, row)
        self.done += 1

    def merge(self, other: ReducedRun) -> None:
        """Fold another run's accumulators (the same grid and reduction over other blocks) into these."""
        for v, acc in self.acc.items():
            acc.merge(other.acc[v])
        self.done += other.done

    def _fold(
        self,
        acc: Accumulator,
        where: tuple[Any, ...],
        value: Array,
        inside: Mapping[str, Array],
        start: Mapping[str, int],
        row: int | None,
    ) -> None:
        """Fold a block (or one row of the split dim) into ``acc``, with each U dim's index of its extreme."""

        def pick(a: Any) -> Any:
            return a if row is None else a[row]

        index = {
            d: pick(inside[d])
            if d in inside
            else start[d] + (row or 0 if d == self.blocking.split_dim else 0)
            for d in self.r.dims
        }
        shape = pick(value).shape
        position = None
        if acc.kind != "mean":
            position = np.broadcast_to(
                np.ravel_multi_index([np.asarray(index[d]) for d in self.r.dims], self.u_sizes), shape
            )
        acc.combine(where, pick(value), position, {d: np.broadcast_to(index[d], shape) for d in acc.index})

    def stored(self) -> dict[str, Array]:
        """Each reduced output over the kept dims in the store dtype; a value a float16 store cannot hold refused
        by name, as a block the sweep writes is (:func:`~sweep.engine.outputs.check_float16`)."""
        outside = math.prod(self.blocking.sizes[d] for d in self.r.dims if d not in self.inside)
        out = {}
        for v, acc in self.acc.items():
            value = acc.value / outside if acc.kind == "mean" else acc.value
            # the status a code, as a sweep's cube stores it (a rule's number, never NaN: every layout has one);
            # it was float32 and its rules lost (a hunt)
            dtype = self.blocking.family.stored_dtype(v, self.grid.store_dtype)
            with np.errstate(over="ignore"):  # refused below, by name
                out[v] = value.astype(dtype)
        if self.grid.store_dtype == "float16":
            check_float16(out, self.blocking.family)
        return out

    def dataset(self) -> xr.Dataset:
        """The result as an ``xarray.Dataset`` over the kept dims (labels as coordinate values)."""
        import xarray as xr  # here: 0.5-0.8 s to load, which a sweep written block by block never needs

        coords = self.grid.coords()
        data = {}
        stored = self.stored()
        for v, acc in self.acc.items():
            # a sweep's attributes (the status's rules with it: show and select name them)
            attrs = self.grid.variable_attrs(v)
            attrs["long_name"] = f"{acc.kind} of {attrs['long_name']} over {', '.join(self.r.dims)}"
            data[v] = xr.Variable(self.r.kept, stored[v], attrs)
            nowhere = np.isnan(acc.value)  # a layout cube's cell where no layout can exist
            for d in acc.index:
                data[self.r.label_name(v, d)] = xr.Variable(
                    self.r.kept,
                    _labels(coords[d], acc.index[d], nowhere),
                    {
                        "units": self.grid.family.coordinate_attrs(d)["units"],  # its dim's units
                        "long_name": f"{d} where {v} reaches its {self.r.kind} over {', '.join(self.r.dims)}"
                        + (" (NaN or empty where no layout of the cell can exist)" if nowhere.any() else ""),
                    },
                )
        ds = xr.Dataset(data, coords=coordinates(self.grid, drop=self.r.dims))
        return ds.assign_attrs(reduced=self.r.text, reduced_dims=",".join(self.r.dims))


def _labels(values: Array, index: Array, nowhere: Array) -> Array:
    """The coordinate ``values`` at ``index``, NaN (a number) or "" (a name) where the reduced value is NaN
    (``nowhere``: no layout of the cell can exist, so none reaches the extreme; it named the first)."""
    picked = np.asarray(values)[index]
    if not nowhere.any():
        return picked
    if picked.dtype.kind in "iuf":  # a count (nodes) becomes a float to hold NaN, never a string
        return np.where(nowhere, np.nan, picked.astype(np.float64))
    return np.where(nowhere, "", picked)
