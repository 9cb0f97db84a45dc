"""The numeric axes, each defined once: its name, CLI option, units, long name, bounds, default,
conversion to the kernels' units, and (where it has them) ``sweep need``'s search range and
``sweep calibrate``'s fit bounds.

:data:`NUMERIC_AXES` are the data-parallel sweep's (``sweep grid``); the large-model layout family declares its
own with its vocabulary (:data:`sweep.core.layout_axes.LAYOUT_AXES`, and its settings of one value per sweep in
:mod:`sweep.core.sweep_settings`), as :class:`AxisSpec` too, with :data:`OVERSUBSCRIPTION`, the spine's. Pure
Python (no numpy, no JAX), as :mod:`sweep.core.schema`.
"""

import dataclasses
import math
from collections.abc import Sequence

from netsweep_jax.sweep.core.errors import InputError

MAX_AXIS_VALUES = 10**7  # values one axis may expand to (a range is refused before it is built)


def show(value: float) -> str:
    """A number as the user would recognise it: up to 15 significant digits, no trailing zeros."""
    return f"{value:.15g}"


def apart(values: Sequence[float], digits: int = 4) -> list[str]:
    """``values`` to ``digits`` significant digits, or to as many more (up to :func:`show`'s 15) as it takes for
    values that differ to read differently: a message that says two constants differ never prints them alike."""
    for more in range(digits, 16):
        shown = [f"{v:.{more}g}" for v in values]
        if len(set(shown)) == len(set(values)):
            return shown
    return [show(v) for v in values]


@dataclasses.dataclass(frozen=True)
class AxisSpec:
    """How one numeric axis is spelled, checked and converted.

    Attributes:
      name: dimension name, Python keyword and kernel argument.
      option: CLI option.
      units: units of the stored values.
      long_name: human description.
      integer: values must be whole numbers.
      low, high: inclusive bounds. They keep every result finite and > 0 in float32
        as well as float64 (the widest case: 1024 GPUs on each of 10^6 nodes, 10^-3
        Gbit/s at 10^-4 utilization, 1 s of latency per message).
      default: default value text (value syntax).
      to_si: factor from stored units to the kernel's (bit/s, s, bytes).
      search: ``sweep need``'s search range (stored units, low > 0 for log-space
        bisection), or None when the axis cannot be solved for.
      fit: ``sweep calibrate``'s default fit bounds (stored units), or None when the
        axis cannot be fitted.
      choices: where only some values in the bounds mean something (a dtype's bytes), each such
        value and what it stands for, e.g. ``((4, "fp32"), (2, "bf16"))``; empty: every value
        in the bounds.
    """

    name: str
    option: str
    units: str
    long_name: str
    integer: bool
    low: float
    high: float
    default: str
    to_si: float
    search: tuple[float, float] | None = None
    fit: tuple[float, float] | None = None
    choices: tuple[tuple[float, str], ...] = ()

    def rule(self) -> str:
        """The validity rule as text, e.g. ``must be a number from 0.001 to 1000000`` or ``must be 4 (fp32) or
        2 (bf16)``."""
        if self.choices:
            named = [f"{show(value)} ({meaning})" for value, meaning in self.choices]
            return f"must be {', '.join(named[:-1])} or {named[-1]}"
        kind = "an integer" if self.integer else "a number"
        return f"must be {kind} from {show(self.low)} to {show(self.high)}"

    def allows(self, value: float) -> bool:
        """Whether ``value`` obeys the rule."""
        if self.choices:
            return any(value == choice for choice, _ in self.choices)
        ok = math.isfinite(value) and self.low <= value <= self.high
        return ok and (not self.integer or float(value).is_integer())

    def check(self, value: float, shown: str | None = None) -> None:
        """Raise :class:`InputError` (naming this axis, or its choices) unless ``value`` obeys the rule; the value
        said as ``shown`` where given (as typed: 1e400, not inf)."""
        if not self.allows(value):
            named = "" if self.choices else f"{self.name} "  # a list of choices names what each value is
            raise InputError(
                f"{show(value) if shown is None else shown}: {named}{self.rule()}", param=self.name
            )

    @property
    def help(self) -> str:
        """Help text for the CLI option."""
        unit = "" if self.units == "1" else f", {self.units}"
        return f"{self.long_name[0].upper()}{self.long_name[1:]}{unit} ({self.rule()})."


NUMERIC_AXES: dict[str, AxisSpec] = {
    s.name: s
    for s in (
        AxisSpec(
            "fusion_buffer", "--fusion-mb", "MiB", "tensor fusion buffer size", False, 0, 1e6, "64", 2.0**20
        ),
        AxisSpec("fusion_timeout", "--fusion-ms", "ms", "tensor fusion timeout", False, 0, 1e6, "5", 1e-3),
        AxisSpec("nodes", "--nodes", "1", "number of nodes", True, 1, 1e6, "8", 1.0),
        AxisSpec("gpus_per_node", "--gpus-per-node", "1", "GPUs per node", True, 1, 1024, "8", 1.0),
        AxisSpec(
            "nics_per_node",
            "--nics-per-node",
            "1",
            "network interfaces per node, shared by its GPUs",
            True,
            1,
            64,
            "1",
            1.0,
        ),
        AxisSpec(
            "bandwidth",
            "--bw",
            "Gbit/s",
            "inter-node link bandwidth",
            False,
            1e-3,
            1e6,
            "1,10,25,40,100",
            1e9,
            search=(1e-3, 1e6),
        ),
        AxisSpec(
            "utilization",
            "--util",
            "1",
            "fraction of link bandwidth the transport achieves",
            False,
            1e-4,
            1.0,
            "1",
            1.0,
            search=(1e-4, 1.0),
            fit=(1e-4, 1.0),
        ),
        AxisSpec(
            "ratio", "--ratio", "1", "gradient compression ratio", False, 1, 1e6, "1", 1.0, search=(1.0, 1e6)
        ),
        AxisSpec(
            "latency",
            "--latency",
            "us",
            "per-message latency",
            False,
            0,
            1e6,
            "0",
            1e-6,
            search=(1e-3, 1e6),
            fit=(0.0, 1000.0),
        ),
        AxisSpec(
            "overhead",
            "--overhead",
            "ms",
            "time per iteration nothing overlaps, when N > 1",
            False,
            0,
            1e6,
            "0",
            1e-3,
            search=(1e-3, 1e6),
            fit=(0.0, 1000.0),
        ),
        AxisSpec(
            "slowdown",
            "--slowdown",
            "1",
            "compute stretched by 1 + slowdown when N > 1",
            False,
            0,
            100,
            "0",
            1.0,
            search=(1e-6, 100.0),
            fit=(0.0, 1.0),
        ),
        AxisSpec(
            "jitter",
            "--jitter",
            "1",
            "coefficient of variation of a worker's compute time",
            False,
            0,
            10,
            "0",
            1.0,
            search=(1e-6, 10.0),
            fit=(0.0, 1.0),
        ),
        AxisSpec(
            "accum",
            "--accum",
            "1",
            "micro-batches of compute per gradient synchronization",
            True,
            1,
            1e6,
            "1",
            1.0,
        ),
    )
}


# The spine's oversubscription (--collective nccl): not a dim of a layout cube (it has HDF5's 32 already), one value
# per sweep; sweep plan takes a list and plans each value (sweep.analysis.layout_jobs).
OVERSUBSCRIPTION = AxisSpec(
    "oversubscription",
    "--oversubscription",
    "1",
    "the spine's oversubscription O (leaf downlinks over uplinks; 1: non-blocking): a group wider than a "
    "leaf runs each channel across nodes at most at its NICs' share (NCCL's step where higher) over max(1, "
    "O f), f the share of the "
    "leaf's NIC ports its collective sends out of the leaf (with --collective nccl; default: the --fabric "
    "preset's, else 1)",
    False,
    1.0,  # below 1 a spine has more uplinks than downlinks: no group gets more than its NICs (refused, not 1)
    1e3,
    "",
    1.0,
)


def unnamed(
    option: str,
    units: str,
    long_name: str,
    integer: bool,
    low: float,
    high: float,
    default: str,
    to_si: float = 1.0,
    *,
    choices: tuple[tuple[float, str], ...] = (),
) -> AxisSpec:
    """An axis declared as the annotation of a keyword (:class:`sweep.core.layout_axes.LayoutAxisKeywords`,
    :class:`sweep.core.sweep_settings.SettingKeywords`), named by its key when its table collects it (the name
    written once)."""
    return AxisSpec("", option, units, long_name, integer, low, high, default, to_si, choices=choices)


@dataclasses.dataclass(frozen=True)
class TextOption:
    """An option the commands read as text, declared once: the CLI's parameter (``flag``, Megatron-LM's name for
    it, ``alias``, where it has one; ``metavar``; ``file``: a path; ``hidden``: out of ``--help``), and the help. Its name is its key in the
    table that holds it (:data:`sweep.core.layout_axes.TEXT_OPTIONS`, :data:`sweep.core.sweep_settings.SETTINGS`:
    the API's keyword too, but for the CLI's ``launch`` and ``virtual_stages``). ``{stacks}``,
    ``{default_stack}`` and ``{fabrics}`` in the help are the presets the model layer declares
    (:mod:`sweep.model.stacks`, :mod:`sweep.model.fabrics`), filled in by the CLI: this layer does not import
    that one."""

    flag: str
    help: str
    alias: str = ""
    metavar: str = ""
    file: bool = False
    hidden: bool = False  # an old spelling, still read, kept out of --help


def default_value(name: str) -> float:
    """The default of a numeric axis whose default is one value (``fusion_buffer``: 64.0)."""
    return float(NUMERIC_AXES[name].default)
