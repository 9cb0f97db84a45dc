"""Measured runs: the measurements CSV, and row filters such as ``gpus <= 16``.

Columns (header required; one row per measured run):

- required: ``nodes``, ``gpus_per_node``, ``bandwidth`` (Gbit/s), and exactly one of
  ``scaling_factor`` (in (0, 1]) or ``iteration_time`` (s); a blank measured value marks a row
  to predict (``sweep calibrate`` fits the others and predicts it, with an interval);
- optional model settings: ``model`` (a built-in name, or a profile file next to the CSV, its file name
  alone; a built-in's name in any case), ``collective`` and ``bucketing`` (any case), ``t1`` (s: the run's
  single-GPU iteration time; the profile's compute is scaled to it; empty keeps the profile's), and any numeric
  axis (``ratio``, ``latency``, ``utilization``, ``nics_per_node``, ``fusion_buffer``, ``fusion_timeout``,
  ``accum``, ``overhead``, ``slowdown``, ``jitter``) in its CLI units;
- any other column is a label (``framework``, ``network``, ``source``, ...), for
  ``--per`` and ``--train`` (a label of decimal digits compares with a number as its number, ``batch == 32``;
  other text compared with a number is refused, ``==`` too); a known column's name in another case (``T1``, ``Model``) is refused, not a label,
  and so is a numeric column's name with a unit after it (``t1_s``, ``bandwidth [Gbit/s]``) where the column itself is absent.

Lines starting with ``#`` are comments. A filter is a Python-like boolean expression over the columns and ``gpus`` (nodes x
gpus_per_node): comparisons, ``and``, ``or``, ``not``, numbers and quoted strings,
e.g. ``gpus <= 16 and framework != 'mxnet'``. Nothing else is evaluated.
"""

import ast
import dataclasses
import difflib
import math
import operator
import re
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.axes import NUMERIC_AXES, show
from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.keywords import option_keywords
from netsweep_jax.sweep.core.textfile import read_csv_table
from netsweep_jax.sweep.core.values import NOTATION, decimal, number

REQUIRED = ("nodes", "gpus_per_node", "bandwidth")
# How close to a column read (difflib's ratio) a label's name may not be: a misspelt setting is refused, never read
# as a label (fusion_timout 0.96, nics_per_nod 0.96; the published files' labels, bandwidth_gbps 0.78, are not).
NEAR_MISS = 0.85
MEASURED = ("scaling_factor", "iteration_time")
TEXT = ("model", "collective", "bucketing")


@dataclasses.dataclass
class Measurements:
    """Rows of a measurements file. ``columns``: name -> list; ``lines``: file line numbers."""

    path: str
    columns: dict[str, list[Any]]
    lines: list[int]
    measured: str  # "scaling_factor" or "iteration_time"

    def __len__(self) -> int:
        return len(self.lines)

    def column(self, name: str, default: Any) -> list[Any]:
        """A column's values, or ``default`` for every row where the file has no such column."""
        return self.columns.get(name, [default] * len(self))

    def where(self, i: int) -> str:
        """``path:line`` of row ``i``."""
        return where(self.path, self.lines[i])


# The numeric columns read, and the unit each is read in: a header that is one of them with a unit after it (t1_s,
# "t1 (s)", latency_us, "bandwidth [Gbit/s]") had been a label, and the run fitted without the column, in silence.
READ_IN = {
    "t1": "s",
    "iteration_time": "s",
    "scaling_factor": "1",
    **{n: a.units for n, a in NUMERIC_AXES.items()},
}


# What follows a column's name where it is a unit: anything in brackets (``t1 (s)``, ``t1 (median)``), or a unit of
# time, rate, size or share after a separator (a label such as t1_basis, utilization_nccl_tests or latency_class
# stays a label: a review; t1_ns, bandwidth_gbit_s and fusion_buffer_kb had to be refused too: a review).
_TIME = (
    r"[nuµμm]?s|(n|u|µ|μ|micro|milli|m)?secs?|(nano|micro|milli)?seconds?|micros|millis|minutes|hrs?|hours?"
)
_PER_S = r"([_/ ]?(per[_ ]?)?(s|sec|second))?"
_RATE = rf"([kmgt]i?)?(bps|bits?|bytes?){_PER_S}|[kmgt]i?b{_PER_S}|[kmgt]bitps"
_SHARE = r"pct|percent|percentage|%|frac|fraction"
# a statistic before the unit (t1_mean_s, t1_p50_ms); min alone is a minimum, not minutes (a review)
_STAT = r"(mean|avg|average|median|p\d+|min|max)"
_STATISTIC = rf"({_STAT}[_ .-]+)?"
UNIT_AFTER = re.compile(
    rf"([_ .-]+{_STAT})?\s*[(\[].*[)\]]\s*|%|[_ .-]+{_STATISTIC}({_TIME}|{_RATE}|{_SHARE})"
)


def _refuse_a_unit_in_a_name(header: list[str], path: Path, header_line: int) -> None:
    """Refuse a column named as a numeric column read followed by a unit or anything in brackets
    (:data:`UNIT_AFTER`: ``t1_s``, ``t1 (s)``, ``bandwidth [Gbit/s]``) where that column itself is absent: a label to the reader, the setting
    ignored (a hunt: t1_s fitted utilization 0.82 at the built-in T1 where the file's 0.25 s gives 0.4). The
    measured columns only where the file has neither (one of them beside the other's label is a file's own)."""
    read = set(READ_IN) - (set(MEASURED) if set(MEASURED) & set(header) else set())
    for c in header:
        lower = c.lower()
        name = next((n for n in sorted(read, key=len, reverse=True) if lower.startswith(n)), None)
        if name is None or name in header or not UNIT_AFTER.fullmatch(lower[len(name) :]):
            continue
        unit = {"s": "seconds", "ms": "milliseconds", "us": "microseconds"}.get(READ_IN[name], READ_IN[name])
        raise InputError(
            f"{where(path, header_line)}: column {c!r} is a label, not {name}, which is not given (the run would "
            f"be priced without it): name it {name}"
            + (f", in {unit}" if unit != "1" else "")
            + f", or give {name} beside it"
        )


def read_measurements(path: str | Path) -> Measurements:
    """Read and validate a measurements CSV; errors name the file and line."""
    path = Path(path)
    # '#' lines are comments (a file may say where its numbers come from); line numbers stay the file's
    header_line, header, rows = read_csv_table(path, "measurements file")
    known = {c.lower(): c for c in (*REQUIRED, *MEASURED, *TEXT, "t1", *NUMERIC_AXES)}
    for c in header:  # 'T1' or 'Model' read as a label, and the run fitted without it, in silence
        if c not in known.values() and c.lower() in known:
            raise InputError(
                f"{where(path, header_line)}: column {c!r} is {known[c.lower()]} in another case; name it "
                f"{known[c.lower()]} (a column named otherwise is a label)"
            )
    # 'util', 'fusion_mb': the CLI's spelling, a label to the reader, fitted as if absent (a hunt)
    for c in header:
        setting = option_keywords().get(c.lower().replace("-", "_"))
        if c.lower() not in known and setting in known:
            raise InputError(
                f"{where(path, header_line)}: column {c!r} is the CLI's --{c.lower().replace('_', '-')}; name it "
                f"{known[setting]} (a column named otherwise is a label)"
            )
    for c in header:  # 'fusion_timout': a label to the reader, and the setting ignored in silence
        close = difflib.get_close_matches(c.lower(), known, n=1, cutoff=NEAR_MISS)
        if c.lower() not in known and close:
            raise InputError(
                f"{where(path, header_line)}: column {c!r} is not {known[close[0]]}, which it is close to: name it "
                f"{known[close[0]]} (a setting read), or a label further from it (a column named otherwise is a "
                "label)"
            )
    _refuse_a_unit_in_a_name(header, path, header_line)
    missing = [c for c in REQUIRED if c not in header]
    measured = [c for c in MEASURED if c in header]
    if len(measured) > 1:  # one too many, not one missing (a hunt read "missing column(s)")
        raise InputError(
            f"{where(path, header_line)}: both {' and '.join(measured)} given; give exactly one of them (the "
            f"measured metric); header is {','.join(header)}"
        )
    if missing or not measured:
        need = ", ".join(missing) if missing else "exactly one of scaling_factor, iteration_time"
        raise InputError(
            f"{where(path, header_line)}: missing column(s) {need}; header is {','.join(header)}"
        )
    columns: dict[str, list[Any]] = {c: [] for c in header}
    lines: list[int] = []
    seen: dict[tuple[Any, ...], int] = {}
    for lineno, cells in rows:
        values = {name: _cell(name, cell, path, lineno) for name, cell in cells.items()}
        # A row pasted twice counted twice: a fit's standard error of 7e-13 where one row leaves none (a hunt); the
        # same by its values, as read (a hunt: 25 and 25.0 had been two runs)
        first = seen.setdefault(tuple(values.values()), lineno)
        if first != lineno:
            raise InputError(
                f"{where(path, lineno)}: the same row as line {first}; give each run once (a row twice counts "
                "twice in a fit, its standard errors and a held-out error), or a label column that tells two "
                "runs of equal values apart"
            )
        for name, value in values.items():
            columns[name].append(value)
        _refuse_other_gpus(columns, path, lineno)
        lines.append(lineno)
    if not lines:
        raise InputError(f"{path}: no measurement rows after the header")
    return Measurements(str(path), columns, lines, measured[0])


def _refuse_other_gpus(columns: dict[str, list[Any]], path: Path, lineno: int) -> None:
    """Refuse a ``gpus`` cell (a label column) that is not the row's nodes x gpus_per_node: ``--train`` reads
    ``gpus`` as that product and ``--per`` reads the column, so one file meant two things (a hunt)."""
    if "gpus" not in columns:
        return
    text, product = columns["gpus"][-1], columns["nodes"][-1] * columns["gpus_per_node"][-1]
    try:
        same = decimal(text) == product
    except ValueError:
        same = False
    if not same:
        raise InputError(
            f"{where(path, lineno)}: gpus {text!r} is not nodes x gpus_per_node ({show(product)}), which --train "
            "reads as gpus; give the product or drop the column"
        )


def _cell(name, text, path, lineno):
    numeric = name in NUMERIC_AXES or name in MEASURED or name == "t1"
    if name in ("t1", *MEASURED) and not text:  # t1: the profile's own; measured: a row to predict
        return None
    if not numeric:  # a name, or a label
        if name in TEXT and not text:
            raise InputError(f"{where(path, lineno)}: empty {name}")
        return text
    value = number(text, f"{where(path, lineno)}: {name}")
    if name == "scaling_factor" and not (0 < value <= 1):
        raise InputError(f"{where(path, lineno)}: scaling_factor {text} must be in (0, 1]")
    if name in ("iteration_time", "t1") and not (1e-6 <= value <= 1e4 and math.isfinite(value)):
        raise InputError(f"{where(path, lineno)}: {name} {text} must be a number of seconds in [1e-6, 1e4]")
    if name in NUMERIC_AXES:
        spec = NUMERIC_AXES[name]
        try:
            spec.check(value)
        except InputError:
            raise InputError(f"{where(path, lineno)}: {name} {show(value)}: {spec.rule()}") from None
    return value


_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


MAX_EXPRESSION = (
    2000  # characters of a filter: far more than any real one, far less than Python's parser limits
)


def _parsed(expression: Any, param: str) -> ast.expr:
    """The syntax tree of a row filter, or one line saying why it is not one."""
    if not isinstance(expression, str):
        raise InputError(f"{expression!r}: expected a row filter such as 'gpus <= 16'", param=param)
    if len(expression) > MAX_EXPRESSION:
        raise InputError(f"{expression[:20]!r}...: longer than {MAX_EXPRESSION} characters", param=param)
    try:
        return ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        raise InputError(f"{expression!r}: not an expression like 'gpus <= 16'", param=param) from None
    except (RecursionError, MemoryError):
        raise InputError(f"{expression[:20]!r}...: nested too deeply", param=param) from None


def _literal(node: ast.Constant, expression: str, param: str) -> Any:
    """A quoted text or a number of a row filter, a number only as the project writes numbers (Python's
    1_000 and 0x10 are refused)."""
    if not isinstance(node.value, str):
        text = ast.get_source_segment(expression, node) or ""
        try:
            decimal(text)
        except ValueError:
            raise InputError(f"{expression!r}: {text!r} is not a number ({NOTATION})", param=param) from None
    return node.value


def _label_number(value: Any, expression: str, param: str) -> Any:
    """A compared value as a number: a number as it is, a label of decimal digits as its number (labels are
    read as text), other text refused: it compares text with a number."""
    if not isinstance(value, str):
        return value
    try:
        return decimal(value)
    except ValueError:
        raise InputError(f"{expression!r}: compares text ({value!r}) with a number", param=param) from None


def select(meas: Measurements, expression: str, param: str = "train", rows: Any = None) -> list[bool]:
    """[R] bools: the rows ``expression`` keeps (see the module docstring). ``rows`` ([R] bools, default
    all): the rows it is evaluated on (the others are not kept; rows to predict have no measured value)."""
    tree = _parsed(expression, param)
    names = {
        **meas.columns,
        "gpus": [n * g for n, g in zip(meas.columns["nodes"], meas.columns["gpus_per_node"])],
    }
    rows = [True] * len(meas) if rows is None else [bool(r) for r in rows]

    def value(node: ast.expr, i: int) -> Any:
        try:
            return evaluated(node, i)
        except RecursionError:
            raise InputError(f"{expression[:20]!r}...: nested too deeply", param=param) from None

    def number(node: ast.expr, i: int, what: str) -> Any:
        v = evaluated(node, i)
        if v is None:
            name = node.id if isinstance(node, ast.Name) else "a value"
            raise InputError(f"{expression!r}: {name} is empty at {meas.where(i)}", param=param)
        if what == "-" and (isinstance(v, str) or isinstance(v, bool)):
            raise InputError(f"{expression!r}: '-' applies to numbers, not to {v!r}", param=param)
        return v

    def evaluated(node: ast.expr, i: int) -> Any:
        if isinstance(node, ast.BoolOp):
            parts = (number(v, i, "and") for v in node.values)
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not number(node.operand, i, "not")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -number(node.operand, i, "-")
        if isinstance(node, ast.Compare):
            left = number(node.left, i, "compare")
            for op, right_node in zip(node.ops, node.comparators):
                right = number(right_node, i, "compare")
                if type(op) not in _COMPARE:
                    raise InputError(f"{expression!r}: only <, <=, >, >=, ==, != compare", param=param)
                if isinstance(left, str) != isinstance(right, str):
                    # A label of digits is its number (batch == 32 had compared '32' with 32: never equal, a
                    # hunt); other text with a number is refused, == and != too.
                    left, right = (_label_number(v, expression, param) for v in (left, right))
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise InputError(
                    f"{expression!r}: no column {node.id!r}; columns: {', '.join(names)}", param=param
                )
            return names[node.id][i]
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float, str))
            and not isinstance(node.value, bool)
        ):
            return _literal(node, expression, param)
        raise InputError(
            f"{expression!r}: only columns, numbers, quoted text, comparisons, and, or, not", param=param
        )

    keep = [bool(value(tree, i)) if rows[i] else False for i in range(len(meas))]
    if not any(keep):
        raise InputError(f"{expression!r}: selects no row", param=param)
    if all(k for k, r in zip(keep, rows) if r):
        # rows without a measured value are predicted whatever it selects (a hunt: "none to predict" beside them)
        blank = len(rows) > sum(rows)
        raise InputError(
            f"{expression!r}: selects every measured row, leaving none held out to score"
            + ("; rows without a measured value are predicted without --train" if blank else ""),
            param=param,
        )
    return keep
