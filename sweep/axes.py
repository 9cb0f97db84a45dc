"""Sweep axes: names, units, value syntax and validation, host side.

An axis is named once and spelled the same everywhere: CLI option, Python API
keyword, HDF5 dimension. Values are stored as the user typed them (bandwidth in
Gbit/s, latency in microseconds, fusion_buffer in MiB, fusion_timeout in ms); the
``units`` attribute says which, and :func:`si_values` converts for the kernels.

Value syntax (``parse_values``): a list ``10,25,100``; an inclusive range
``1..100`` (step 1); ``1..100:5`` (step 5); ``1..1000@20`` (20 evenly spaced
points); ``1..1000@20log`` (20 log-spaced points); items may be mixed
(``1,2,5..10``).
"""

import dataclasses
import math
import re

import numpy as np

from sweep.errors import InputError


@dataclasses.dataclass(frozen=True)
class AxisSpec:
    """How one numeric axis is spelled, checked and converted.

    Attributes:
      name: dimension name.
      option: CLI option.
      units: units of the stored values.
      long_name: human description.
      integer: values must be whole numbers.
      low, low_open: lower bound and whether it is exclusive.
      high: inclusive upper bound, or None.
      default: default value text.
      to_si: factor from stored units to the kernel's (bit/s, s, bytes).
    """

    name: str
    option: str
    units: str
    long_name: str
    integer: bool
    low: float
    low_open: bool
    high: float | None
    default: str
    to_si: float

    def rule(self):
        if self.integer:
            return f"must be an integer >= {self.low:g}"
        lo = f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
        return f"must be a number {lo}" + (f" and <= {self.high:g}" if self.high is not None else "")

    def check(self, value):
        ok = math.isfinite(value) and (value > self.low if self.low_open else value >= self.low)
        ok = ok and (self.high is None or value <= self.high)
        ok = ok and (not self.integer or float(value).is_integer())
        if not ok:
            raise InputError(f"{self.option} {value:g}: {self.name} {self.rule()}")


NUMERIC_AXES = {
    s.name: s
    for s in (
        AxisSpec("nodes", "--nodes", "1", "number of nodes", True, 1, False, None, "8", 1.0),
        AxisSpec("gpus_per_node", "--gpus-per-node", "1", "GPUs per node", True, 1, False, None, "8", 1.0),
        AxisSpec("bandwidth", "--bw", "Gbit/s", "inter-node link bandwidth", False, 0, True, None,
                 "1,10,25,40,100", 1e9),
        AxisSpec("utilization", "--util", "1", "fraction of link bandwidth the transport achieves",
                 False, 0, True, 1.0, "1", 1.0),
        AxisSpec("ratio", "--ratio", "1", "gradient compression ratio", False, 1, False, None, "1", 1.0),
        AxisSpec("latency", "--latency", "us", "per-message latency", False, 0, False, None, "0", 1e-6),
        AxisSpec("fusion_buffer", "--fusion-mb", "MiB", "tensor fusion buffer size", False, 0, False,
                 None, "64", 2.0**20),
        AxisSpec("fusion_timeout", "--fusion-ms", "ms", "tensor fusion timeout", False, 0, False, None,
                 "5", 1e-3),
    )
}

# The cube's dimension order: structural axes (new buckets or a new compile) first,
# then worker layout (new reduction costs), then the axes the scan sweeps freely.
STRUCTURAL = ("model", "collective", "fusion_buffer", "fusion_timeout")
LAYOUT = ("nodes", "gpus_per_node")
INNER = ("bandwidth", "utilization", "ratio", "latency")
DIMS = STRUCTURAL + LAYOUT + INNER

LONG_NAMES = {"model": "model profile", "collective": "all-reduce algorithm"}

_RANGE = re.compile(r"^(?P<a>.+?)\.\.(?P<b>[^@:]+)(?::(?P<step>.+)|@(?P<n>\d+)(?P<log>log)?)?$")


def _num(text, spec, item):
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{spec.option} {item!r}: {text!r} is not a number ({spec.rule()})") from None


def parse_values(text, spec):
    """Parse ``text`` in the value syntax for axis ``spec``; return float64 [n].

    Raises :class:`InputError` naming the option, the value and the rule.
    """
    text = str(text).strip()
    if not text:
        raise InputError(f"{spec.option} '': give at least one value")
    values = []
    for item in (s.strip() for s in text.split(",")):
        if ".." not in item:
            values.append(_num(item, spec, item))
            continue
        m = _RANGE.match(item)
        if not m:
            raise InputError(f"{spec.option} {item!r}: ranges are A..B, A..B:STEP, A..B@N or A..B@Nlog")
        a, b = _num(m["a"], spec, item), _num(m["b"], spec, item)
        if b < a:
            raise InputError(f"{spec.option} {item!r}: range is reversed (start {a:g} > end {b:g})")
        if m["n"] is not None:
            n = int(m["n"])
            if n < 1 or (n == 1 and a != b):
                raise InputError(f"{spec.option} {item!r}: @N needs N >= 2 points (N = 1 only for A..A)")
            if m["log"]:
                if a <= 0:
                    raise InputError(f"{spec.option} {item!r}: a log range needs start > 0")
                values.extend(np.geomspace(a, b, n))
            else:
                values.extend(np.linspace(a, b, n))
        else:
            step = _num(m["step"], spec, item) if m["step"] is not None else 1.0
            if not (step > 0 and math.isfinite(step)):
                raise InputError(f"{spec.option} {item!r}: step {step:g} is empty; it must be > 0")
            count = int(math.floor((b - a) / step + 1e-9)) + 1
            values.extend(a + step * np.arange(count))
    # Round generated points to 12 significant digits so 0.1..1:0.1 yields 0.3, not
    # 0.30000000000000004, and .sel(utilization=0.3) finds it.
    out = np.array([float(f"{v:.12g}") for v in values], dtype=np.float64)
    for v in out:
        spec.check(v)
    if len(np.unique(out)) != len(out):
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise InputError(f"{spec.option} {text!r}: value {dup:g} appears twice; each value once")
    return out


def parse_names(text, option, known):
    """Comma list of names, each in ``known`` (for --model and --collective)."""
    names = [s.strip() for s in str(text).split(",") if s.strip()]
    if not names:
        raise InputError(f"{option} '': give at least one name ({', '.join(known)})")
    for n in names:
        if n not in known:
            raise InputError(f"{option} {n!r}: unknown; known: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise InputError(f"{option} {text!r}: each name once")
    return names


def coerce_axis(name, value):
    """Python API values (number, sequence, or syntax string) -> float64 [n]."""
    spec = NUMERIC_AXES[name]
    if isinstance(value, str):
        return parse_values(value, spec)
    out = np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel()
    if out.size == 0:
        raise InputError(f"{name}: give at least one value")
    for v in out:
        spec.check(v)
    if len(np.unique(out)) != len(out):
        raise InputError(f"{name}: each value once")
    return out


def si_values(name, values):
    """Stored values of axis ``name`` in kernel units (bit/s, s, bytes, 1)."""
    return np.asarray(values, dtype=np.float64) * NUMERIC_AXES[name].to_si
