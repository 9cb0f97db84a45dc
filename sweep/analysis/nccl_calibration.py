"""``sweep calibrate --nccl-tests LOG [LOG...]``: the fabric's constants fitted to your own nccl-tests output, and
a fabric file that ``sweep grid`` and ``sweep plan --collective nccl --fabric FILE`` price collectives with.

Each log (:mod:`sweep.io.nccl_tests_log`) gives its collective, hosts H, GPUs per host g and GPU, and per message
size X its out-of-place busbw; the NICs (K per host of r Gbit/s), which nccl-tests never prints, are the
caller's. Every row is priced as ``sweep validate --nccl`` prices a row of ``nccl_tests.csv``
(:func:`~sweep.analysis.nccl_validation.fabrics_of`: the GPU's preset for NVLink and architecture, NCCL's own
choice of algorithm and protocol), and the same fit (:func:`~sweep.analysis.nccl_validation.fit_and_predict`:
:func:`kernels.fit.fit_model` on :func:`sweep.engine.compiled.nccl_busbw`) finds

    (eta_net, eta_nvl, lambda, o, f) = argmin  mean over scored rows of  log(B(X; eta_net, ..., f) / b)^2

with b the measured busbw (GB/s), B the model's: busbw = X / t x F (F = 2(n-1)/n for all-reduce, (n-1)/n for
all-gather, reduce-scatter and all-to-all, 1 for send/recv; n = g H) and t = latency + X / (algorithm
bandwidth x eta) + u, eta = eta_net across NVLink domains, eta_nvl inside one (NVLS and NVLSTree across
domains: each side of their bandwidth at its own, so a log across NVL72 racks tells eta_nvl too), lambda the
network's latency per
hop (us) in NCCL's inter-node latency, u = o inside one domain and f min(1, X / X_f) across domains (what NCCL's
tuner leaves out: kernels/nccl.py's docstring). A row is scored where b >= 0.1 GB/s
(:data:`~sweep.analysis.nccl_validation.RESOLUTION`: below it the printed two decimals are 5% or worse).
What the logs cannot tell is held at the shipped fit (``results/validation-nccl``) and said (:func:`untold`): a
constant whose share of the scored rows' times, beyond what the constants before it can stand in for, stays
under :data:`TOLD` everywhere (eta_net, lambda and f without a row across NVLink domains, eta_nvl and o without
one inside a single domain; one message size tells one efficiency alone); X_f always (where NCCL's chunks stop
growing: NCCL's, not the fabric's). A fitted constant that ends at its bound is said too.
"""

import dataclasses
import datetime
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from netsweep_jax.kernels.nccl import ALGORITHMS, PROTOCOLS
from netsweep_jax.sweep.analysis.nccl_validation import (
    HIGHS,
    LOWS,
    RESOLUTION,
    fabrics_of,
    fit_and_predict,
    predict_under,
    size,
    uncarried,
)
from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.io.fabric_file import fabric_document, hardware_fields, write_fabric
from netsweep_jax.sweep.io.nccl_tests import Measurement
from netsweep_jax.sweep.io.nccl_tests_log import Log, forced_text, read_nccl_tests_log
from netsweep_jax.sweep.io.paths import check_new_file, stamped
from netsweep_jax.sweep.model.compute import (
    FASTEST_NIC_GBPS,
    GPUS,
    MAX_NIC_GBPS,
    gpu_named,
    named_memory_differs,
)
from netsweep_jax.sweep.model.fabric_constants import NAMES, FabricConstants
from netsweep_jax.sweep.model.nccl_fabric import (
    SHIPPED,
    Fabric,
    Unrepresented,
    system_host_gpus,
    turned_off_runs,
)

# A constant is fitted where the logs tell it (:func:`untold`): beyond what the constants before it in TOLD_ORDER
# can stand in for, it accounts for at least TOLD of some scored row's time (d log busbw / d log constant at the
# shipped fit, by a step of BUMP); else it is held at the shipped fit and said. X_f, where NCCL's chunks stop
# growing, is NCCL's and not the fabric's: held always.
TOLD = 0.05
TOLD_ORDER = ("eta_net", "eta_nvl", "latency_us", "op_latency_us", "fill_us")
BUMP = 0.01
EFFICIENCIES = ("eta_net", "eta_nvl")  # fractions in (0, 1]; the others are times


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The logs, their rows, the fitted constants and every row's prediction.

    ``scored`` [R] bool: the rows fitted; ``predicted`` [R] busbw GB/s; ``algorithm``, ``protocol`` [R] what NCCL
    runs by the model; ``held``: the constants the logs could not tell (held at the shipped fit's); ``hardware``:
    what a fabric file records of the hosts (:func:`hardware`)."""

    logs: list[Log]
    rows: list[Measurement]
    fabrics: list[Fabric]
    constants: FabricConstants
    loss: float
    scored: np.ndarray
    predicted: np.ndarray
    algorithm: list[str]
    protocol: list[str]
    held: tuple[str, ...]
    hardware: dict[str, Any]
    at_bounds: tuple[str, ...] = ()
    stated_nics: int | None = None  # --nics-per-node as given (``hardware`` records those the ranks reached)
    host_gpus: int | None = None  # --gpus-per-node as given (None: the GPU's system's hosts)


def _check_carried(m: Any, f: Any, path: str | Path) -> None:
    """Refuse a row across hosts whose busbw the NICs given could not carry (``--bw`` in the wrong unit, say):
    :func:`~sweep.analysis.nccl_validation.uncarried`."""
    if past := uncarried(m, f):
        # The options named in the detail, not before it: "--bw FILE:47: busbw ..." read as if --bw were the file.
        raise InputError(
            f"{literal(str(path))}:{m.line}: {past}: give {{0}} and {{1}} as built ({{1}} in Gbit/s each)",
            names=("nics_per_node", "bandwidth"),
        )


def _check_hosts(logs: Sequence[Log], host_gpus: int | None) -> None:
    """Refuse ``--gpus-per-node`` (``host_gpus``) beyond the GPU's system's hosts or below a log's ranks a host."""
    if host_gpus is None:
        return
    system = system_host_gpus(logs[0].gpu)
    if system is not None and host_gpus > system:
        raise InputError(
            f"{host_gpus}: the GPUs a host holds, more than the {logs[0].gpu} system's {system}",
            param="gpus_per_node",
        )
    for log in logs:
        if log.gpus_per_node > host_gpus:
            raise InputError(
                f"{host_gpus}: the GPUs a host holds, fewer than the {log.gpus_per_node} ranks {log.path} lists "
                "on a host",
                param="gpus_per_node",
            )


def _check_turned_off(log: Log, fabric: Fabric) -> None:
    """Refuse a log run with NVLS or PAT turned off where NCCL would have run them (the fit prices its own
    choice: :func:`~sweep.model.nccl_fabric.turned_off_runs`); elsewhere the switch changes nothing, and the log
    is read."""
    for number, name, value in log.turned_off:
        if turned_off_runs(
            name,
            fabric.arch,
            fabric.nvswitch,
            log.collective,
            log.gpus_per_node,
            log.nodes,
            fabric.nics,
            fabric.domain,
        ):
            raise InputError(forced_text(log.path, number, name, value))


def calibrate_logs(
    paths: Sequence[str | Path],
    *,
    nics: int | None,
    nic_gbps: float | None,
    source: str = "",
    host_gpus: int | None = None,
) -> Calibration:
    """Read the logs, fit the constants on their scored rows, predict every row. ``nics``, ``nic_gbps``: per
    host and each NIC's Gbit/s (required where a log spans hosts); ``source``: the constants' source's name;
    ``host_gpus``: the GPUs a host holds (None: the GPU's system's), whose share of the NICs its ranks reach."""
    logs = _read_logs(paths, nics, nic_gbps)
    _check_hosts(logs, host_gpus)
    rows = [m for log in logs for m in log.measurements(nics, nic_gbps, host_gpus)]
    paths = [log.path for log in logs for _ in log.rows]
    fabrics = []
    for m, f, path in zip(rows, fabrics_of(rows), paths):
        if isinstance(f, Unrepresented):
            raise InputError(f"{path}:{m.line}: the model cannot price this row: {f.reason}")
        _check_carried(m, f, path)
        fabrics.append(f)
    for log in logs:  # every log of one GPU (_read_logs): its architecture and NVSwitch are the first row's
        _check_turned_off(log, fabrics[0])
    measured = np.array([m.busbw or 0.0 for m in rows])
    scored = measured >= RESOLUTION
    if not scored.any():
        raise InputError(
            f"{' '.join(str(log.path) for log in logs)}: no row of busbw >= {RESOLUTION:g} GB/s to fit on (smaller "
            "ones are the printed rounding)",
            param="nccl_tests",
        )
    held = untold(rows, fabrics, scored) + ("fill_mib",)
    lows, highs = LOWS.copy(), HIGHS.copy()
    for name in held:  # equal bounds: the fitter holds the constant there
        k = NAMES.index(name)
        lows[k] = highs[k] = SHIPPED.stated()[k]
    values, loss, busbw, algo, proto = fit_and_predict(rows, fabrics, scored, lows=lows, highs=highs)
    fitted: dict[str, Any] = dict(zip(NAMES, map(float, values)))
    # A fitted constant at its bound: the logs asked for more than its range gives (said, not silent). An
    # efficiency at either end; a time at its top (0 us, no latency or fill, is a value a transport may have).
    margin = 0.01 * (highs - lows)  # the fit nears a bound without reaching it (a sigmoid of its parameter)
    at_bounds = tuple(
        name
        for k, name in enumerate(NAMES)
        if name not in held
        and (values[k] >= highs[k] - margin[k] or (name in EFFICIENCIES and values[k] <= lows[k] + margin[k]))
    )
    # hosts given (--gpus-per-node): the file records them and their NICs as built; else the NICs the ranks reached
    told = host_gpus is not None and nics is not None and nic_gbps is not None
    recorded = hardware(
        logs[0], fabrics[0], nics if told else _recorded_nics(logs, rows, fabrics, nics), nic_gbps
    )
    if told:
        recorded["gpus_per_node"] = host_gpus
    return Calibration(
        logs=logs,
        rows=rows,
        fabrics=fabrics,
        constants=FabricConstants(**fitted, source=source, **hardware_fields(recorded)),
        loss=loss,
        scored=scored,
        predicted=busbw,
        algorithm=[ALGORITHMS[a] for a in algo],
        protocol=[PROTOCOLS[p] for p in proto],
        held=held,
        hardware=recorded,
        at_bounds=at_bounds,
        stated_nics=nics,
        host_gpus=host_gpus,
    )


def _recorded_nics(
    logs: Sequence[Log], rows: Sequence[Measurement], fabrics: Sequence[Fabric], nics: int | None
) -> int | None:
    """The NICs a host the fabric file records: those the fit's ranks reached (:func:`~sweep.model.nccl_fabric.
    reached_nics`: 4 ranks a host of an H100 system's 8 GPUs reach 2 of 4 NICs), where the logs across hosts
    share one count of ranks a host (the hosts the file records, whose GPUs a sweep takes), so that a sweep
    prices the hosts as the fit did; else the NICs as given. A hunt: the fit reached 2 of 4 NICs, and the file's
    hosts of 4 GPUs then got all 4 in grid, faster than the logs it was fitted on."""
    across = {log.gpus_per_node for log in logs if log.nodes > 1}
    if nics is None or len(across) != 1:
        return nics
    ranks = across.pop()
    reached = {f.nics for m, f in zip(rows, fabrics) if m.nodes > 1 and m.gpus_per_node == ranks}
    return int(reached.pop()) if len(reached) == 1 else nics


def _read_logs(paths: Sequence[str | Path], nics: int | None, nic_gbps: float | None) -> list[Log]:
    """The logs read, refused where a fit could not take them as given: none, a NIC faster than any, one run
    twice, several GPU models, or a log across hosts without its NICs."""
    if not paths:
        raise InputError("give one nccl-tests log or more", param="nccl_tests")
    if nic_gbps is not None and nic_gbps > MAX_NIC_GBPS:
        each = f"; a host's {nic_gbps:g} over {nics} NICs is {nic_gbps / nics:g} each" if nics else ""
        raise InputError(
            f"{nic_gbps:g}: each NIC's rate (Gbit/s), at most {MAX_NIC_GBPS:g} (no NIC runs faster than "
            f"{FASTEST_NIC_GBPS:g} today){each}",
            param="bandwidth",
        )
    logs = [read_nccl_tests_log(p) for p in paths]
    seen: dict[object, Path] = {}
    for log in logs:  # one run given twice (again, under another name, or copied) would count its rows twice
        if log.measured in seen:
            raise InputError(
                f"{log.path}: the same log as {seen[log.measured]} given before (its rows would count twice); "
                "give each once",
                param="nccl_tests",
            )
        seen[log.measured] = log.path
    names = {log.gpu for log in logs}
    if len(names) > 1:
        raise InputError(
            f"logs of several GPU models ({', '.join(sorted(names))}); a fabric file describes one fabric",
            param="nccl_tests",
        )
    wide = next((log for log in logs if log.nodes > 1), None)
    if wide is not None and (nics is None or nic_gbps is None):
        # each option said with its own unit (a hunt: "give --nics-per-node (NICs per host, Gbit/s each)")
        meaning = {"--nics-per-node": "the NICs a host", "--bw": "each NIC's Gbit/s"}
        missing = " and ".join(
            f"{o} ({meaning[o]})" for o, v in (("--nics-per-node", nics), ("--bw", nic_gbps)) if v is None
        )
        raise InputError(
            f"{wide.path} runs on {wide.nodes} hosts and nccl-tests does not print their NICs: give {missing}"
        )
    return logs


def untold(rows: Sequence[Measurement], fabrics: Sequence[Fabric], scored: np.ndarray) -> tuple[str, ...]:
    """The constants of :data:`TOLD_ORDER` the scored rows [R] cannot tell, in that order: each one's column
    d log busbw / d log constant over the scored rows (the share of each row's time it accounts for; at the
    shipped fit, by a step of :data:`BUMP`), less its projection on the columns of the constants kept before
    it, must reach :data:`TOLD` on some row. So one message size tells eta alone (its other columns are
    multiples of eta's there), small messages alone do not tell eta, and a constant of a side no row is on
    (across NVLink domains, or inside one) moves no row."""
    at = np.array(SHIPPED.stated(), np.float64)
    steps = [at * np.where(np.arange(len(NAMES)) == NAMES.index(name), 1 + BUMP, 1.0) for name in TOLD_ORDER]
    log_busbw = np.log(predict_under(rows, fabrics, np.array([at, *steps]))[:, scored])
    basis: list[np.ndarray] = []
    held = []
    for name, stepped in zip(TOLD_ORDER, log_busbw[1:]):
        # A row priced at no finite busbw tells nothing (a column's NaN would hold every constant unsaid).
        column = np.nan_to_num((stepped - log_busbw[0]) / math.log1p(BUMP), nan=0.0, posinf=0.0, neginf=0.0)
        for unit in basis:
            column = column - (column @ unit) * unit
        if np.max(np.abs(column)) >= TOLD:
            basis.append(column / np.linalg.norm(column))
        else:
            held.append(name)
    return tuple(held)


def hardware(log: Log, fabric: Fabric, nics: int | None, nic_gbps: float | None) -> dict[str, Any]:
    """The hardware a fabric file records: the logs' GPU (as nccl-tests names it, and its preset: a sweep's GPU
    where none is given) and the NICs given (per host, Gbit/s each; both None unless both are given: a one-host
    log needs none, and half a NIC description is none). A GPU whose system is not its die's preset's (a GH200:
    an H100 die, 96 GB or more, no NVSwitch) records none: NCCL's tables read the die, but a sweep on the file
    was priced as a DGX H100 of 80 GB cards (a hunt), nor does a card whose name states other memory than its
    preset's (an A100-SXM-64GB: a plan on its file put 66 GB on each GPU, a hunt)."""
    both = nics is not None and nic_gbps is not None
    name = log.gpu or ""
    return {
        "gpu": log.gpu,
        "preset": fabric.preset
        if gpu_named(name, any_card=True) == fabric.preset and not named_memory_differs(name, fabric.preset)
        else None,
        "nics_per_node": nics if both else None,
        "nic_gbps": nic_gbps if both else None,
    }


def run(
    paths: Sequence[str | Path],
    out: str | Path | None,
    *,
    nics: int | None,
    nic_gbps: float | None,
    force: bool,
    command: str,
    host_gpus: int | None = None,
) -> tuple[Path, Calibration]:
    """Check ``out`` (a new .json unless ``force``; None: a new ``results/fabric-<timestamp>.json``, its directory
    made as the file is written), fit, write the fabric file; return (its path, the fit)."""
    if out is None:
        out = stamped("fabric", ".json")  # its folder made as the file is written: a refusal leaves none
    check_new_file(out, force=force, suffixes=(".json",), reads={p: "nccl-tests log" for p in paths})
    c = calibrate_logs(paths, nics=nics, nic_gbps=nic_gbps, source=str(out), host_gpus=host_gpus)
    logs = [
        {
            "file": log.path.name,
            "sha256": log.sha256,
            "collective": log.collective,
            "nodes": log.nodes,
            "gpus_per_node": log.gpus_per_node,
            "rows": len(log.rows),
        }
        for log in c.logs
    ]
    fit = {
        "loss": c.loss,
        "rows_used": int(c.scored.sum()),
        "rows": len(c.rows),
        "held_at_shipped": list(c.held),
        "at_bounds": list(c.at_bounds),
        "scored_from_gbytes_s": RESOLUTION,
    }
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    document = fabric_document(
        c.constants, hardware=c.hardware, logs=logs, fit=fit, date=date, command=command
    )
    return write_fabric(out, document, force=force), c


# Below this eta_net a fit says why it may be (a hunt: NICs given 4 or 8 times the hosts' own, or a log cut
# short at 4 MiB, fitted 0.31-0.36 in silence, where the shipped fit on the published InfiniBand hosts is 0.97:
# results/validation-nccl; a note had cited an EFA fit of 0.88 that no report holds, a hunt), and from below
# this message across nodes the logs' bandwidth is mostly latency and the pipeline's fill (the fitted fill is
# whole from 10.9 MiB; the held-out report's large band starts here).
LOW_ETA_NET = 0.6
LARGE_MESSAGE = 64 * 2**20


def _eta_net_notes(c: Calibration) -> list[str]:
    """Notes on a fitted eta_net the logs may not support: too low for a healthy fabric, or set by small messages
    only (nothing said where it was held at the shipped fit or is said at its range's edge)."""
    if "eta_net" in c.held or "eta_net" in c.at_bounds:
        return []
    across = [log for log in c.logs if log.nodes > 1]
    largest = max((r.bytes or 0 for log in across for r in log.rows), default=0)
    notes = []
    if across and largest < LARGE_MESSAGE:
        notes.append(
            f"note: eta_net {c.constants.eta_net:.3f} is set by messages of at most {size(largest)} across nodes, "
            f"where latency and the pipeline's fill dominate: give logs to {size(LARGE_MESSAGE)} or more "
            "(nccl-tests -e 16G) for the transport's efficiency"
        )
    if c.constants.eta_net < LOW_ETA_NET:
        notes.append(
            f"note: eta_net {c.constants.eta_net:.3f} is low (the shipped fit, on published InfiniBand hosts: "
            f"{SHIPPED.eta_net:.2f}): "
            "the logs run well below NCCL's model of the NICs given; are --nics-per-node and --bw the hosts' "
            "own, one NIC's rate?"
        )
    return notes


def _reached_note(c: Calibration) -> list[str]:
    """Where the logs' ranks reached fewer NICs a host than given (the file records those, as the fit priced
    them): a note saying so, and what it assumes of the hosts."""
    recorded, wide = c.hardware.get("nics_per_node"), [log for log in c.logs if log.nodes > 1]
    if recorded is None or not wide:
        return []
    ranks = wide[0].gpus_per_node
    stated = c.stated_nics
    if stated is None or recorded >= stated:
        return []
    # (--gpus-per-node given: the file records the hosts and the NICs as given, and no note is needed)
    hosts = f"the {c.hardware['preset'] or c.hardware['gpu']} system's hosts"
    return [
        f"note: {counted(ranks, 'rank')} a host {'reaches' if ranks == 1 else 'reach'} {recorded} of the "
        f"{stated} NICs given (the NICs next to their GPUs, on {hosts}): the fabric file records hosts of "
        f"{counted(ranks, 'GPU')} and "
        f"{counted(recorded, 'NIC')}, as fitted (hosts of {counted(ranks, 'GPU')} that own all {stated} NICs: give "
        f"--gpus-per-node {ranks})"
    ]


def _no_preset_note(c: Calibration) -> list[str]:
    """Where the logs' GPU is a preset's chip on another card (its name states other memory): a note that the
    file records no preset for it, so that a sweep on the file is not planned in the preset's memory."""
    name = c.hardware.get("gpu") or ""
    preset = gpu_named(name, any_card=True)
    if c.hardware.get("preset") is not None or preset is None or not named_memory_differs(name, preset):
        return []
    memory = f"{GPUS[preset].memory / 2**30:.0f} GiB"
    return [
        f"note: {name} is the {preset} preset's chip with other memory than its {memory}: the fabric file records "
        f"no GPU preset, and a sweep on it says the GPU it takes (a plan of these cards: --gpu {preset}, "
        f"--usable-memory scaled by their memory over {memory})"
    ]


def table(c: Calibration) -> list[str]:
    """What the command prints: measured against fitted busbw per log and size, then the constants."""
    lines = []
    start = 0
    for log in c.logs:
        lines.append(f"{log.path}: {log.collective}, {log.nodes} x {log.gpus_per_node} {log.gpu}")
        if not log.finished:  # fitted all the same, on the sizes it has: said, not silent
            lines.append(
                f"  note: it ends before nccl-tests' closing '# Avg bus bandwidth' line (a run cut short?): "
                f"its largest size is {size(log.rows[-1].bytes)}"
                + (
                    f"; its last row (line {log.cut}), cut mid-row, is not read"
                    if log.cut is not None
                    else ""
                )
            )
        lines.append(f"  {'size':>9}  {'measured':>9}  {'fitted':>9}  {'error':>7}  NCCL runs")
        start, end = start + len(log.rows), start
        for i in range(end, start):
            m = c.rows[i]
            e = c.predicted[i] / (m.busbw or math.nan) - 1 if c.scored[i] else math.nan
            error = f"{100 * e:+6.1f}%" if math.isfinite(e) else "   n/s"
            lines.append(
                f"  {size(m.bytes or 0):>9}  {m.busbw or 0:>9.2f}  {c.predicted[i]:>9.2f}  {error:>7}  "
                f"{c.algorithm[i]}/{c.protocol[i]}"
            )
    k = c.constants
    for name in c.at_bounds:
        i = NAMES.index(name)
        nics = " (are the NICs given the hosts' own?)" if name == "eta_net" else ""
        lines.append(
            f"note: {name} ended at the edge of its range ({LOWS[i]:g} to {HIGHS[i]:g}): the model cannot bring "
            f"these logs closer with it{nics}"
        )
    lines += _eta_net_notes(c)
    lines += _reached_note(c)
    lines += _no_preset_note(c)
    held = f"; held at the shipped fit (the logs cannot tell): {', '.join(c.held)}" if c.held else ""
    lines.append(
        f"fitted on {int(c.scored.sum())} of {len(c.rows)} rows (busbw GB/s; n/s: under {RESOLUTION:g}, not "
        f"scored): eta_net {k.eta_net:.3f}, eta_nvl {k.eta_nvl:.3f}, latency {k.latency_us:.2f} us, op "
        f"{k.op_latency_us:.2f} us, fill {k.fill_us:.1f} us from {k.fill_mib:.2f} MiB, mean squared log error "
        f"{c.loss:.4f}{held}"
    )
    return lines
