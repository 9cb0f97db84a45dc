"""Axis values on the host: the value syntax, coercion and unit conversion.

The axes themselves (names, units, bounds) are defined in :mod:`sweep.core.schema`.
Value syntax (``parse_values``): a list ``10,25,100``; an inclusive range
``1..100`` (step 1); ``1..100:5`` (step 5); ``1..1000@20`` (20 evenly spaced
points); ``1..1000@20log`` (20 log-spaced points); items may be mixed
(``1,2,5..10``).
"""

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.axes import MAX_AXIS_VALUES, NUMERIC_AXES, AxisSpec, show
from netsweep_jax.sweep.core.errors import InputError

_RANGE = re.compile(r"^(?P<a>.+?)\.\.(?P<b>[^@:]+)(?::(?P<step>.+)|@(?P<n>\d+)(?P<log>log)?)?$")


def _num(text: str, spec: AxisSpec, item: str) -> float:
    try:
        return float(text)
    except ValueError:
        unit = f" in {spec.units}" if spec.units not in ("", "1") else ""
        raise InputError(
            f"{item!r}: {text!r} is not a number ({spec.rule()}{unit}; write the number alone)",
            param=spec.name,
        ) from None


def parse_values(text: object, spec: AxisSpec) -> npt.NDArray[np.float64]:
    """Parse ``text`` in the value syntax for axis ``spec``; return float64 [n].

    Raises :class:`InputError` naming the option, the value and the rule.
    """
    text = str(text).strip()
    if not text:
        raise InputError("'': give at least one value", param=spec.name)
    values = []
    for item in (s.strip() for s in text.split(",")):
        if ".." not in item:
            values.append(_num(item, spec, item))
            continue
        m = _RANGE.match(item)
        if "..." in item or not m:
            raise InputError(f"{item!r}: ranges are A..B, A..B:STEP, A..B@N or A..B@Nlog", param=spec.name)
        a, b = _num(m["a"], spec, item), _num(m["b"], spec, item)
        if b < a:
            raise InputError(
                f"{item!r}: range is reversed (start {show(a)} > end {show(b)})", param=spec.name
            )
        if m["n"] is not None:
            n = int(m["n"])
            if n > MAX_AXIS_VALUES:
                raise InputError(
                    f"{item!r}: {n:,} points; an axis takes at most {MAX_AXIS_VALUES:,} values",
                    param=spec.name,
                )
            if n < 1 or (n == 1 and a != b):
                raise InputError(f"{item!r}: @N needs N >= 2 points (N = 1 only for A..A)", param=spec.name)
            if m["log"]:
                if a <= 0:
                    raise InputError(f"{item!r}: a log range needs start > 0", param=spec.name)
                values.extend(np.geomspace(a, b, n))
            else:
                values.extend(np.linspace(a, b, n))
        else:
            step = _num(m["step"], spec, item) if m["step"] is not None else 1.0
            if not (step > 0 and math.isfinite(step)):
                raise InputError(f"{item!r}: step {show(step)} is empty; it must be > 0", param=spec.name)
            if (b - a) / step + 1 > MAX_AXIS_VALUES:
                raise InputError(
                    f"{item!r}: {(b - a) / step + 1:.3g} values; an axis takes at most "
                    f"{MAX_AXIS_VALUES:,} values",
                    param=spec.name,
                )
            count = int(math.floor((b - a) / step + 1e-9)) + 1
            values.extend(a + step * np.arange(count))
    # Round generated points to 12 significant digits so 0.1..1:0.1 yields 0.3, not
    # 0.30000000000000004, and .sel(utilization=0.3) finds it.
    out = np.array([float(f"{v:.12g}") for v in values], dtype=np.float64)
    for v in out:
        spec.check(v)
    if len(np.unique(out)) != len(out):
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise InputError(f"{text!r}: value {show(dup)} appears twice; each value once", param=spec.name)
    return out


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
    spelled = {k.lower(): k for k in known}  # case-insensitive: H100 is h100, ResNet50 is resnet50
    names = [spelled.get(n.lower(), n) for n in names]
    for n in names:
        if n not in known:
            raise InputError(f"{n!r}: unknown; known: {', '.join(known)}", param=param)
    if len(set(names)) != len(names):
        raise InputError(f"{', '.join(names)!r}: each name once", param=param)
    return names


def coerce_axis(name: str, value: Any) -> npt.NDArray[np.float64]:
    """Python API values (number, sequence, or syntax string) -> float64 [n]."""
    spec = NUMERIC_AXES[name]
    if isinstance(value, str):
        return parse_values(value, spec)
    try:
        if isinstance(value, (bool, np.bool_)) or (
            isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value)
        ):
            raise TypeError(value)
        out = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise InputError(
            f"{value!r}: expected a number, a sequence of numbers or value syntax such as "
            f"1..100@10 ({spec.rule()})",
            param=name,
        ) from None
    if out.ndim > 1:
        raise InputError(f"{np.asarray(value).tolist()}: expected a flat sequence of numbers", param=name)
    if out.size == 0:
        raise InputError("[]: give at least one value", param=name)
    for v in out:
        spec.check(v)
    if len(np.unique(out)) != len(out):
        raise InputError(f"{out.tolist()}: each value once", param=name)
    return out


def si_values(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Stored values of axis ``name`` in kernel units (bit/s, s, bytes, 1)."""
    return np.asarray(values, dtype=np.float64) * NUMERIC_AXES[name].to_si


def whole_number(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII digits only (``str.isdigit`` also takes ``²``, which
    ``int`` refuses), else None."""
    return int(text) if text.isascii() and text.isdigit() else None


def number(text: str, where_: str) -> float:
    """``text`` as a float, or one :class:`InputError` ``"<where_> '<text>' is not a number"``."""
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where_} {text!r} is not a number") from None


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
        per = parse_values(nics, NUMERIC_AXES["nics_per_node"]) if nics is not None else np.zeros(0)
        node = (
            f"a node's figure over its {int(per[0])} NICs is {busbw / per[0]:.4g} GB/s per link"
            if per.size == 1 and per[0] > 1
            else "divide a node's figure by the NICs it used (--nics-per-node)"
        )
        bits = f"; if {busbw:g} is Gbit/s, give {busbw / 8:.4g} (GB/s)" if busbw <= link else ""
        raise InputError(
            f"--busbw {text}: {busbw:g} GB/s is more than one {link:g} Gbit/s link carries ({link / 8:g} GB/s), "
            f"which is a utilization of {utilization:.4g}; {spec.rule().removeprefix('must be ')} is needed. busbw is "
            f"per link (one NIC, as --bw is): {node}{bits}"
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
