"""``sweep compare``: fix the transport or compress? Per configuration, with real compressors.

For every model and bandwidth (and any other swept axis) three times are compared,
each per iteration of equal progress (a compressor's iteration time times its
iterations factor, the ``time_to_accuracy`` variable):

- *today*: no compression at today's utilization (default 0.32, the ~32 Gbit/s in
  use that Zhang et al., NetAI 2020, section 3, measured on 100 Gbit/s links; where NCCL's own
  collective prices the run, ``--collective nccl`` or a fabric, default 1: the fabric as its
  fitted transport efficiencies eta_net and eta_nvl price it, which already are today's measured
  transport, so 0.32 on top counted its losses twice);
- *fixed*: no compression with the transport fixed (utilization 1; under NCCL's own pricing
  also eta_net = eta_nvl = 1: NCCL at its tuner's model bandwidth);
- *best compressor*: the fastest of the compressors at today's utilization that change the run (``none`` where
  none does: fp16 on 2-byte gradients is a cast to what they are).

The evaluated Dataset has both along ``transport`` (``today``, ``fixed``), each at its utilization
(a coordinate along ``transport``).

The winner is whichever of *fixed* and *best compressor* is faster, "tie" within
``TIE`` (1%), "neither" where today's time is within ``TIE`` of the faster of the two. Then the
report checks two claims against these numbers: the
paper's (with the ideal compressor, ``--ratio``: 2x-5x is enough at 10 Gbit/s and
no compression is needed at 100 Gbit/s) and Agarwal et al.'s ("On the Utility of
Gradient Compression in Distributed Training Systems", MLSys 2022: compression gave a
speed-up in only 6 of over 200 data-centre setups).
"""

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from netsweep_jax.sweep.analysis.need import SOLVED, search_range, solve
from netsweep_jax.sweep.analysis.plot import save
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.keywords import accepted_keywords
from netsweep_jax.sweep.core.layout_axes import uses_nccl
from netsweep_jax.sweep.core.schema import COLLECTIVES, COMPARE, assumed_line
from netsweep_jax.sweep.core.values import digits12, parse_names, real_scalar
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.engine.evaluate import evaluate, evaluated_grid
from netsweep_jax.sweep.engine.grid import fabric_choice, fabric_gpu
from netsweep_jax.sweep.engine.grid_options import AxisValues, Models
from netsweep_jax.sweep.engine.workloads import priced_gpu, resolve_models
from netsweep_jax.sweep.io.paths import (
    check_report_directory,
    write_report_files,
)
from netsweep_jax.sweep.model.compressors import parse_compressors
from netsweep_jax.sweep.model.compute import VOLTA_PRECISION, default_precision
from netsweep_jax.sweep.model.fabric_constants import FabricConstants
from netsweep_jax.sweep.model.fabrics import FabricPreset
from netsweep_jax.sweep.model.profile import Profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS

# Compare's defaults (sweep.core.schema.COMPARE: the command's, the API's and these are one)
MODELS, COMPRESSORS, BANDWIDTHS = COMPARE.models, COMPARE.compressors, COMPARE.bandwidths
GPUS_PER_NODE, COLLECTIVE = COMPARE.gpus_per_node, COMPARE.collective
# the transformers' default (CNNs: the paper's V100 runs); precision None: each GPU's (compute.default_precision)
WORKLOAD: dict[str, str | None] = {"gpu": "h100", "precision": None, "batch": "8"}
TARGET = 0.99
TIE = 0.01  # relative difference below which neither fix wins
PAYS = 0.05  # a compressor "pays" when it is at least this much faster than no compression


@dataclasses.dataclass(frozen=True)
class Row:
    """One configuration's answer (times in seconds per iteration of equal progress).

    Attributes:
      at: dim -> value, for the model, the bandwidth and any other dim that varies.
      today, fixed: no compression at today's utilization, and with the transport fixed (:func:`compare`).
      times: compressor name -> iterations factor x iteration time at today's utilization.
      scaling: compressor name (and ``none``) -> scaling factor at today's utilization.
      fixed_scaling: scaling factor with no compression, the transport fixed.
      fixed_gain: the best compressor's speed-up over none, the transport fixed.

    :attr:`best` is ``none`` where no compressor changes the run (then no key of ``times``: :attr:`gain` is 1).
    """

    at: dict[str, Any]
    today: float
    fixed: float
    times: dict[str, float]
    scaling: dict[str, float]
    fixed_scaling: float
    fixed_gain: float

    @property
    def best(self) -> str:
        """The fastest compressor today of those that change the run, or ``none`` where none does (fp16 on 2-byte
        gradients is a cast to what they are: named best at 1.000x, it read as advice to compress, a hunt)."""
        acting = [c for c in self.times if self.times[c] != self.today]
        return min(acting, key=lambda c: self.times[c]) if acting else "none"

    @property
    def gain(self) -> float:
        """The best compressor's speed-up over no compression, today."""
        return self.today / self.times.get(self.best, self.today)

    @property
    def winner(self) -> str:
        """``fix the transport``, ``compress (<best>)``, ``tie`` or ``neither`` (each fix saves under ``TIE``:
        a winner named there would be noise)."""
        best = self.times.get(self.best, self.today)
        if self.today <= (1 + TIE) * min(best, self.fixed):
            return "neither"
        if abs(best - self.fixed) <= TIE * min(best, self.fixed):
            return "tie"
        return "fix the transport" if self.fixed < best else f"compress ({self.best})"


EVALUATE_KEYWORDS = frozenset(accepted_keywords(evaluate))  # what compare's **axes may name
# evaluate's settings compare sets itself: given, each is refused with why.
NOT_COMPARED = {
    "ratio": "compare prices each real compressor at its own bytes and time to accuracy against the uncompressed "
    "run (an ideal --ratio on top would count compression twice); sweep an ideal ratio with evaluate or grid",
    "vars": "compare keeps the variables its verdict reads (scaling_factor, iteration_time, time_to_accuracy)",
    "dtype": "compare computes in float64",
    "store": "compare's result is in memory, in float64",
    "reduce": "compare reads every cell; reduce evaluate's or grid's result instead",
}


def _compared(axes: Mapping[str, Any]) -> dict[str, Any]:
    """``axes`` but the settings compare sets itself (:data:`NOT_COMPARED`), each refused where given (None: not
    given)."""
    for name in NOT_COMPARED.keys() & {k for k, v in axes.items() if v is not None}:
        raise InputError(f"{axes[name]!r}: {NOT_COMPARED[name]}", param=name)
    unknown = sorted(set(axes) - EVALUATE_KEYWORDS - NOT_COMPARED.keys())
    if unknown:  # named as compare's: evaluate's own refusal named evaluate()
        raise InputError(
            f"unknown keyword {unknown[0]!r} of compare(); it takes evaluate's axes and settings"
        )
    return {k: v for k, v in axes.items() if k not in NOT_COMPARED}


def compare(
    models: Models = MODELS,
    *,
    bandwidth: AxisValues | None = None,
    utilization: float | None = None,
    compressor: str | Sequence[str] | None = None,
    nodes: Any = COMPARE.nodes,
    gpus_per_node: Any = None,
    collective: str | None = None,
    bucketing: str = COMPARE.bucketing,
    iterations_factor: str | Mapping[str, float] | None = None,
    codec_cost: str | Path | None = None,
    gpu: str | None = None,
    precision: str | None = None,
    batch: Any = None,
    seq_len: Any = None,
    defaults: Sequence[str] = (),
    fabric: Any = None,
    **axes: Any,
) -> tuple[list[Row], xr.Dataset, dict[str, Any]]:
    """Evaluate ``none`` and every compressor at today's ``utilization`` (None: :func:`today_default`), and
    every compressor with the transport fixed: utilization 1, and where NCCL's own collective prices the run
    (``collective`` nccl, or a ``fabric``) its fitted efficiencies at 1 too (:func:`at_line_rate`).

    Args:
      models: model names or profiles (:func:`sweep.engine.workloads.resolve_models`, with ``gpu``,
        ``precision``, ``batch``, ``seq_len`` for the transformers; default :data:`WORKLOAD`).
      bandwidth: Gbit/s (None: :func:`_defaults`).
      compressor: the compressors weighed against none (None: :data:`COMPRESSORS`, but those a model
        cannot take, said: PowerSGD needs its tensors' shapes, which a CSV profile may lack).
      nodes, gpus_per_node, collective, bucketing: one value each (None: :func:`_defaults`).
      defaults: the settings the caller left at compare's defaults, as options (``--util 0.32``): said first
        in the ``assumed`` text.
      fabric: a fabric preset or a fabric file's constants (:func:`sweep.evaluate`'s ``fabric``): settings the
        preset sets given as None (``gpus_per_node``, ``collective``, ...) and a transformer's GPU take its.
      **axes: other axes (``latency``, ``jitter``, ...), which may vary, and ``iteration_time``: every model's
        T1 (s), its compute scaled to it as grid's (:func:`~sweep.engine.workloads.resolve_models`).

    Returns: (one :class:`Row` per combination of the varying dims, the Dataset, the settings the claims are
    checked in).
    """
    axes = _compared(axes)
    # compare's own default, which its report's opening (and the command's defaults line) states: given, so
    # that the sweep's assumed line does not say it again
    if axes.get("nics_per_node") is None and fabric is None:
        axes["nics_per_node"] = COMPARE.nics_per_node
    bandwidth, gpus_per_node, collective = _defaults(fabric, bandwidth, gpus_per_node, collective)
    nccl = nccl_priced(fabric, collective)
    utilization = _check_today(today_default(nccl) if utilization is None else utilization, bucketing, nccl)
    chosen = _compressors(COMPRESSORS if compressor is None else compressor)
    given = {"gpu": gpu, "precision": precision, "batch": batch, "seq_len": seq_len}
    workload = _workload(models, given)
    if workload and gpu is None:  # a fabric preset's GPU where none is given
        workload["gpu"] = fabric_gpu(fabric_choice(fabric), models, None) or workload["gpu"]
    profiles = resolve_models(models, iteration_time=(t1 := axes.pop("iteration_time", None)), **workload)
    chosen, left_out = _takeable(chosen, compressor, profiles)
    setup = dict(nodes=nodes, gpus_per_node=gpus_per_node, collective=collective, bucketing=bucketing, **axes)
    setup.update({"fabric": fabric} if fabric is not None else {})
    # Compressor objects pass through as parsed (names round to 15 digits).
    common = dict(
        bandwidth=bandwidth,
        compressor=["none", *chosen],
        iterations_factor={} if iterations_factor is None else iterations_factor,  # compare says a 1 itself
        codec_cost=codec_cost,
        dtype="float64",
        vars="scaling_factor,iteration_time,time_to_accuracy",
    )
    ds = _today_and_fixed(list(profiles), utilization, nccl, {**common, **setup})
    for name in ("nodes", "gpus_per_node", "collective", "bucketing"):
        if ds.sizes[name] != 1:
            raise InputError(f"{setup[name]}: compare takes one value", param=name)
    setup.update(_left_to_the_fabric(setup, ds))
    unset = [k for k in WORKLOAD if given[k] is None] if workload else []
    grid_said = str(ds.attrs.get("assumed", ""))
    swept_said = [_workload_said(workload, unset) if unset else "", _t1_said(t1), grid_said, *left_out]
    said = [f"compare's defaults: {', '.join(defaults)}", *swept_said] if defaults else swept_said
    # the report says what the sweeps assumed (its opening paragraph states compare's own settings, whichever
    # way they were given: the command's line and the API's report alike)
    setup.update(assumed=assumed_line(said), swept_assumed=assumed_line(swept_said))
    return _rows(ds), ds, dict(profiles=list(profiles), utilization=utilization, nccl_priced=nccl, **setup)


def _compressors(compressor: Any) -> list[Any]:
    """The compressors compare weighs against none (parsed), refused where there are none besides it."""
    if isinstance(compressor, (list, tuple)) and not compressor:  # said as compare's (the parser's said none)
        raise InputError("[]: give at least one compressor besides none", param="compressor")
    chosen = [c for c in parse_compressors(compressor) if c.method != "none"]
    if not chosen:
        raise InputError(f"{compressor}: give at least one compressor besides none", param="compressor")
    return chosen


def _takeable(chosen: list[Any], given: Any, profiles: Sequence[Profile]) -> tuple[list[Any], list[str]]:
    """(``chosen`` less PowerSGD where compare's default list, not ``given``, meets a profile without tensor
    shapes, which PowerSGD cannot factor (a CSV profile without a shape column), what compare says of it). A
    hunt: compare() of a CSV profile raised PowerSGD's error, deep in the engine, for a compressor the user never
    named."""
    shapeless = [p.model for p in profiles if p.shape is None] if given is None else []
    kept = [c for c in chosen if not (shapeless and c.method == "powersgd")]
    if len(kept) == len(chosen):
        return kept, []
    return kept, [
        f"PowerSGD left out of compare's compressors: {', '.join(shapeless)} has no tensor shapes, which it "
        "needs (a JSON profile with shapes, or a CSV with a shape column)"
    ]


def _today_and_fixed(
    profiles: list[Profile], utilization: float, nccl: bool, settings: dict[str, Any]
) -> xr.Dataset:
    """The sweeps of today's transport and the fixed one (:func:`compare`), along ``transport``: one sweep of
    both utilizations, or under NCCL's pricing (``nccl``) one each, the fixed one's fabric at line rate."""
    if nccl:  # the fixed transport is another fabric's constants: a sweep of its own
        today = _evaluated_per_gpu(profiles, utilization=[utilization], **settings)
        line_rate = at_line_rate(settings.get("fabric"))
        fixed = _evaluated_per_gpu(profiles, utilization=[1.0], **{**settings, "fabric": line_rate})
    else:
        both = _evaluated_per_gpu(profiles, utilization=[utilization, 1.0], **settings)
        today, fixed = both.isel(utilization=[0]), both.isel(utilization=[1])
    ds = _transports(today, fixed)
    ds.attrs["fixed_transport"] = fixed_said(nccl)  # what the fixed half is: the sweeps' attrs are today's
    return ds


def _t1_said(t1: float | None) -> str:
    """What a compare at a T1 given says of it (a review: neither its line nor its report had said it)."""
    return "" if t1 is None else f"--iteration-time {t1:g}: every model's compute scaled to T1 = {t1:g} s"


def nccl_priced(fabric: Any, collective: Any) -> bool:
    """Whether NCCL's own collective prices a compare: a fabric, or ``nccl`` (``nccl:ALGO``...) given, in any
    case and as a list too, as the sweep reads it (``NCCL`` had been priced by NCCL and weighed as a flat ring's
    run, a review)."""
    # the sweep's own reading of the names (make_grid's), so compare never reads them otherwise
    return fabric is not None or (
        collective is not None and uses_nccl(parse_names(collective, "collective", COLLECTIVES))
    )


def today_default(nccl: bool) -> float:
    """Today's utilization where none is given: the paper's measured share (:data:`COMPARE`), or 1 where NCCL's
    own collective prices the run: its fitted efficiency eta_net is already the transport measured today (the
    paper's 0.32 on top had counted the transport's losses twice: a fabric file fitted at eta_net 0.80 read
    "fixing the transport 2.80x" for GPT-2 XL at 100 Gbit/s on one NIC a node, where it is 1.20x, a hunt)."""
    return 1.0 if nccl else COMPARE.utilization


def at_line_rate(fabric: Any) -> FabricPreset | FabricConstants:
    """``fabric`` (a preset, a fabric file's constants, or None: the shipped fit's) with its transport fixed: NCCL's
    fitted efficiencies eta_net and eta_nvl at 1, every other constant and tier as it is."""
    from netsweep_jax.sweep.model.nccl_fabric import SHIPPED

    choice = fabric_choice(fabric)
    constants = choice.constants if isinstance(choice, FabricPreset) else choice or SHIPPED
    fixed = dataclasses.replace(
        constants, eta_net=1.0, eta_nvl=1.0, source=f"{constants.source}, the transport fixed"
    )
    return dataclasses.replace(choice, constants_given=fixed) if isinstance(choice, FabricPreset) else fixed


TRANSPORTS = ("today", "fixed")


def _transports(today: xr.Dataset, fixed: xr.Dataset) -> xr.Dataset:
    """Compare's Dataset: today's sweep and the fixed transport's (one utilization each) along ``transport``,
    their utilizations a coordinate along it; today's sweep's attributes."""
    parts = [d.isel(utilization=0) for d in (today, fixed)]
    return xr.concat(
        parts,
        # NumPy's strings, as every other text dim's (pandas' Index made a StringDType one, a review)
        dim=xr.DataArray(np.array(TRANSPORTS), dims="transport", name="transport"),
        coords="all",  # utilization along transport, equal or not
        combine_attrs="override",
    )


def _evaluated_per_gpu(profiles: list[Profile], **settings: Any) -> xr.Dataset:
    """:func:`evaluate` of ``profiles`` with ``settings``, one sweep per GPU the profiles ran on (a profile on
    none: the V100 the paper's ran on), joined along ``model`` in the profiles' order, each with its GPU's own
    defaults. A sweep once priced every GPU at the slowest's NVLink and reductions (now each profile's own:
    :attr:`~sweep.engine.grid.Grid.own_gpu`); compare's default models put the paper's V100 CNNs beside H100
    transformers, and bert-large's transport fixed at 400 Gbit/s had come out 1.095x beside them and 1.225x
    alone (a hunt). The sweeps' attributes are joined: equal ones
    kept, the assumed lines one after the other, the others per model."""
    groups = _by_gpu(profiles)
    # Every later group's settings checked before the first is computed (a hunt: a fabric of H100 hosts refused
    # for the V100 CNNs after the transformers' 20 s sweep).
    for group in groups[1:]:
        evaluated_grid(group, **settings)
    parts = [evaluate(group, **settings) for group in groups]
    if len(parts) == 1:
        return parts[0]
    joined = xr.concat(parts, dim="model", combine_attrs="drop_conflicts")
    order = [list(joined.model.values).index(p.model) for p in profiles]  # the profiles' order
    joined = joined.isel(model=order)
    joined.attrs = _joined_attrs(parts, order)
    return joined


def _by_gpu(profiles: Sequence[Profile]) -> list[list[Profile]]:
    """``profiles`` grouped by the GPU each ran on (a profile on none: the V100 the paper's ran on), in the order
    each GPU first comes: the sweeps that price each model on its own GPU (:func:`_evaluated_per_gpu`)."""
    groups: dict[str, list[Profile]] = {}
    for p in profiles:
        groups.setdefault(priced_gpu(p), []).append(p)
    return list(groups.values())


def _joined_attrs(parts: Sequence[xr.Dataset], order: Sequence[int]) -> dict[str, Any]:
    """The attributes of sweeps of different models (:func:`_evaluated_per_gpu`): one value where every sweep
    has it alike; the assumed lines joined by "; "; else one value per model (a sweep's per-model array as it
    is, a sweep's one value for each of its models), taken in ``order`` (positions in the sweeps' models, one
    after the other)."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for p in parts for k in p.attrs):
        values: list[Any] = [p.attrs.get(key, np.nan) for p in parts]  # NaN: a sweep without it
        if all(
            np.array_equal(np.asarray(v, dtype=object), np.asarray(values[0], dtype=object)) for v in values
        ):
            out[key] = values[0]
        elif key == "assumed":  # each phrase once: those the sweeps share said once (a review)
            phrases = (phrase for v in values if isinstance(v, str) for phrase in v.split("; "))
            out[key] = "; ".join(dict.fromkeys(phrase for phrase in phrases if phrase))
        else:
            out[key] = np.concatenate(
                [
                    np.ravel(v) if np.size(v) == p.sizes["model"] else np.repeat(v, p.sizes["model"])
                    for v, p in zip(values, parts)
                ]
            )[list(order)]
    return out


def _workload_said(workload: Mapping[str, Any], unset: list[str]) -> str:
    """The ``assumed:`` line's phrase of the transformer workload settings not given (``unset``)."""
    said = [f"--{k.replace('_', '-')} {workload[k]}" for k in unset if k != "precision"]
    if "precision" in unset:  # each GPU's own
        gpu = workload["gpu"]
        gpus = gpu.split(",") if isinstance(gpu, str) else [str(g) for g in np.ravel(gpu)]
        each = dict.fromkeys(default_precision(g.strip().lower()) for g in gpus)
        why = " (a V100 has no bf16 tensor cores)" if VOLTA_PRECISION in each else ""
        said.insert(
            unset.index("precision"), f"--precision {','.join(each)}{' by GPU' * (len(each) > 1)}{why}"
        )
    return "transformers: " + ", ".join(said)


def _defaults(
    fabric: Any, bandwidth: Any, gpus_per_node: Any, collective: str | None
) -> tuple[Any, Any, str | None]:
    """Compare's own defaults for what is not given (None: :data:`BANDWIDTHS`, :data:`GPUS_PER_NODE`,
    :data:`COLLECTIVE`), but what the fabric sets: a preset, or a file where it records its hosts, their NIC
    rate and GPUs a node (a file's were compare's 8 GPUs and four rates: a hunt), any fabric NCCL's own
    collective."""
    choice = fabric_choice(fabric)
    sets = choice.settings() if choice is not None else {}  # a preset's hosts, or those a file records
    return (
        BANDWIDTHS if bandwidth is None and "bandwidth" not in sets else bandwidth,
        GPUS_PER_NODE if gpus_per_node is None and "gpus_per_node" not in sets else gpus_per_node,
        COLLECTIVE if collective is None and choice is None else collective,
    )


def _left_to_the_fabric(setup: Mapping[str, Any], ds: xr.Dataset) -> dict[str, Any]:
    """The settings given as None or not at all (left to a fabric: a preset's, or the NICs a fabric file records),
    as the sweep ``ds`` took them, for the report."""
    return {
        name: str(ds[name].values[0]) if name == "collective" else ds[name].values.item()
        for name in ("gpus_per_node", "nics_per_node", "collective")
        if setup.get(name) is None and name in ds.coords and ds.sizes[name] == 1
    }


def _workload(models: Models, given: Mapping[str, Any]) -> dict[str, Any]:
    """The transformer workload settings for ``models``: each one ``given`` (not None), else the default; none
    where no model is a transformer, where a given one is refused (a measured profile has its own times)."""
    workload = {**WORKLOAD, **{k: v for k, v in given.items() if v is not None}}
    names = (
        models.split(",")
        if isinstance(models, str)
        else [models]
        if isinstance(models, Profile)
        else list(models)
    )
    if any(isinstance(n, str) and n.strip().lower() in TRANSFORMERS for n in names):
        return workload
    for name, value in given.items():
        if value is not None:  # set by the user for a profile that has its own: refused, not ignored
            # a profile by its name (a review: its repr, every array, was the message)
            named = ", ".join(n.model if isinstance(n, Profile) else str(n) for n in names)
            raise InputError(
                f"{value}: applies to transformers (sweep models lists them); {named} brings its own measured "
                "times",
                param=name,
            )
    return {}  # no transformer: the workload settings do not apply


def _rows(ds: xr.Dataset) -> list[Row]:
    """One :class:`Row` per combination of the varying dims of compare's Dataset ``ds`` (compressors and the
    two transports, today's and the fixed one, along their dims)."""
    names = [str(c) for c in ds.compressor.values]
    dims = [d for d in ds.scaling_factor.dims if d not in ("compressor", "transport")]
    shown = [d for d in dims if ds.sizes[d] > 1 or d in ("model", "bandwidth")]
    rows = []
    for index in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        cell = ds.isel(dict(zip(dims, index)))
        today, fixed = cell.sel(transport="today"), cell.sel(transport="fixed")
        base = float(today.iteration_time.sel(compressor="none"))
        times = {c: float(today.time_to_accuracy.sel(compressor=c)) * base for c in names if c != "none"}
        fixed_best = min(float(fixed.time_to_accuracy.sel(compressor=c)) for c in names if c != "none")
        rows.append(
            Row(
                {d: cell[d].item() for d in shown},
                base,
                float(fixed.iteration_time.sel(compressor="none")),
                times,
                {c: float(today.scaling_factor.sel(compressor=c)) for c in names},
                float(fixed.scaling_factor.sel(compressor="none")),
                1.0 / fixed_best,
            )
        )
    return rows


def table(rows: Sequence[Row], utilization: float | None = None) -> str:
    """The answers as aligned text: one line per configuration. ``utilization``: today's, said in the header
    (compare's default is not the other commands')."""
    head = _at_heads(rows) + [
        "scaling today" + (f" (util {utilization:g})" if utilization is not None else ""),
        "fixing the transport",
        "best compressor",
        "its speed-up",
        "winner",
    ]
    lines = [head]
    for r in rows:
        lines.append(
            [_show(v) for v in r.at.values()]
            + [_scaling(r.scaling["none"]), f"{r.today / r.fixed:.3f}x", r.best, f"{r.gain:.3f}x", r.winner]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def _scaling(value: float) -> str:
    """A scaling factor as the tables say it: three decimals, or two significant digits below 0.0005 (a hunt:
    --util 0.0001's 1.4e-4 read 0.000 beside a 7177x fix)."""
    return f"{value:.3f}" if value >= 5e-4 else f"{value:.2g}"


def _show(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


FILES = ("compare.csv", "speedups.png", "REPORT.md")
"""What a report directory receives."""


def write_report(
    out_dir: str | Path,
    rows: Sequence[Row],
    setup: dict[str, Any],
    command: str = "sweep compare",
    force: bool = False,
) -> list[Path]:
    """Write REPORT.md, compare.csv and speedups.png (of :func:`compare`'s answers) into
    ``out_dir``; return their paths. An existing one is refused without ``force`` (a link, or
    anything but a regular file, always), before any is written."""
    return write_report_files(
        out_dir,
        {
            FILES[0]: csv_text(rows),
            FILES[1]: lambda path: figure(
                rows,
                path,
                overwrite=force,
                nccl=setup["nccl_priced"],
                today=real_scalar(setup.get("utilization")),
            ),
            FILES[2]: report(rows, setup, command),
        },
        force=force,
    )


def run(
    out_dir: str | Path | None, *, command: str = "sweep compare", force: bool = False, **kwargs: Any
) -> tuple[list[Row], xr.Dataset, dict[str, Any], list[Path]]:
    """``sweep compare`` and ``sweep.compare``: :func:`compare` of ``kwargs``, and where ``out_dir`` is given
    (checked before any work) REPORT.md, compare.csv and speedups.png written there; returns the rows, the
    evaluated Dataset, the setup and the paths written."""
    if out_dir is not None:
        check_report_directory(out_dir, FILES, force=force)  # before any work
    rows, ds, setup = compare(**kwargs)  # bad input is refused before anything is made
    paths = [] if out_dir is None else write_report(out_dir, rows, setup, command, force=force)
    return rows, ds, setup, paths


def _nics(value: object) -> str:
    """The NICs a node as the report says them: ``1 NIC``, ``8 NICs``, or a list as given (``2,4 NICs``)."""
    try:
        return counted(int(str(value)), "NIC")
    except ValueError:
        return f"{value} NICs"


def csv_text(rows: Sequence[Row]) -> str:
    """Every configuration and compressor: seconds per iteration of equal progress, and the winner. A setting to
    every digit the tool matches values to (12), so a row joins back to a cube's coordinates (``:g``'s six wrote
    12.3457 for 12.345678, a hunt), each cell quoted where CSV needs it (a profile named ``"prof`` split a row)."""
    import csv
    import io

    compressors = list(rows[0].times)
    head = (
        list(rows[0].at) + ["none_today_s", "fixed_s"] + [f"{c}_s" for c in compressors] + ["best", "winner"]
    )
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(head)
    for r in rows:
        cells = [digits12(v) if isinstance(v, (int, float)) else str(v) for v in r.at.values()]
        cells += [f"{r.today:.6g}", f"{r.fixed:.6g}", *(f"{r.times[c]:.6g}" for c in compressors)]
        writer.writerow([*cells, r.best, r.winner])
    return text.getvalue()


def figure(
    rows: Sequence[Row], out: Path, overwrite: bool = True, nccl: bool = False, today: float | None = None
) -> Path:
    """Speed-up over no compression at today's utilization, against bandwidth: a panel per model (``nccl``: the
    fixed transport's efficiencies at 1 too, as its legend says)."""
    fixed = "transport fixed (util 1, eta 1)" if nccl else "transport fixed (util 1)"
    # A panel per model and setting of any other dim that varies (nics_per_node 1,8 had zig-zagged in one line).
    panels = list(dict.fromkeys(_setting(r) for r in rows))
    fig = Figure(figsize=(4.2 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels):
        mine = [r for r in rows if _setting(r) == panel]
        bws = [r.at["bandwidth"] for r in mine]
        for c in mine[0].times:
            ax.plot(bws, [r.today / r.times[c] for r in mine], marker="o", ms=3, lw=1, label=c)
        # marked: a line through one bandwidth (a fabric's, compare's default there) draws nothing (a hunt)
        ax.plot(bws, [r.today / r.fixed for r in mine], "k--", marker="s", ms=3, lw=1.5, label=fixed)
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        # Ticks at 1, 2 and 5 of each decade: a range inside one decade had 1.0 as its only label; under a
        # decade of view (data up to about 8x, with the log margins) 3 and 4 too (a hunt: resnet50's 0.7 to
        # 4.27 was labelled 1 and 2 alone)
        low, high = ax.get_ylim()
        ax.yaxis.set_major_locator(
            LogLocator(subs=(1.0, 2.0, 5.0) if high > 10 * low else (1.0, 2.0, 3.0, 4.0, 5.0))
        )
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("bandwidth (Gbit/s)")
        # today's utilization named: "today" alone left the figure's reader to guess it (a plot hunt)
        ax.set_ylabel(
            "speed-up over no compression today" + (f" (util {today:g})" if today is not None else "")
        )
        ax.set_title(panel, fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return save(fig, out, overwrite=overwrite)


def _whose_utilization(utilization: float, nccl: bool) -> str:
    """Where today's utilization comes from, as the report says it: the paper's, the fabric as NCCL's fitted
    efficiencies price it, or given (a review: a --busbw's 0.4 was credited to the paper)."""
    if nccl:
        if utilization == today_default(nccl):
            return AS_FITTED
        return "given, on top of NCCL's fitted transport efficiency eta_net"
    if utilization == COMPARE.utilization:
        return "Zhang et al., NetAI 2020, measured ~32 Gbit/s in use on 100 Gbit/s links"
    return "given, by --util or --busbw"


# Today's transport where NCCL prices the run and no utilization is given (the report's and the command's words).
AS_FITTED = "the fabric as NCCL's fitted transport efficiencies eta_net and eta_nvl price it, nothing on top"


def fixed_said(nccl: bool) -> str:
    """What *fixed* is, as the report and the command say it."""
    if nccl:
        return "utilization 1 with NCCL's fitted efficiencies eta_net and eta_nvl at 1 (NCCL at its tuner's model bandwidth)"
    return "utilization 1"


def _what_a_ratio_leaves(setup: dict[str, Any]) -> str:
    """Claim 1's caveat: what an ideal ratio does not divide, under the sweep's collective (a hunt: the report
    blamed the V100 reduce-cost table where NCCL's own collective, which does not read it, priced the job)."""
    if setup["nccl_priced"]:  # NCCL in any case (a review: NCCL read the flat ring's caveat)
        return (
            "The ideal ratio divides the bytes of NCCL's collectives, their reduction with them, but not their "
            "latencies; where those alone exceed 1% of an iteration no ratio is enough."
        )
    return (
        "The ideal ratio divides the bytes, not the reduction work, which the `--reduce-cost` table prices "
        "(by default at each GPU's memory rate, a V100's for the paper's CNNs); where that alone exceeds 1% of an "
        "iteration no ratio is enough."
    )


def report(rows: Sequence[Row], setup: dict[str, Any], command: str) -> str:
    """REPORT.md text: the answers per configuration, all compressors, and the claims checked."""
    compressors = list(rows[0].times)
    factors = (
        "as given by --iterations-factor"
        if "--iterations-factor" in command
        else "1 (the same accuracy per iteration): time per iteration is compared, not time to accuracy"
    )
    out = [
        "# Fix the transport or compress?",
        "",
        f"Generated by `{command}` (netsweep). {setup['nodes']} nodes x {setup['gpus_per_node']} GPUs sharing "
        f"{_nics(setup.get('nics_per_node', COMPARE.nics_per_node))} per node, "
        f"{setup['collective']} all-reduce, {setup['bucketing']} buckets. Today's utilization "
        f"{setup['utilization']:g} ({_whose_utilization(setup['utilization'], setup['nccl_priced'])}); "
        f"*fixed* is {fixed_said(setup['nccl_priced'])}. The CNNs are the paper's V100 runs (fp32, batch 32); the transformers run "
        "on the GPU preset, precision and batch in their names. Each compressor's bytes, encode and decode "
        f"times and pattern come from `sweep/model/compressors.py`; the iterations factor is {factors}.",
        "",
        *([f"Assumed: {setup['swept_assumed']}.", ""] if setup.get("swept_assumed") else []),
        "![speed-up over no compression](speedups.png)",
        "",
        "## Per configuration",
        "",
        "Speed-ups are over no compression at today's utilization (seconds per iteration, times the iterations "
        "factor). *Winner*: the faster of the fixed transport and the best compressor (a tie within 1%; neither where "
        "each saves under 1%)."
        + (
            " A best compressor of none: no compressor changes the run there."
            * any(r.best == "none" for r in rows)
        ),
        "",
        _markdown(
            [
                *_at_heads(rows),
                "scaling today",
                "fixed transport",
                "best compressor",
                "its speed-up",
                "winner",
            ],
            [
                [
                    *(_show(v) for v in r.at.values()),
                    _scaling(r.scaling["none"]),
                    f"{r.today / r.fixed:.3f}x",
                    r.best,
                    f"{r.gain:.3f}x",
                    r.winner,
                ]
                for r in rows
            ],
        ),
        "",
        "## Every compressor: scaling factor at today's utilization",
        "",
        _markdown(
            [*_at_heads(rows), "none"] + compressors,
            [
                [_show(v) for v in r.at.values()] + [_scaling(r.scaling[c]) for c in ["none"] + compressors]
                for r in rows
            ],
        ),
        "",
        "## Claims, checked",
        "",
    ]
    return "\n".join(out + claims(rows, setup)) + "\n"


def _at_heads(rows: Sequence[Row]) -> list[str]:
    """The report's columns of the dims its rows vary along: model, Gbit/s, and any other by its name (a
    report of --nics-per-node 1,8 had two rows of one model and bandwidth that nothing told apart, a hunt)."""
    return [{"bandwidth": "Gbit/s"}.get(d, d) for d in rows[0].at]


def _setting(r: Row) -> str:
    """A row's model with its value of every other dim that varies but bandwidth: ``gpt2-xl`` or
    ``gpt2-xl (nics_per_node 8)``, as the claims and the figure's panels name it."""
    others = ", ".join(f"{d} {_show(v)}" for d, v in r.at.items() if d not in ("model", "bandwidth"))
    return f"{r.at['model']} ({others})" if others else str(r.at["model"])


def _markdown(head: list[str], body: list[list[str]]) -> str:
    return "\n".join(
        ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        + ["| " + " | ".join(line) + " |" for line in body]
    )


def claims(rows: Sequence[Row], setup: dict[str, Any]) -> list[str]:
    """The paper's two claims and Agarwal et al.'s finding, restated and checked against ``rows``."""
    lines = []
    bandwidths = {r.at["bandwidth"] for r in rows}
    settings = {
        k: v
        for k, v in setup.items()
        if k not in ("profiles", "utilization", "assumed", "swept_assumed", "nccl_priced")
    }
    if 10 in bandwidths:
        needs = {}  # one search per GPU, as the rows: each model on its own GPU's NVLink and reductions
        for group in _by_gpu(setup["profiles"]):
            need = solve(group, target=TARGET, axis="ratio", **{**settings, "bandwidth": 10})
            needs.update({p.model: need for p in group})
        parts, ok = [], True
        for p in setup["profiles"]:
            need = needs[p.model]
            status = need.status.sel(model=p.model).values.ravel()
            solved = need.required_ratio.sel(model=p.model).values.ravel()[status == SOLVED]
            ratio = float(solved.max()) if solved.size else 1.0
            ok = ok and not np.any(status == 2) and ratio <= 5
            text = "unreachable" if np.any(status == 2) else f"{ratio:.2f}x"
            parts.append(f"{p.model} {text}")
        lines.append(
            f"*Zhang et al.: at 10 Gbit/s an ideal compression of 2x-5x is enough.* Smallest ideal "
            f"ratio (`--ratio`, up to 10^{math.log10(search_range('ratio')[1]):.0f}) reaching {TARGET} at 10 Gbit/s, "
            "utilization 1, in this setup: "
            + ", ".join(parts)
            + f". All within 5x: {_verdict(ok)}. ({_what_a_ratio_leaves(setup)} `sweep paper` checks the "
            "claim in the paper's own setup.)"
        )
    at100 = [r for r in rows if r.at["bandwidth"] == 100]
    if at100:
        ok = all(r.fixed_scaling >= TARGET for r in at100)
        lines.append(
            "*Zhang et al.: at 100 Gbit/s no compression is needed.* Scaling factor without "
            f"compression at 100 Gbit/s, {fixed_said(setup['nccl_priced'])}: "
            + ", ".join(f"{_setting(r)} {_scaling(r.fixed_scaling)}" for r in at100)
            + f". All >= {TARGET}: {_verdict(ok)}."
        )
    fast = [r for r in rows if r.at["bandwidth"] >= 100]
    if fast:
        pays = [r for r in fast if r.gain >= 1 + PAYS]
        pays_fixed = [r for r in fast if r.fixed_gain >= 1 + PAYS]
        listed = (
            ", ".join(
                f"{_setting(r)} at {_show(r.at['bandwidth'])} Gbit/s with {r.best}, {r.gain:.2f}x"
                for r in pays
            )
            or "none"
        )
        lines.append(
            f"*Agarwal et al.: compression rarely pays at 100 Gbit/s and above* (a speed-up in 6 of over 200 "
            f"setups). Of the {counted(len(fast), 'configuration')} here at >= 100 Gbit/s, the best compressor is at least "
            f"{PAYS:.0%} faster than none in {len(pays)} at today's utilization ({listed}) and in "
            f"{len(pays_fixed)} with the transport fixed. In at most a quarter with the transport fixed: "
            f"{_verdict(len(pays_fixed) <= len(fast) / 4)}."
        )
    wins: dict[str, int] = {}
    for r in rows:
        key = r.winner.split(" (")[0]
        wins[key] = wins.get(key, 0) + 1
    lines.append(
        f"*Fix the transport or compress?* Over all {counted(len(rows), 'configuration')}: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(wins.items()))
        + "."
    )
    # numbered as written: a claim not checked (no 10 Gbit/s, say) leaves no gap (a hunt: 1. then 4.)
    return [f"{k}. {line}" for k, line in enumerate(lines, 1)]


def _check_today(utilization: object, bucketing: object, nccl: bool) -> float:
    """Today's utilization as a float (a NumPy number as the coordinate it becomes); refused where compare cannot
    weigh it: outside [0.0001, 1) (1 is the transport fixed), or [0.0001, 1] where NCCL prices the run (1: the
    fabric as fitted), or FSDP's schedule, which no compressor is modelled on (said as the option given, not
    the compressors)."""
    today = real_scalar(utilization)  # NumPy's numbers too
    if today is None or not (1e-4 <= today <= 1 if nccl else 1e-4 <= today < 1):
        why = (
            "today's utilization must be one number from 0.0001 to 1 (1: the fabric as NCCL's fitted efficiencies "
            "price it)"
            if nccl
            else "today's utilization must be one number from 0.0001 to below 1 (the transport fixed is utilization 1)"
        )
        raise InputError(f"{utilization}: {why}", param="utilization")
    if isinstance(bucketing, str) and "," in bucketing:  # one schedule: its winner is that schedule's
        raise InputError(f"{bucketing}: compare takes one value", param="bucketing")
    if isinstance(bucketing, str) and bucketing.strip().lower() == "fsdp":
        raise InputError(
            "fsdp: compare weighs compressors, modelled for all-reduce schedules only (horovod, ddp)",
            param="bucketing",
        )
    return today


def _verdict(ok: bool) -> str:
    return "**holds**" if ok else "**does not hold**"
