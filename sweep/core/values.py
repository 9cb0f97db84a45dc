"""Axis values on the host: the value syntax, coercion and unit conversion.

The axes themselves (names, units, bounds) are defined in :mod:`sweep.core.schema`.
Value syntax (``parse_values``): a list ``10,25,100``; an inclusive range
``1..100`` (step 1); ``1..100:5`` (step 5); ``1..1000@20`` (20 evenly spaced
points); ``1..1000@20log`` (20 log-spaced points); items may be mixed
(``1,2,5..10``).
"""

import difflib
import math
import numbers
import re
from collections.abc import Sequence
from typing import Any, SupportsFloat

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.axes import MAX_AXIS_VALUES, NUMERIC_AXES, AxisSpec, show
from netsweep_jax.sweep.core.errors import InputError

_RANGE = re.compile(r"^(?P<a>.+?)\.\.(?P<b>[^@:]+)(?::(?P<step>.+)|@(?P<n>[0-9]+)(?P<log>log)?)?$")
# The one notation of a number, wherever a user writes one (options, the API's strings, runs, measurement
# and launch files): ASCII digits, an optional sign, point and exponent. Python's float() also takes other
# scripts' digits (a Devanagari or full-width 400), '1_000', 'inf' and 'nan'; none of them is written here.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NOTATION = "digits 0-9 with an optional sign, point and exponent, as 400, 0.5 or 1e-3"


def decimal(text: object) -> float:
    """``text`` (spaces around it aside) as a float when it is plain ASCII decimal notation (:data:`NOTATION`);
    else ``ValueError``. The one rule for a number a user writes: every parser of numbers calls it."""
    stripped = str(text).strip()
    if not _DECIMAL.fullmatch(stripped):
        raise ValueError(f"{stripped!r} is not a number ({NOTATION})")
    return float(stripped)


def _num(text: str, spec: AxisSpec, item: str) -> float:
    try:
        return decimal(text)
    except ValueError:
        unit = f" in {spec.units}" if spec.units not in ("", "1") else ""
        raise InputError(
            f"{item!r}: {text!r} is not a number ({spec.rule()}{unit}; write the number alone: {NOTATION})",
            param=spec.name,
        ) from None


def all_whole(values: npt.ArrayLike) -> bool:
    """Whether numbers are all whole: integers, or floats without a fraction (NaN is not one), as a layout
    cube's counts (tp 8, stored as 8.0) are."""
    a = np.asarray(values)
    return a.dtype.kind in "iub" or (a.dtype.kind == "f" and bool(np.all(np.mod(a, 1) == 0)))


def digits12(value: SupportsFloat) -> str:
    """A number to the 12 significant digits the tool says values in: generated points are rounded to them
    (0.1..1:0.1 gives 0.3), a fitted constant is said to them and a typed one matched to them."""
    return f"{float(value):.12g}"


def _generated(value: SupportsFloat) -> float:
    """A point a range generated, to 12 significant digits, so that 0.1..1:0.1 yields 0.3, not
    0.30000000000000004, and .sel(utilization=0.3) finds it; a value typed is kept as typed (the Python API's
    np.geomspace(25, 400, 4) was rounded, and .sel of its own values found none)."""
    return float(digits12(value))


def parse_values(text: object, spec: AxisSpec) -> npt.NDArray[np.float64]:
    """Parse ``text`` in the value syntax for axis ``spec``; return float64 [n].

    Raises :class:`InputError` naming the option, the value and the rule.
    """
    text = str(text).strip()
    if not text:
        raise InputError("'': give at least one value", param=spec.name)
    # '1,,2' was said as "'': '' is not a number", the list not shown (a hunt)
    refuse_empty_item(text.split(","), text, spec.name)
    values: list[float] = []
    for item in (s.strip() for s in text.split(",")):
        for v in _item_values(item, spec):
            # named as typed (1e400 was said as inf, a hunt), a range's point with its range
            spec.check(v, item if ".." not in item else f"{show(v)} (of {item})")
            values.append(v)
    out = np.array(values, dtype=np.float64)
    if len(np.unique(out)) != len(out):
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise InputError(f"{text!r}: value {show(dup)} appears twice; each value once", param=spec.name)
    return out


def _item_values(item: str, spec: AxisSpec) -> list[float]:
    """The values of one comma item of the value syntax: a number, or a range (A..B, A..B:STEP, A..B@N,
    A..B@Nlog), not yet checked against the axis's rule."""
    if ".." not in item:
        return [_num(item, spec, item)]
    m = _RANGE.match(item)
    if "..." in item or not m:
        raise InputError(f"{item!r}: ranges are A..B, A..B:STEP, A..B@N or A..B@Nlog", param=spec.name)
    a, b = _num(m["a"], spec, item), _num(m["b"], spec, item)
    for end, value in ((m["a"], a), (m["b"], b)):  # 1e400 is inf: no range to draw points from (a review)
        if not math.isfinite(value):
            spec.check(value, f"{end} (of {item})")
    if b < a:
        raise InputError(f"{item!r}: range is reversed (start {show(a)} > end {show(b)})", param=spec.name)
    if m["n"] is not None:
        n = int(m["n"])
        if n > MAX_AXIS_VALUES:
            raise InputError(
                f"{item!r}: {n:,} points; an axis takes at most {MAX_AXIS_VALUES:,} values", param=spec.name
            )
        if n < 1 or (n == 1 and a != b):
            raise InputError(f"{item!r}: @N needs N >= 2 points (N = 1 only for A..A)", param=spec.name)
        if m["log"]:
            if a <= 0:
                raise InputError(f"{item!r}: a log range needs start > 0", param=spec.name)
            return list(map(_generated, np.geomspace(a, b, n)))
        return list(map(_generated, np.linspace(a, b, n)))
    step = _num(m["step"], spec, item) if m["step"] is not None else 1.0
    if not (step > 0 and math.isfinite(step)):
        raise InputError(f"{item!r}: step {show(step)} is empty; it must be > 0", param=spec.name)
    if (b - a) / step + 1 > MAX_AXIS_VALUES:
        raise InputError(
            f"{item!r}: {(b - a) / step + 1:.3g} values; an axis takes at most {MAX_AXIS_VALUES:,} values",
            param=spec.name,
        )
    count = int(math.floor((b - a) / step + 1e-9)) + 1
    return list(map(_generated, a + step * np.arange(count)))


def one_name(text: str | None, param: str, names: tuple[str, ...]) -> str:
    """One of ``names`` for a one-value-per-sweep option ``param`` (None: the first, its default)."""
    if text is None:
        return names[0]
    given = parse_names(str(text).lower(), param, names)
    if len(given) != 1:
        raise InputError(f"{text}: give one value ({', '.join(names)})", param=param)
    return given[0]


def close_match(name: str, known: Sequence[str]) -> str:
    """``"; did you mean X?"`` where one of ``known`` is close to ``name`` (a typo: ``lama3-70b``), else ""."""
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1, cutoff=0.8)
    spelled = {k.lower(): k for k in known}
    return f"; did you mean {spelled[close[0]]}?" if close else ""


def refuse_empty_item(items: Sequence[object], given: object, param: str) -> None:
    """Refuse a comma list or sequence ``given`` (split into ``items``) with an empty item, naming its position:
    a doubled or trailing comma is a typo, never a value to skip."""
    empty = next((i for i, s in enumerate(items, 1) if isinstance(s, str) and not s.strip()), None)
    if empty is not None:
        shown = repr(given) if isinstance(given, str) else repr(list(items))
        raise InputError(f"{shown}: item {empty} is empty (a doubled or trailing comma?)", param=param)


def parse_names(text: str | Sequence[object], param: str, known: Sequence[str]) -> list[str]:
    """Names for parameter ``param`` (a comma list or a sequence), each in ``known``."""
    if not isinstance(text, str) and not (
        isinstance(text, Sequence) and all(isinstance(t, str) for t in text)
    ):
        raise InputError(
            f"{text!r}: expected a name, a comma list or a list of names ({', '.join(known)})", param=param
        )
    items = str(text).split(",") if isinstance(text, str) else [str(t) for t in text]
    names = [s.strip() for s in items if s.strip()]
    if not names:
        raise InputError(f"'': give at least one name ({', '.join(known)})", param=param)
    refuse_empty_item(items, text, param)  # 'ring,,tree' had run ring and tree, in silence (a hunt)
    spelled = {k.lower(): k for k in known}  # case-insensitive: H100 is h100, ResNet50 is resnet50
    # a name as written where it is known (groups G0 and g0 both: a review), else in its known case, which two
    # known names differing in case alone leave unsaid: refused
    for n in names:
        alike = [k for k in known if k.lower() == n.lower()]
        if n not in known and len(alike) > 1:
            raise InputError(
                f"{n!r}: {' and '.join(alike)} differ in case alone; give one as written", param=param
            )
    names = [n if n in known else spelled.get(n.lower(), n) for n in names]
    for n in names:
        if n not in known:
            raise InputError(f"{n!r}: unknown; known: {', '.join(known)}{close_match(n, known)}", param=param)
    if len(set(names)) != len(names):
        raise InputError(f"{', '.join(names)!r}: each name once", param=param)
    return names


def real_scalar(value: object) -> float | None:
    """``value`` as a float where it is one real number, Python's or NumPy's (a 0-d array too), never a bool;
    else None."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past a float's range (JSON allows any digits): beyond every bound
        return math.inf if int(value) > 0 else -math.inf  # type: ignore[arg-type]  # an int here


def flat_values(
    value: object, param: str, rule: str, text: str = "value syntax such as 1..100@10"
) -> list[float]:
    """An API keyword's value that is not value syntax, as floats [n]: a number (Python's or NumPy's, a 0-d
    array too), or a flat sequence or 1-D array of them (a string item by :func:`decimal`'s rule). Refused,
    naming ``param`` and ``rule`` (the axis's, for the message): a bool, a nested sequence or an array of
    more than one dimension (one value per point of the axis, never flattened), and an empty one. ``text``: what
    a string may hold, as the message says it (a setting that takes no range says so)."""
    kind = f"give a number, a sequence of numbers or {text} ({rule})"

    def one(item: object) -> float:
        if isinstance(item, np.ndarray) and item.ndim == 0:
            item = item[()]  # its NumPy scalar, whose type as_typed reads
        if isinstance(item, (bool, np.bool_)):
            raise InputError(f"{bool(item)!r}: {kind}", param=param)
        if isinstance(item, np.floating):
            return as_typed(item)
        if isinstance(item, (numbers.Real, np.integer)):
            return float(item)
        if isinstance(item, str):
            try:
                return decimal(item)
            except ValueError as e:
                raise InputError(f"{item!r}: {e}", param=param) from None
        if isinstance(item, (Sequence, np.ndarray)):
            raise InputError(f"{_shown(value)}: expected a flat sequence of numbers, not nested", param=param)
        raise InputError(f"{item!r}: {kind}", param=param)

    if not isinstance(value, (np.ndarray, str, bytes)) and hasattr(value, "__array__"):
        value = np.asarray(value)  # an array by another name (pandas, xarray, JAX): as NumPy's
    if isinstance(value, np.ndarray) and value.ndim > 1:
        raise InputError(f"{_shown(value)}: expected a flat sequence of numbers, not nested", param=param)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iuf" and value.size:
        if value.dtype.kind == "f" and value.dtype.itemsize < 8:
            return [as_typed(v) for v in value]
        return value.astype(np.float64).tolist()  # numbers already: no item to check
    if isinstance(value, (Sequence, np.ndarray)) and not (isinstance(value, np.ndarray) and value.ndim == 0):
        if isinstance(value, (str, bytes)):
            raise InputError(f"{value!r}: {kind}", param=param)
        items = [one(item) for item in value]
        if not items:
            raise InputError(f"{_shown(value)}: give at least one value", param=param)
        return items
    return [one(value)]


def as_typed(value: np.floating) -> float:
    """A NumPy float as the number it was typed as: a float32's 0.1 is 0.1, not the 0.10000000149 its bits widen
    to, so that a cube's coordinate is the value given (``.sel(bandwidth=0.1)`` found none, a hunt). Its shortest
    decimal that rounds back to it, read as a float64; a float64 as it is."""
    return float(value) if value.dtype.itemsize >= 8 else float(str(value))


def _shown(value: object) -> str:
    return repr(value.tolist()) if isinstance(value, np.ndarray) else repr(value)


def coerce_axis(name: str, value: Any) -> npt.NDArray[np.float64]:
    """Python API values (number, sequence, or syntax string) -> float64 [n]."""
    spec = NUMERIC_AXES[name]
    if isinstance(value, str):
        return parse_values(value, spec)
    out = np.array(flat_values(value, name, spec.rule()), dtype=np.float64)
    for v in out:
        spec.check(v)
    if len(np.unique(out)) != len(out):
        raise InputError(f"{out.tolist()}: each value once", param=name)
    return out


def si_values(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Stored values of axis ``name`` in kernel units (bit/s, s, bytes, 1)."""
    return np.asarray(values, dtype=np.float64) * NUMERIC_AXES[name].to_si


def whole_number(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII digits only (``str.isdigit`` also takes ``²`` and other
    scripts' digits), else None."""
    return int(text) if text.isascii() and text.isdigit() else None


def number(text: str, where_: str) -> float:
    """``text`` as a float by :func:`decimal`'s rule, or one :class:`InputError`
    ``"<where_> '<text>' is not a number (<the notation>)"``."""
    try:
        return decimal(text)
    except ValueError:
        raise InputError(f"{where_} {text!r} is not a number ({NOTATION})") from None


def json_ready(value: Any) -> Any:
    """``value`` with every NaN or infinite float as None (JSON's null: JSON has no NaN) and numpy scalars as
    Python numbers, through mappings, lists and tuples."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def utilization_from_busbw(
    text: str, bandwidth: object, default_link: tuple[float, str] | None = None, nics: object = None
) -> tuple[str, str]:
    """The utilizations measured bus bandwidths imply: (``--util`` values, a line saying how).

    ``text``: ``X[@LINK][,X[@LINK]...]``: nccl-tests' ``busbw`` (GB/s) of the job's collective across nodes,
    per GPU and so per link (a GPU's share of the node's NICs: the model's link, ``--bw``), measured over
    links of LINK Gbit/s (without LINK: the one ``bandwidth`` value; where the user gave no ``--bw``,
    ``default_link`` = (rate, whose it is), as a GPU's usual system's NICs). nccl-tests normalizes busbw so
    it compares with a link's rate (all-reduce: busbw = algbw x 2(n-1)/n), so utilization = 8 X / LINK.
    ``nics``: the ``--nics-per-node`` value, for the hint when a node's figure (all its NICs) is given.
    """
    items = [item.strip() for item in str(text).split(",")]
    if not str(text).strip() or not all(items):
        raise InputError(f"--busbw {text!r}: give GB/s[@Gbit/s] values, comma-separated")
    pairs = [_utilization_from_one_busbw(item, bandwidth, default_link, nics) for item in items]
    seen: dict[float, str] = {}
    for item, (u, _) in zip(items, pairs):  # said of the values given, not of the --util they become
        if u in seen:
            raise InputError(f"--busbw {text}: {seen[u]} and {item} are both utilization {u:g}; give one")
        seen[u] = item
    return ",".join(repr(u) for u, _ in pairs), "; ".join(how for _, how in pairs)


def _utilization_from_one_busbw(
    text: str, bandwidth: object, default_link: tuple[float, str] | None, nics: object
) -> tuple[float, str]:
    spec = NUMERIC_AXES["utilization"]
    measured, at, link_text = text.partition("@")
    busbw = number(measured, "--busbw")
    if not (math.isfinite(busbw) and busbw > 0):
        raise InputError(f"--busbw {text}: the bus bandwidth must be a positive number of GB/s")
    whose = ""
    if at:
        link = number(link_text, "--busbw link")
    elif bandwidth is None and default_link is not None:
        link, whose = default_link[0], f" ({default_link[1]}, as --bw is not given)"
    else:
        links = parse_values(bandwidth, NUMERIC_AXES["bandwidth"]) if bandwidth is not None else np.zeros(0)
        if links.size != 1:
            raise InputError(
                f"--busbw {text}: say the link rate it was measured on, as {measured}@400 (Gbit/s), or give "
                f"one --bw"
            )
        link = float(links[0])
    links_spec = NUMERIC_AXES["bandwidth"]
    if not links_spec.low <= link <= links_spec.high:
        raise InputError(f"--busbw {text}: the link rate {link:g} {links_spec.rule()} Gbit/s")
    utilization = 8.0 * busbw / link
    if utilization > spec.high:
        # The likely mistakes: a node's figure (nccl-tests on a node: every NIC's traffic), or Gbit/s.
        # Which of them this is cannot be told from the figure: each is offered as an if, the node's only where its
        # share of a link fits in one (offered unconditionally, it divided a figure already divided once again).
        per = parse_values(nics, NUMERIC_AXES["nics_per_node"]) if nics is not None else np.zeros(0)
        shares = per.size == 1 and per[0] > 1
        if not shares:
            node = "divide a node's figure by the NICs it used (--nics-per-node); "
        elif busbw / per[0] <= link / 8:
            node = f"if it is a node's figure over its {int(per[0])} NICs, a link's is {busbw / per[0]:.4g} GB/s; "
        else:
            node = ""
        bits = f"if {busbw:g} is Gbit/s, give {busbw / 8:.4g} (GB/s); " if busbw <= link else ""
        raise InputError(
            f"--busbw {text}: {busbw:g} GB/s is more than one {link:g} Gbit/s link carries ({link / 8:g} GB/s), "
            f"which is a utilization of {utilization:.4g}; {spec.rule().removeprefix('must be ')} is needed. busbw is "
            f"per link (one NIC, as --bw is): {node}{bits}an all-reduce across hosts under NCCL's tree, NVLS or "
            "SHARP reads more than its NICs carry (its busbw counts what stays inside each host): fit its logs "
            "with sweep calibrate --nccl-tests and give --collective nccl --fabric FILE"
        )
    if not spec.low <= utilization:
        raise InputError(
            f"--busbw {text}: {8 * busbw:g} Gbit/s over {link:g} Gbit/s links is a utilization of "
            f"{utilization:.4g}; {spec.rule().removeprefix('must be ')} is needed (busbw is in GB/s: bytes)"
        )
    return (
        utilization,
        f"utilization {utilization:.4g} = 8 x busbw {busbw:g} GB/s / {link:g} Gbit/s links{whose}",
    )
