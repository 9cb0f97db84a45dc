"""``sweep need`` of a large model: the fabric at which the network costs a layout at most a share of its step.

The paper's question asked of the fabric. For a layout on a setting (an outer cell of the layout grid), T(x) is
its step with one fabric setting x changed and every other held: the NIC rate beta (Gbit/s, ``--bw``), the NICs
per node K (``--nics-per-node``) or the spine's oversubscription o (``--oversubscription``: read where NCCL's
pricing places groups on a ``--fabric`` preset's tiers). T_ideal is the same layout's step on an ideal network
(:func:`sweep.analysis.planning.ideal_network`'s: NICs of unbounded rate at full utilization, no latency, flat
collectives; NVLink as it is), and the network's share of the step is

    share(x) = (T(x) - T_ideal) / T(x) = 1 - T_ideal / T(x)

For a share s the answers are the smallest beta and the smallest whole K with share(x) <= s, and the largest o
with share(x) <= s. T falls with beta and K and grows with o (every transfer across the NICs takes longer at a
lower rate; tests/test_layout_need.py checks it on a grid of each), so share(x) <= s holds on one side of one
boundary, found by K-section in log x: each round evaluates M candidates spaced evenly in log x across every
open bracket, all of them in one call of the rows kernel (:func:`sweep.engine.layout_rows.evaluate_columns`,
float64, one compile), and keeps the two neighbours around the first candidate that meets s (growing) or the last
(falling), until a bracket's ratio is below 1 + :data:`TOLERANCE`; the answer is its end that met s, computed.
M fills the kernel's block (:data:`~sweep.engine.layout_rows.ROWS_BLOCK` over the open brackets, at least
:data:`MIN_POINTS`), so one bracket over the NIC rate's nine decades closes in two or three rounds. K is searched over
the whole numbers 1..64 (the axis's range) in one call.

Unlike ``sweep plan``'s network cost, which searches the layouts again on the ideal network, the layout is held:
the question is what the fabric must be for this layout. The layout is the plan's: the fastest that can exist and
fit of the plan's search at each setting as given, the layout options given held (a launch file's layout is held as
it is). Where the ideal network's best is another layout, the notes below the tables say so, and what the network
costs against it (the plan's network cost).
"""

import dataclasses
import math
from collections.abc import Callable, Sequence
from decimal import Decimal

import numpy as np

from netsweep_jax.kernels.bisect import AT_LIMIT, SOLVED, UNREACHABLE
from netsweep_jax.kernels.layout import STATUS
from netsweep_jax.sweep.analysis.need import rounded
from netsweep_jax.sweep.analysis.planning import EXPLAINED_SHARE, ideal_settings, layout_name, setting_text
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, OVERSUBSCRIPTION
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import COLLECTIVES_MODES
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.engine.compiled import INNER_COLUMNS, OUTER_COLUMNS
from netsweep_jax.sweep.engine.layout_blocks import BlockTables
from netsweep_jax.sweep.engine.layout_rows import ROWS_BLOCK, evaluate_columns
from netsweep_jax.sweep.engine.layouts import LayoutGrid, best_layouts
from netsweep_jax.sweep.model.compute import host_system

TOLERANCE = 1e-6  # a bracket closes below this ratio less one: below the 4 digits an answer is shown to
MIN_POINTS = 16  # candidates per bracket and round, however many brackets share a call
# The layouts a search keeps per setting: sweep plan's default, so that the search shares the plan's compile.
SEARCH_KEEP = 3
# The fabric settings answered (their names the kernel's setting columns, stored units), and whether the step falls
# as each grows.
ANSWERED = ("bandwidth", "nics_per_node", "oversubscription")
FALLING = {"bandwidth": True, "nics_per_node": True, "oversubscription": False}


def search_range(axis: str) -> tuple[float, float]:
    """(low, high) searched for an answered setting, in its stored units."""
    if axis == "bandwidth":
        searched = NUMERIC_AXES["bandwidth"].search
        assert searched is not None
        return searched
    spec = NUMERIC_AXES["nics_per_node"] if axis == "nics_per_node" else OVERSUBSCRIPTION
    return float(spec.low), float(spec.high)


def parse_shares(text: str) -> list[float]:
    """``--network-share`` as fractions: percentages in (0, 100), each with or without ``%``, comma list."""
    from netsweep_jax.sweep.core.values import decimal

    shares = []
    for item in str(text).split(","):
        number = item.strip().removesuffix("%").strip()
        try:
            value = decimal(number)
        except ValueError:
            value = math.nan
        if not 0 < value < 100:
            raise InputError(
                f"{text!r}: give the network's share of the step in percent, above 0 and below 100 (10 or 10%)",
                param="network_share",
            )
        if value / 100.0 in shares:  # one answer each: a value twice would print its table twice
            raise InputError(
                f"{text!r}: value {item.strip()} appears twice; each value once", param="network_share"
            )
        shares.append(value / 100.0)
    return shares


@dataclasses.dataclass(frozen=True)
class Held:
    """One layout on one setting: its columns and its step as the setting gives it and on an ideal network. A
    setting with no layout to hold says why (``why``; its step and ideal NaN). Where the layout was searched and
    the ideal network's best is another (a layout the network forces, full recompute on slow NICs), that one's
    name and ideal step (``ideal_best``, s)."""

    setting: str  # the setting's dims that vary, as options ('' for one setting)
    layout: str  # sweep plan's text of the layout
    cell: dict[str, float]  # OUTER_COLUMNS (SI; 0: the GPU preset's)
    inner: dict[str, float]  # INNER_COLUMNS
    step: float  # s, as given
    ideal: float  # s, on an ideal network
    why: str = ""  # why there is no layout to hold ('' where there is one)
    ideal_layout: str = ""  # the ideal network's best layout where it is another one
    ideal_best: float = math.nan  # s, its step on the ideal network

    @property
    def gpus_per_node(self) -> float:
        """The host's GPUs: as given, else the GPU preset's."""
        return self.cell["gpus_per_node"] or self.cell["preset_gpus_per_node"]

    def now(self, axis: str) -> float:
        """The setting's own value of an answered setting, stored units (the GPU preset's where 0)."""
        if axis == "bandwidth":
            return (self.cell["bandwidth"] or self.cell["nic_bits"]) / 1e9
        if axis == "nics_per_node":
            if self.cell["nics_per_node"]:
                return self.cell["nics_per_node"]
            c = self.cell  # the preset's NICs for a host of the GPUs given, as the kernel's inputs take them
            return float(
                host_system(c["domain"], c["preset_gpus_per_node"], c["nics"], self.gpus_per_node)[1]
            )
        return self.cell["oversubscription"]


def held_layouts(grid: LayoutGrid, say: Callable[[str], None] = lambda _: None) -> list[Held]:
    """Per setting (outer cell, cube order), the layout held: the grid's one layout, or the fastest that can exist
    and fit of its layouts (a search, as ``sweep plan``'s, and one on the ideal network beside it). A setting
    with no layout that can exist and fit says why and the others are answered, as a plan goes on past one; where
    no setting has one, one line naming the setting and the rule is refused (there is no network to ask about)."""
    tables = BlockTables(grid)
    outer = tables.outer(0, grid.outer_size)
    reasons, ideal_best = [""] * grid.outer_size, None
    if grid.inner_size == 1:
        picked = np.zeros(grid.outer_size, np.int64)
    else:
        from netsweep_jax.sweep.analysis.planning import ideal_network, refuse_infeasible

        say(
            f"searching {grid.inner_size:,} layouts x {counted(grid.outer_size, 'setting')} for the held layout"
        )
        best = best_layouts(grid, keep=SEARCH_KEEP)
        reasons = [f"no feasible layout: {why}" if why else "" for why in refuse_infeasible(grid, best)]
        picked = best["layout"][:, 0]
        ideal_best = best_layouts(ideal_network(grid), keep=SEARCH_KEEP)
    cells = [dict(zip(OUTER_COLUMNS, (float(v) for v in outer[o]))) for o in range(grid.outer_size)]
    inners = [
        dict(zip(INNER_COLUMNS, (float(v) for v in tables.inner(int(i), 1)[0][0]))) for i in picked.clip(0)
    ]
    given, ideal = _steps(grid, cells, inners)
    out = []
    for o, (cell, inner) in enumerate(zip(cells, inners)):
        name = layout_name(grid, o, int(picked[o])) if not reasons[o] else ""
        reasons[o] = reasons[o] or _unheld(f"layout {name}", cell, given, o)
        held = Held(
            setting_text(grid, o), name, cell, inner, float(given["iteration_time"][o]), float(ideal[o])
        )
        if reasons[o]:
            held = dataclasses.replace(held, why=reasons[o], step=math.nan, ideal=math.nan)
        # another layout, faster there by a share of the step sweep plan would explain (a review: 0.04% was
        # said to be forced by the network)
        elif (
            ideal_best is not None
            and (held.ideal - ideal_best["iteration_time"][o, 0]) / held.step >= EXPLAINED_SHARE
        ):
            other = layout_name(grid, o, int(ideal_best["layout"][o, 0]))
            held = dataclasses.replace(
                held, ideal_layout=other, ideal_best=float(ideal_best["iteration_time"][o, 0])
            )
        out.append(held)
    if all(reasons):  # nothing to answer: the first setting's reason, refused
        where = setting_text(grid, 0, "{d} {v}", ", ")
        raise InputError(reasons[0] + (f" ({where}, and no other setting has a layout)" if where else ""))
    return out


def _steps(
    grid: LayoutGrid, cells: list[dict], inners: list[dict]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(every output of each setting's layout as the setting gives it, its step on the ideal network [s])."""
    flat = COLLECTIVES_MODES.index("flat")
    columns, inner_columns = _stack(cells), _stack(inners)
    ideal_columns = ideal_settings(columns, si=True)  # priced flat, as planning.ideal_network
    if grid.collectives_code != flat:
        given = evaluate_columns(columns, inner_columns, grid.collectives_code)
        return given, evaluate_columns(ideal_columns, inner_columns, flat)["iteration_time"]
    n = len(cells)  # the step as given and on the ideal network in one call
    both = evaluate_columns(
        {k: np.concatenate([v, w]) for (k, v), w in zip(columns.items(), ideal_columns.values())},
        {k: np.concatenate([v, v]) for k, v in inner_columns.items()},
        flat,
    )
    return {k: v[:n] for k, v in both.items()}, both["iteration_time"][n:]


def _unheld(name: str, cell: dict[str, float], given: dict[str, np.ndarray], o: int) -> str:
    """Why a layout cannot be held on setting ``o`` ('' where it can): the rule it breaks, or the memory it lacks
    (``given``: the layouts' outputs, :func:`_steps`)."""
    status = int(given["status"][o])
    if status != 0:
        # dp is derived from the GPU count, so the count is named (a layout that does not divide it says its dp
        # as the division gives it, dp10.67: dp10 had read as a layout that exists, a hunt).
        on = f" on {cell['gpus']:g} GPUs" if cell["gpus"] > 0 else ""  # 0: derived from --dp
        return f"{name} cannot exist{on}: {STATUS[status]}"
    if given["fits"][o] <= 0:
        lacks = -given["memory_free_gb"][o]
        return f"{name} does not fit in memory: it lacks {lacks:.1f} GB of usable memory a GPU"
    return ""


def _stack(rows: Sequence[dict[str, float]]) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in rows], np.float64) for k in rows[0]}


@dataclasses.dataclass(frozen=True)
class Answer:
    """An answered setting for one held layout and share: the value (stored units; NaN where unreachable) and
    its status (:data:`~kernels.bisect.SOLVED`, ``AT_LIMIT``: met at the range's weakest end, ``UNREACHABLE``),
    whether the setting changes this layout's step at all (a spine no group crosses does not), and the network's
    share at the range's strongest end (1: 100%; what no value of this setting goes below, NaN if not known)."""

    value: float
    status: int
    matters: bool = True
    floor: float = float("nan")


def answer(
    held: Sequence[Held],
    shares: Sequence[float],
    collectives: int,
    spine: bool,
    tolerance: float = TOLERANCE,
) -> list[dict[str, Answer]]:
    """Per (held layout, share), in that order (layouts outer), the answer for each of :data:`ANSWERED`.
    ``collectives``: the grid's pricing (0 flat, 1 nccl); ``spine``: whether the fabric has a tier above the
    leaf (a ``--fabric`` preset's hosts a leaf with NCCL's pricing): the oversubscription is answered there only
    (elsewhere nothing reads it; no answer). Every setting's search shares each round's call of the kernel."""
    problems = [(h, s) for h in held for s in shares]
    cells = _stack([h.cell for h, _ in problems])
    inners = _stack([h.inner for h, _ in problems])
    ideal = np.array([h.ideal for h, _ in problems])
    target = np.array([s for _, s in problems])

    def share_of(asks: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        """Per ask (axis, problems ``which`` [P'], candidates ``x`` [P', M] of the axis), the network's share of
        each problem's step at each candidate [P', M]: all of them in one call of the rows kernel."""
        cell: dict[str, list[np.ndarray]] = {k: [] for k in cells}
        inner: dict[str, list[np.ndarray]] = {k: [] for k in inners}
        for axis, which, x in asks:
            m = x.shape[1]
            for k, v in cells.items():
                # The kernel's columns are SI (bit/s): the NIC rate's stored Gbit/s times 1e9.
                cell[k].append(
                    x.ravel() * (1e9 if axis == "bandwidth" else 1.0) if k == axis else np.repeat(v[which], m)
                )
            for k, v in inners.items():
                inner[k].append(np.repeat(v[which], m))
        step = evaluate_columns(
            {k: np.concatenate(v) for k, v in cell.items()},
            {k: np.concatenate(v) for k, v in inner.items()},
            collectives,
            outputs=("iteration_time",),
        )["iteration_time"]
        out, start = [], 0
        for _, which, x in asks:
            out.append(1.0 - ideal[which, None] / step[start : start + x.size].reshape(x.shape))
            start += x.size
        return out

    axes = [a for a in ANSWERED if a != "oversubscription" or spine]
    sections = [
        Section(
            a, target, *search_range(a), growing=FALLING[a], whole=a == "nics_per_node", tolerance=tolerance
        )
        for a in axes
    ]
    run_sections(sections, share_of)
    out: list[dict[str, Answer]] = [{} for _ in problems]
    for section in sections:
        for k, a in enumerate(section.answers()):
            out[k][section.axis] = a
    return out


class Section:
    """One answered setting's search over P problems (``target`` [P]: each a share s): where ``share(x) <= s``
    starts (``growing``: the smallest such x) or stops (the largest), x in [low, high], by K-section in log x
    (the module docstring), or over every whole number there at once (``whole``)."""

    def __init__(
        self,
        axis: str,
        target: np.ndarray,
        low: float,
        high: float,
        *,
        growing: bool,
        whole: bool = False,
        tolerance: float = TOLERANCE,
    ):
        self.axis, self.target, self.low, self.high = axis, target, low, high
        self.growing, self.whole, self.tolerance = growing, whole, tolerance
        p = target.size
        self.lo, self.hi = np.full(p, low), np.full(p, high)
        self.status = np.full(p, SOLVED)
        self.matters = np.ones(p, bool)
        self.floor = np.full(p, np.nan)
        self.active = np.ones(p, bool)
        self.first = True

    def open(self) -> np.ndarray:
        """The problems still searched."""
        return np.flatnonzero(self.active)

    def candidates(self, points: int) -> tuple[np.ndarray, np.ndarray]:
        """(problems [P'], candidates [P', M]): ``points`` spaced evenly in log x across each open bracket, its
        ends exactly (one met the target, computed); or every whole number of the range."""
        which = self.open()
        if self.whole:
            x = np.arange(self.low, self.high + 1.0)
            return which, np.repeat(x[None, :], which.size, axis=0)
        steps = np.linspace(0.0, 1.0, points)
        lo, hi = self.lo[which], self.hi[which]
        x = lo[:, None] * (hi / lo)[:, None] ** steps[None, :]
        x[:, 0], x[:, -1] = lo, hi
        return which, x

    def take(self, which: np.ndarray, x: np.ndarray, share: np.ndarray) -> None:
        """Narrow the brackets of problems ``which`` by the shares [P', M] at their candidates ``x``."""
        meets = share <= self.target[which, None]
        if self.first:  # the range's ends: met at the weakest already, or nowhere
            self.first = False
            weakest, strongest = (meets[:, 0], meets[:, -1]) if self.growing else (meets[:, -1], meets[:, 0])
            self.status[which[weakest]] = AT_LIMIT
            self.status[which[~weakest & ~strongest]] = UNREACHABLE
            self.matters[which] = share[:, 0] != share[:, -1]
            self.floor[which] = share[:, -1] if self.growing else share[:, 0]
            self.active[which[weakest | ~strongest]] = False
            keep = ~weakest & strongest
            which, x, meets = which[keep], x[keep], meets[keep]
        rows = np.arange(which.size)
        if self.growing:  # the first candidate that meets, and the one before it (which does not)
            j = np.clip(np.argmax(meets, axis=1), 1, x.shape[1] - 1)
            self.lo[which], self.hi[which] = x[rows, j - 1], x[rows, j]
        else:  # the last that meets, and the one after it
            j = np.clip(x.shape[1] - 1 - np.argmax(meets[:, ::-1], axis=1), 0, x.shape[1] - 2)
            self.lo[which], self.hi[which] = x[rows, j], x[rows, j + 1]
        wide = self.hi[which] / self.lo[which] > 1.0 + self.tolerance
        self.active[which] = wide & (not self.whole)  # whole numbers: every one was tried

    def answers(self) -> list[Answer]:
        """Per problem, the bracket's end that met the target (the range's weakest end where that did already;
        NaN where no x of the range does)."""
        value = np.where(self.status == UNREACHABLE, np.nan, self.hi if self.growing else self.lo)
        value = np.where(self.status == AT_LIMIT, self.low if self.growing else self.high, value)
        return [
            Answer(float(v), int(s), bool(m), float(f))
            for v, s, m, f in zip(value, self.status, self.matters, self.floor)
        ]


Ask = tuple[str, np.ndarray, np.ndarray]


def run_sections(
    sections: Sequence[Section], share_of: Callable[[Sequence[Ask]], list[np.ndarray]], max_rounds: int = 64
) -> None:
    """Every section searched to the end, all of their open problems' candidates in one ``share_of`` call a
    round (asks: (axis, problems [P'], candidates [P', M]) -> shares [P', M] each), M as many as fill
    :data:`~sweep.engine.layout_rows.ROWS_BLOCK` (at least :data:`MIN_POINTS`)."""
    for _ in range(max_rounds):
        live = [s for s in sections if s.open().size]
        if not live:
            return
        fixed = sum(s.open().size * int(s.high - s.low + 1) for s in live if s.whole)
        spaced = sum(s.open().size for s in live if not s.whole)
        points = max(MIN_POINTS, (ROWS_BLOCK - fixed) // max(spaced, 1))
        asks = [(s, *s.candidates(points)) for s in live]
        shares = share_of([(s.axis, which, x) for s, which, x in asks])
        for (s, which, x), share in zip(asks, shares):
            s.take(which, x, share)


def k_section(
    share_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    low: float,
    high: float,
    target: np.ndarray,
    *,
    growing: bool,
    whole: bool = False,
    tolerance: float = TOLERANCE,
) -> list[Answer]:
    """One :class:`Section` searched alone: ``share_of(which, x)`` gives the shares [P', M] of problems ``which``
    [P'] at candidates ``x`` [P', M], monotone in x (falling where ``growing``)."""
    section = Section("x", target, low, high, growing=growing, whole=whole, tolerance=tolerance)
    run_sections([section], lambda asks: [share_of(which, x) for _, which, x in asks])
    return section.answers()


UNITS = {"bandwidth": " Gbit/s", "nics_per_node": "", "oversubscription": ":1"}
HEADS = {"bandwidth": "NIC rate", "nics_per_node": "NICs per node", "oversubscription": "spine"}


def percent(share: float) -> str:
    """A share of the step in percent, rounded up to 3 significant digits, or to as many more as keep a share below
    100% below it (99.94% had read 100%, the whole step, a hunt)."""
    # in decimal: 0.07 is 7%, where 100 x 0.07 in binary rounded up to 7.01
    value = float(Decimal(repr(float(share))) * 100)
    for digits in range(3, 9):
        text = rounded(value, up=True, digits=digits)
        if value >= 100 or float(text) < 100:
            return text
    return rounded(value, up=False, digits=8)  # closer to 100% than 8 digits say: rounded down, never 100


def answer_text(a: Answer | None, axis: str) -> str:
    """One cell of the table: the answer rounded in the safe direction (up for the NIC rate, down for the
    oversubscription: :func:`sweep.analysis.need.shown_value`), or what stands in its place."""
    if a is None:
        return "no spine"
    low, high = search_range(axis)
    unit = UNITS[axis]
    growing = FALLING[axis]
    if a.status == UNREACHABLE:
        if (
            not a.matters
        ):  # nothing of the layout uses it: the share is NVLink's and NCCL's, not this setting's
            return "unreachable (does not change this step)"
        end = f"> {high:g}{unit}" if growing else f"even at {low:g}{unit}"
        # How far off (NCCL's own latencies and NVLink stay where no NIC reaches them), rounded up, never to
        # nearest: 8.04% shown as 8.0% read as meeting 8.03% (a review).
        if np.isfinite(a.floor):
            return f"unreachable ({end}: still {percent(a.floor)}% there)"
        return f"unreachable ({end})"
    if a.status == AT_LIMIT:
        if not a.matters:  # the step is the same at both ends of the range (at this fabric's other settings)
            return f"any (the same step from {low:g}{unit} to {high:g}{unit})"
        return f"any (met at {low:g}{unit})" if growing else f"any (met at {high:g}{unit})"
    if axis == "nics_per_node":
        return f"{a.value:g}"
    return f"{rounded(a.value, up=growing)}{unit}"  # up for a growing axis (a bound required), down for a falling one


def table(held: Sequence[Held], shares: Sequence[float], answers: Sequence[dict[str, Answer]]) -> str:
    """The answers as text: per share, one row per setting with its layout, its step, the network's share of it
    now, and the three answers (each holding the other settings at the setting's)."""
    import pandas as pd

    blocks = []
    for s_index, share in enumerate(shares):
        rows = []
        for h_index, h in enumerate(held):
            a = answers[h_index * len(shares) + s_index]
            row = {"setting": h.setting} if any(x.setting for x in held) else {}
            if h.why:  # said below the tables
                rows.append({**row, "layout": "none (below)"})
                continue
            row.update(
                {
                    "layout": h.layout,
                    "step s": f"{h.step:.4g}",
                    "ideal s": f"{h.ideal:.4g}",
                    # rounded as an unreachable answer's "still ...% there" is (a hunt: 18.3% now, still 18.4% at
                    # the same spine)
                    "network now": f"{percent(1.0 - h.ideal / h.step)}%",
                    # No spine answer where there is none (rail-only, or no preset's leaf): said so, not 1:1.
                    "fabric now": f"{_now(h, 'nics_per_node')} x {_now(h, 'bandwidth')}, "
                    + (f"spine {_now(h, 'oversubscription')}" if a.get("oversubscription") else "no spine"),
                }
            )
            for axis in ANSWERED:
                row[HEADS[axis]] = answer_text(a.get(axis), axis)
            rows.append(row)
        frame = pd.DataFrame(rows).fillna("")
        head = (
            f"the network at most {share * 100:.10g}% of the step (1 - ideal / step; ideal: the layout on an ideal "
            "network), each setting moved alone:"
        )
        # a setting with no layout leaves blank cells: no trailing spaces
        blocks.append(
            "\n".join([head, *(line.rstrip() for line in frame.to_string(index=False).splitlines())])
        )
    return "\n\n".join(blocks) + "".join(f"\n{line}" for line in notes(held))


def notes(held: Sequence[Held]) -> list[str]:
    """Lines below the tables: each setting with no layout to hold, why; each whose held layout is not the ideal
    network's best, what that best is and what the network costs against it (``sweep plan``'s network cost: the
    answers above hold this layout, which the network may have forced, and it can wait little on the NICs while
    the network costs the plan much, a hunt)."""
    lines = []
    for h in held:
        at = f"{h.setting}: " if h.setting else ""
        if h.why:
            lines.append(f"{at}{h.why}")
        elif h.ideal_layout:
            cost = percent(1.0 - h.ideal_best / h.step)
            lines.append(
                f"{at}sweep plan counts {cost}% of the step as the network's: on an ideal network the best is "
                f"{h.ideal_layout} ({h.ideal_best:.4g} s)\n  the answers hold this layout, which the network forces; give "
                "that one's layout options for the fabric it needs"
            )
    return lines


def _now(h: Held, axis: str) -> str:
    return f"{h.now(axis):g}{UNITS[axis]}"


def phrases(grid: LayoutGrid, searched: bool) -> tuple[str, ...]:
    """What the answer assumed besides the grid's own phrases: which layout is held, and where no spine is."""
    said = (
        "the layout: sweep plan's best at each setting as given (the fastest that can exist and fit of those "
        "searched, the layout options given held), held while each fabric setting moves"
        if searched and grid.inner_size > 1
        else f"the layout: the fastest that can exist and fit of the {grid.inner_size:,} given (a list is searched, "
        "what is not given at sweep grid's defaults), held while each fabric setting moves"
        if grid.inner_size > 1
        else "the layout as given (what is not given at sweep grid's defaults), held while each fabric setting moves"
    )
    spine = has_spine(grid)
    return (
        (said,)
        if spine
        else (
            said,
            "no spine: the fabric is wired rail-only"
            if grid.rail_only
            else "no spine: oversubscription needs a --fabric preset (which implies --collective nccl)",
        )
    )


def has_spine(grid: LayoutGrid) -> bool:
    """Whether the grid's fabric has a tier above the leaf that NCCL's pricing places groups on."""
    return grid.collectives == "nccl" and grid.leaf_hosts > 0 and not grid.rail_only


def need_of_layouts(
    grid: LayoutGrid, shares: Sequence[float], say: Callable[[str], None] = lambda _: None
) -> tuple[list[Held], list[dict[str, Answer]]]:
    """:func:`held_layouts` of ``grid`` and :func:`answer` for ``shares`` (fractions in (0, 1))."""
    held = held_layouts(grid, say)
    # each setting with a layout answered ({} for one without: its table row says why)
    answers = iter(answer([h for h in held if not h.why], shares, grid.collectives_code, has_spine(grid)))
    return held, [{} if h.why else next(answers) for h in held for _ in shares]


__all__ = [
    "ANSWERED",
    "Answer",
    "Held",
    "answer",
    "held_layouts",
    "k_section",
    "need_of_layouts",
    "parse_shares",
    "table",
]
