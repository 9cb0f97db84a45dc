"""Inverse queries (``sweep need``): where a target scaling factor is reached, per combination.

The scaling factor grows with bandwidth, utilization and compression ratio (``need``
answers the smallest value that reaches the target) and falls with latency,
overhead, slowdown and jitter (the largest value that still reaches it: how much
can be afforded). For every combination of the other axes at once we bisect in log
space (:func:`kernels.bisect.boundary`, jitted in :mod:`sweep.engine.compiled`): after
``ITERATIONS`` halvings of [low, high] the bracket is far below the 0.5% asked for,
and the answer is a value that reaches the target. Where no allowed value reaches
it the answer is ``unreachable``; where the weakest allowed value already does,
``met at the minimum`` (or, for the falling axes, ``met even at the maximum``). Each
answer is then checked as a user would feed it back (in the grid's dtype, through
the same units) and moved by an ulp where rounding took it past the boundary.
"""

import dataclasses
from collections.abc import Collection, Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import xarray as xr
from typing_extensions import Unpack

from netsweep_jax.kernels.bisect import AT_LIMIT, MET_AT_MIN, SOLVED, UNREACHABLE
from netsweep_jax.kernels.overlap import Buckets, Config, Features, Workers
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, show
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords_but
from netsweep_jax.sweep.core.layout_axes import is_nccl, uses_nccl
from netsweep_jax.sweep.core.schema import DIMS, GROWING, SOLVABLE
from netsweep_jax.sweep.core.values import si_values
from netsweep_jax.sweep.engine.blocks import DEFAULT_BLOCK_CONFIGS, Block, Blocking, check_in_memory
from netsweep_jax.sweep.engine.compiled import solve_on_grid, table_metrics
from netsweep_jax.sweep.engine.dataset import coordinates
from netsweep_jax.sweep.engine.dispatch import run
from netsweep_jax.sweep.engine.grid import Grid, make_grid
from netsweep_jax.sweep.engine.grid_options import GridOptions, Models
from netsweep_jax.sweep.engine.inputs import BlockInputs
from netsweep_jax.sweep.model.collectives import ONE_LINK_PER_WORKER
from netsweep_jax.sweep.model.fabric_constants import UTILIZATION_ON_ETA, FabricConstants
from netsweep_jax.sweep.model.fabrics import FabricPreset, is_preset

# The range searched for each solvable axis is the schema's (AxisSpec.search, stored units, low > 0
# for the log-space bisection); the scaling factor grows with the axes of GROWING.
# Settings a sweep takes that solve refuses: its answer is computed whole, in memory, in the grid's dtype, and is
# the axis's value alone.
_IN_MEMORY = ("reduce", "store", "variables")
ITERATIONS = 40  # bracket ratio (1e9)^(2^-40): exact to float rounding
# Points scanned before the bisection where NCCL's own collective prices the sweep and the axis solved for moves
# its choice: its algorithm, protocol and channels step with the NIC rate and the message size, and the scaling
# factor can fall where the rate or the ratio grows (a hunt: `need --solve ratio` on a DGX B200 SuperPOD
# answered 4.135 where 3.98 already met the target). Steps of (1e9)^(1/512), 4.1%, over the bandwidth's range
# (2.7% over the ratio's), then of 8^(1/512), 0.41%, over the eightfold range below the first point found
# (kernels.bisect.boundary). The other axes scale a choice made at the NIC rate and message size: not scanned.
NCCL_SCAN = 512
NCCL_MOVED_BY = ("bandwidth", "ratio")
__all__ = ["MET_AT_MIN", "SOLVED", "UNREACHABLE", "answer_table", "search_range", "solve"]
Array = npt.NDArray[Any]


def search_range(axis: str) -> tuple[float, float]:
    """(low, high) searched for ``axis``, in its stored units."""
    searched = NUMERIC_AXES[axis].search
    if searched is None:
        raise InputError(f"{axis!r}: must be one of {', '.join(SOLVABLE)}", param="axis")
    return searched


def _names_a_preset(fabric: Any) -> bool:
    """Whether ``fabric`` gives the NICs' rate: a fabric preset (or a preset's name), or a fabric file's constants
    that record the NICs its logs ran on."""
    if isinstance(fabric, (FabricPreset, FabricConstants)):
        return "bandwidth" in fabric.settings()
    return isinstance(fabric, str) and is_preset(fabric)


def _given_text(value: Any) -> str:
    """A value given for an axis as the user typed it (text as it is, numbers comma-separated)."""
    if isinstance(value, str):
        return value
    try:
        return ",".join(show(float(v)) for v in np.atleast_1d(np.asarray(value, dtype=np.float64)))
    except (TypeError, ValueError):  # items of text (["1k"]): as given
        return str(value)


def axis_named(axis: str) -> str:
    """The axis ``axis`` names, by its name in any case (the guide's rule) or its option's (``bw``: a hunt had
    --solve bw refused, though --bw is the axis's own option); one every caller of a solve reads it by (need --out
    had read --solve bw as the axis 'bw' after the bisection, a traceback, a hunt)."""
    typed, axis = axis, axis.strip().lower() if isinstance(axis, str) else axis
    options = {spec.option.lstrip("-").replace("-", "_"): name for name, spec in NUMERIC_AXES.items()}
    axis = options.get(axis, axis) if isinstance(axis, str) else axis
    if axis not in NUMERIC_AXES:
        raise InputError(f"{typed!r}: must be one of {', '.join(SOLVABLE)}", param="axis")
    return axis


def _question(axis: str, target: float, settings: Mapping[str, Any]) -> str:
    """The axis solved for, by its name (any case: the guide's rule), once the question is one :func:`solve`
    answers: a solvable axis not also given, a target in (0, 1], and the bandwidth given unless solved for or
    a fabric gives it."""
    axis = axis_named(axis)
    search_range(axis)  # refuses an axis with no search range
    if not (0 < target <= 1):
        raise InputError(f"{show(target)}: must be a scaling factor in (0, 1]", param="target")
    if settings.get(axis) is not None:
        raise InputError(
            f"{axis}: do not also give values for that axis ({NUMERIC_AXES[axis].option} {_given_text(settings[axis])} "
            "given: the answer is its value)",
            param="axis",
        )
    if settings.get("iterations_factor") is not None:  # a hunt: accepted, and the answer unchanged
        raise InputError(
            "enters time_to_accuracy only, and need solves for the scaling factor of one step: leave it out",
            param="iterations_factor",
        )
    for name in _IN_MEMORY:
        if settings.get(name) is not None:
            raise InputError(
                f"{settings[name]!r}: need's answer is one value per cell, in memory; select, reduce or store "
                "the Dataset it returns",
                param=name,
            )
    if (
        axis != "bandwidth"
        and settings.get("bandwidth") is None
        and not _names_a_preset(settings.get("fabric"))
    ):
        raise InputError(
            "required: give the bandwidth(s) in Gbit/s (only solving for bandwidth, or a --fabric preset or a "
            "fabric file that records its NICs, which gives their rate, goes without)",
            param="bandwidth",
        )
    return axis


def solved_grid(model: Models, axis: str, **settings: Any) -> Grid:
    """The grid :func:`solve` bisects ``axis`` over (``settings`` as it takes them, None: not given): ``axis`` at
    a placeholder, the top of its search range, nonzero so that the terms it drives are compiled in. A ``need
    --out`` cube keeps its inputs (profiles, reduce-cost table) as a sweep's cube does."""
    given: dict[str, Any] = {k: v for k, v in settings.items() if v is not None}
    axis = axis_named(axis)
    # the scaling factor alone: no time_to_accuracy (its factors unsaid) nor its second, uncompressed evaluation
    grid = make_grid(model, **{**given, axis: search_range(axis)[1], "variables": ("scaling_factor",)})
    # its answer sits on top of eta_net: said (a review)
    if axis == "utilization" and uses_nccl(grid.collectives):
        grid = dataclasses.replace(grid, assumed="; ".join(filter(None, (grid.assumed, UTILIZATION_ON_ETA))))
    return grid


@refuse_unknown_keywords_but(*_IN_MEMORY)
def solve(model: Models, *, target: float, axis: str, **settings: Unpack[GridOptions]) -> xr.Dataset:
    """The value of ``axis`` where scaling factor ``target`` is reached, for every combination.

    Args:
      model: as :func:`sweep.evaluate`.
      target: scaling factor in (0, 1].
      axis: one of :data:`~sweep.core.schema.SOLVABLE`: the smallest value reaching the target
        for the axes in :data:`~sweep.core.schema.GROWING`, the largest value still reaching it
        for the others.
      **settings: the other axes and settings, the keywords of :func:`sweep.engine.grid.make_grid`
        (``bandwidth`` is required unless solved for or a fabric preset gives it; None: not given). An unknown one raises
        :class:`~sweep.core.errors.InputError`.

    Returns:
      ``xarray.Dataset`` over every dim but ``axis``: ``required_<axis>`` for a growing
      axis or ``allowed_<axis>`` for a falling one (NaN where unreachable),
      ``status`` (0 solved, 1 met at the limit, 2 unreachable), and the scaling factor at the range's ends,
      ``scaling_factor_at_minimum`` and ``scaling_factor_at_maximum`` of ``axis`` (what no value beats).
    """
    axis = _question(axis, target, settings)
    increasing = axis in GROWING
    grid = solved_grid(model, axis, **settings)
    if axis == "latency" and uses_nccl(grid.collectives):
        raise InputError(
            f"latency: NCCL's collectives ({', '.join(c for c in grid.collectives if is_nccl(c))}) do not read "
            "the latency axis (their latencies are NCCL's tuner's and the fabric's); solve for it with flat "
            "collectives",
            param="axis",
        )
    if uses_nccl(grid.collectives) and grid.dtype != "float64":
        # NCCL's channel speeds step with the NIC rate: a float32 answer one ulp below a step would meet the
        # target in float32 and miss it at the rate itself. Solved in float64 instead (the same grid otherwise).
        grid = dataclasses.replace(grid, dtype="float64")
    # Every answer is kept in memory (as evaluate's outputs): at most as many as evaluate keeps, solved in blocks
    # of evaluate's size (one block of the whole grid held every bisection's state at once: 8 GB at 10^8 cells).
    check_in_memory(grid.sizes, "or solve for fewer combinations at once")
    blocking = Blocking(grid.sizes, min(grid.size, DEFAULT_BLOCK_CONFIGS), grid.family)
    value = np.full(grid.shape, np.nan, grid.dtype)
    status = np.full(grid.shape, UNREACHABLE, np.int8)
    ends = np.full((2, *grid.shape), np.nan, grid.dtype)  # the scaling factor at the range's minimum, maximum

    def sink(block: Block, answers: dict[str, Array]) -> None:
        value[block.region()] = answers["value"]
        status[block.region()] = answers["status"]
        ends[(slice(None),) + tuple(block.region())] = answers["ends"]

    question = _Question(axis, target, increasing)
    run(
        grid,
        blocking,
        sink,
        adapter=lambda _, blocking: _SolvedBlocks(
            grid, blocking, question
        ),  # its own grid: a data-parallel one
    )
    return _dataset(grid, axis, target, value, status, ends)


@dataclasses.dataclass(frozen=True)
class _Question:
    """What :func:`solve` asks of every combination: the axis solved for, the target scaling factor, and whether
    the scaling factor grows with the axis."""

    axis: str
    target: float
    increasing: bool


class _SolvedBlocks:
    """``sweep need``'s blocks (the engine's block adapter of a question, :func:`sweep.engine.dispatch.run`): each
    block's bisection on the device (:func:`solve_on_grid`), its answers then moved on the host until they reach
    the target as a user would feed them back (:func:`_reaching`)."""

    kernel = "xla"

    def __init__(self, grid: Grid, blocking: Blocking, question: _Question) -> None:
        self.grid, self.question = grid, question
        self.inputs = BlockInputs(
            grid, blocking
        )  # made inside the grid's precision (run makes the adapter there)
        self.low, self.high = search_range(question.axis)

    def __call__(self, block: Block, copy: Any, reduce: Any) -> Any:
        q, inputs = self.question, self.inputs
        dt = inputs.dtype.type
        args = inputs.block(block)  # kept on the host for _reaching; a copy on the block's device solved
        config, workers, buckets, t1 = copy(None, lambda: args)
        solved = solve_on_grid(
            config,
            workers,
            buckets,
            t1,
            dt(q.target),
            dt(si_values(q.axis, self.low)),
            dt(si_values(q.axis, self.high)),
            axis=q.axis,
            iterations=ITERATIONS,
            features=inputs.features,
            increasing=q.increasing,
            scan=NCCL_SCAN if inputs.features.nccl and q.axis in NCCL_MOVED_BY else 0,
        )
        return args, solved

    def collect(self, block: Block, result: Any) -> dict[str, Array]:
        """The block's answers (``value`` in the axis's units, the grid's dtype) and ``status``, shaped like its
        region: the kernel's padding lanes dropped."""
        (args, (solved, solved_status, at_low, at_high)), q, grid = result, self.question, self.grid
        k, c = block.outer_lanes, block.size // block.outer_lanes
        v = (np.asarray(solved, np.float64) / NUMERIC_AXES[q.axis].to_si).astype(grid.dtype)
        st = np.array(solved_status)
        st[k:, :], st[:, c:] = UNREACHABLE, UNREACHABLE  # the kernel's padding lanes: never moved
        dt = self.inputs.dtype.type
        v, short = _reaching(v, st, args, q.axis, dt(q.target), self.inputs.features, q.increasing)
        if least_tried(q.axis) == 0:
            # A falling axis's least value is 0, below the search's floor (a hunt: "unreachable even at 0.001 us"
            # where no latency meets the target): the scaling factor there, and 0 the answer where it reaches it,
            # for a cell the search left short at its floor too (a review).
            at_low = _scaling_at(args, q.axis, np.zeros_like(v), self.inputs.features).astype(v.dtype)
            met = ((st == UNREACHABLE) | short) & (at_low >= _goal(dt(q.target), v.dtype))
            met[k:, :], met[:, c:] = False, False
            v, st, short = np.where(met, v.dtype.type(0), v), np.where(met, SOLVED, st), short & ~met
        # An answer that does not reach the target fed back is none: said unreachable, never solved, and NaN as
        # every unreachable answer is (a review: its clamped value had been kept).
        st, v = np.where(short, UNREACHABLE, st), np.where(short, v.dtype.type(np.nan), v)
        v = v[:k, :c]
        ends = np.stack([np.asarray(e)[:k, :c].reshape(block.region_shape()) for e in (at_low, at_high)])
        return {
            "value": v.reshape(block.region_shape()),
            "status": st[:k, :c].reshape(block.region_shape()),
            "ends": ends.astype(grid.dtype),
        }


MARGIN_ULPS = 4  # the fed-back scaling factor must clear the target by this many ulps: a sweep's
# kernel may round its last bits differently from the table evaluation that checks the answers


def _reaching(
    value: Array,
    status: Array,
    args: tuple[Config, Workers, Buckets, Any],
    axis: str,
    target: Any,
    features: Features,
    increasing: bool,
    max_steps: int = 48,
) -> tuple[Array, Array]:
    """Solved answers, moved in the safe direction (up for a growing axis, down for a falling
    one: one ulp at a time, then by doubling steps) until the answer, stored in the grid's
    dtype and fed back as a user would (stored units -> SI -> dtype), reaches the target in
    that dtype with a margin of :data:`MARGIN_ULPS` ulps; and the solved cells still short of it after
    ``max_steps`` moves."""
    toward = np.inf if increasing else -np.inf
    dtype = value.dtype
    goal = _goal(target, dtype)
    low, high = search_range(axis)
    for step in range(max_steps):
        short = (status == SOLVED) & ~(_scaling_at(args, axis, value, features) >= goal)
        if not short.any():
            return value, short
        if step < 8:
            moved = np.nextafter(value, toward, dtype=dtype)
        else:  # relative steps of 2^(step-8) ulps
            factor = dtype.type(1 + np.finfo(dtype).eps * 2.0 ** (step - 8))
            moved = (value * factor if increasing else value / factor).astype(dtype)
        moved = np.clip(moved, dtype.type(low), dtype.type(high))
        value = np.where(short, moved, value)
    return value, (status == SOLVED) & ~(_scaling_at(args, axis, value, features) >= goal)


def least_tried(axis: str) -> float:
    """The least value :func:`solve` tries of ``axis``: the search's floor, or 0 for a falling axis whose least
    value is 0 (tried apart from the search: :meth:`_SolvedBlocks.collect`)."""
    return 0.0 if axis not in GROWING and NUMERIC_AXES[axis].low == 0 else search_range(axis)[0]


def _goal(target: Any, dtype: np.dtype) -> Any:
    """The scaling factor an answer must reach: the target, :data:`MARGIN_ULPS` ulps up in ``dtype`` (never past
    1, the most a scaling factor reaches)."""
    goal = dtype.type(target)
    for _ in range(MARGIN_ULPS):
        goal = min(np.nextafter(goal, dtype.type(np.inf), dtype=dtype), dtype.type(1))
    return goal


def _scaling_at(
    args: tuple[Config, Workers, Buckets, Any], axis: str, value: Array, features: Features
) -> Array:
    """The scaling factor [K, C] of a block's cells (``args``: its host inputs) with ``axis`` at ``value`` [K, C]
    (in its stated units, the grid's dtype), as a user feeding the value back would get it."""
    config = args[0]
    k, c = value.shape
    cells: dict[str, Any] = {
        f: np.broadcast_to(np.asarray(getattr(config, f))[None, :c], (k, c)) for f in config._fields
    }
    cells[axis] = (value.astype(np.float64) * NUMERIC_AXES[axis].to_si).astype(value.dtype)
    return np.asarray(table_metrics(type(config)(**cells), *args[1:], features=features)["scaling_factor"])


def answer_name(axis: str) -> str:
    """The variable of a need cube: ``required_<axis>`` or ``allowed_<axis>``."""
    return f"{'required' if axis in GROWING else 'allowed'}_{axis}"


def _dataset(grid: Grid, axis: str, target: float, value: Array, status: Array, ends: Array) -> xr.Dataset:
    dims = tuple(d for d in DIMS if d != axis)
    squeeze = DIMS.index(axis)
    spec = NUMERIC_AXES[axis]
    limit, which = ("smallest", "minimum") if axis in GROWING else ("largest", "maximum")
    data = {
        answer_name(axis): xr.Variable(
            dims,
            value.squeeze(squeeze),
            {
                "units": spec.units,
                "long_name": f"{limit} {spec.long_name} reaching the target scaling factor",
            },
        ),
        "status": xr.Variable(
            dims,
            status.squeeze(squeeze),
            {
                "flag_values": np.array([SOLVED, AT_LIMIT, UNREACHABLE], np.int8),
                "flag_meanings": f"solved met_at_{which} unreachable",
                "long_name": f"0: solved, 1: target met at the {which} searched, 2: unreachable",
            },
        ),
        **{
            f"scaling_factor_at_{end}": xr.Variable(
                dims,
                at_end.squeeze(squeeze),
                {"units": "1", "long_name": f"scaling factor at the {end} {spec.long_name} searched"},
            )
            for end, at_end in zip(("minimum", "maximum"), ends)
        },
    }
    high = search_range(axis)[1]
    attrs = {
        "target_scaling_factor": target,
        "solved_axis": axis,
        "low": least_tried(axis),
        "high": high,
        "dtype": grid.dtype,
    }
    attrs.update(grid.said_attrs())  # as a grid's cube keeps them
    return xr.Dataset(data, coords=coordinates(grid, drop=(axis,)), attrs=attrs)


SHOWN_DIGITS = 4  # significant digits of a printed answer


def shown_value(value: float, axis: str, digits: int = SHOWN_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded in the safe direction: up for a growing
    axis (the smallest value required), down for a falling one (the largest allowed), so the
    number shown, fed back, reaches the target as the stored answer does (the scaling factor is
    monotone in the axis)."""
    return rounded(value, up=axis in GROWING, digits=digits)


def rounded(value: float, *, up: bool, digits: int = SHOWN_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded up or down (never to nearest: a bound shown)."""
    exact = Decimal(repr(float(value)))
    if exact == 0:
        return "0"
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    shown = exact.quantize(quantum, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    if Decimal("1e-4") <= abs(shown) < Decimal("1e9"):  # as a person writes it: 26320, not 2.632e+04 (a hunt)
        return f"{shown.normalize():f}"
    return f"{float(shown):.{digits}g}"


def answer_text(
    value: float, status: int, axis: str, ends: tuple[float, float] | None = None, least: float | None = None
) -> str:
    """One cell of the printed table (a solved answer rounded in the safe direction: :func:`shown_value`);
    ``ends``: the scaling factor at the range's minimum and maximum, which an unreachable answer says (the most
    any value gives, or that the axis does not change it); ``least``: the least value tried (a cube's ``low``:
    one written before 0 was tried tried the floor; None: :func:`least_tried`)."""
    units = NUMERIC_AXES[axis].units
    units = "" if units == "1" else f" {units}"
    low, high = search_range(axis)
    growing = axis in GROWING
    if status == UNREACHABLE:
        if ends is not None and ends[0] == ends[1]:  # the axis moves nothing: not what stops it
            return f"unreachable (does not change the scaling factor, {rounded(ends[0], up=False)})"
        least = least_tried(axis) if least is None else least
        end = f"> {high:g}{units}" if growing else f"even at {least:g}{units}"
        if ends is not None:
            return f"unreachable ({end}: at most {rounded(ends[1] if growing else ends[0], up=False)})"
        return f"unreachable ({end})"
    if status == AT_LIMIT:
        if (
            ends is not None and ends[0] == ends[1]
        ):  # met, but not for the axis's sake (one host's NICs: a hunt)
            return f"met (does not change the scaling factor, {rounded(ends[0], up=False)})"
        return (
            f"met at the minimum ({low:g}{units})"
            if growing
            else f"met even at the maximum ({high:g}{units})"
        )
    return f"{shown_value(value, axis)}{units}"


def _set(ds: xr.Dataset, dim: str) -> bool:
    """Whether numeric dim ``dim`` holds one value that is not its axis's one default (so it was set)."""
    spec = NUMERIC_AXES.get(dim)
    if spec is None or "," in str(spec.default) or ".." in str(spec.default) or ds.sizes[dim] != 1:
        return False
    return float(ds[dim].values[0]) != float(spec.default)


def _nics(ds: xr.Dataset) -> str:
    values: Any = np.unique(np.asarray(ds["nics_per_node"].values)) if "nics_per_node" in ds.coords else []
    return f", {int(values[0])} NIC{'s' if int(values[0]) != 1 else ''} per node" if len(values) == 1 else ""


def _per_link(ds: xr.Dataset) -> str:
    """What one ``--bw`` link is in need's table head: a NIC's (its count where one), or for the flat ring, tree
    and parameter server one link per GPU, whatever the NICs (a hunt: their answers were headed "per NIC")."""
    collectives = (
        {str(c) for c in np.atleast_1d(ds["collective"].values)} if "collective" in ds.coords else set()
    )
    flat = collectives & set(ONE_LINK_PER_WORKER)
    if not flat:
        return f"per NIC{_nics(ds)}"
    if flat == collectives:
        return "per GPU: one link each"
    return f"per GPU for {', '.join(sorted(flat))}, per NIC for the others{_nics(ds)}"


def _utilization(ds: xr.Dataset) -> str:
    values: Any = np.unique(np.asarray(ds["utilization"].values)) if "utilization" in ds.coords else []
    return f"utilization {float(values[0]):g}" if len(values) == 1 else "the row's utilization"


def _spine(ds: xr.Dataset) -> str:
    """`` on ethernet-clos's spine at 8:1``: a fabric's spine held at another oversubscription than 1:1, which the
    answer is for (a per-sweep setting, not a dim: the table's columns could not say it; a hunt)."""
    over = float(ds.attrs.get("oversubscription", 1.0))
    return f" on {ds.attrs.get('fabric', 'the fabric')}'s spine at {over:g}:1" if over != 1.0 else ""


# Always a column of need's table (where not the axis solved for): what the answer depends on most.
SHOWN = ("nodes", "bandwidth")


def answer_table(ds: xr.Dataset, given: Collection[str] = ()) -> str:
    """The answers of :func:`solve` as a text table over model, :data:`SHOWN`, the dims that vary, the numeric
    dims held at a value other than their default (``--util 0.5``: the answer is for it), and the dims in
    ``given``, settings the user set (``--compressor topk:0.01``: the answer is for it, where the table once
    left it out)."""
    axis = ds.attrs["solved_axis"]
    df = ds.to_dataframe().reset_index()
    varying = [
        d for d in ds.dims if ds.sizes[d] > 1 or d == "model" or d in SHOWN or d in given or _set(ds, str(d))
    ]
    at_ends = ("scaling_factor_at_minimum", "scaling_factor_at_maximum")
    # A need cube written before the ends were kept (2026-12-06) has none to say.
    ends = zip(*(df[e] for e in at_ends)) if all(e in df for e in at_ends) else [None] * len(df)
    least = ds.attrs.get("low")
    df["answer"] = [
        answer_text(v, s, axis, e, least) for v, s, e in zip(df[answer_name(axis)], df["status"], ends)
    ]
    limit = "smallest" if axis in GROWING else "largest"
    # to every digit given: 0.9999999 was said as "scaling factor 1"
    head = f"{limit} {axis} reaching scaling factor {show(ds.attrs['target_scaling_factor'])}"
    if axis == "bandwidth":
        head += f" (the link rate {_per_link(ds)}, at {_utilization(ds)})"
    head += _spine(ds) + ":"
    # each numeric dim's units in its column's head (a hunt: latency 5.0 read as seconds or ms)
    shown = df[varying + ["answer"]].rename(columns={d: _headed(str(d)) for d in varying})
    # what bounds an answer no NIC rate reaches (a hunt: at most 0.8971 at 1e6 Gbit/s, bound by NVLink, unsaid)
    beyond = (
        "\nunreachable at any --bw: all but the link rate bounds it (the compute it must hide behind, latency, the "
        "reductions, overheads, NVLink where a collective crosses it: --intra-bw)"
        if axis == "bandwidth" and (df["status"] == UNREACHABLE).any()
        else ""
    )
    return head + "\n" + shown.to_string(index=False) + beyond


def _headed(dim: str) -> str:
    """A dim's column head in need's table: its name, with its units where it has any (``bandwidth (Gbit/s)``)."""
    units = NUMERIC_AXES[dim].units if dim in NUMERIC_AXES else ""
    return f"{dim} ({units})" if units not in ("", "1") else dim
