"""``sweep validate --nccl FILE``: NCCL's collectives as :mod:`kernels.nccl` prices them, against nccl-tests
output of real clusters (``nccl_tests.csv``'s format: :mod:`sweep.io.nccl_tests`).

The protocol, chosen before any held-out error was looked at:

- Every row is priced from the hardware it states (:mod:`sweep.model.nccl_fabric`: the GPU's preset for
  NVLink and architecture, the stated hosts, GPUs per host and NICs, a forced algorithm or protocol, SHARP
  enabled); a row the model cannot price is listed with its reason, never dropped.
- Six fabric constants are fitted (:func:`kernels.fit.fit_model` through
  :func:`sweep.engine.compiled.fit_nccl`, least squares on log(predicted / measured busbw)): the transport
  efficiency across hosts eta_net, the one inside an NVLink domain eta_nvl, the network's latency lambda
  (us), and what NCCL's tuner leaves out (since 2026-12-04): a collective's fixed cost inside one NCCL node o
  (us) and the pipeline's fill across nodes, f (us) whole from X_f (MiB). They are fitted on whole sources, by the id prefix, :data:`TRAIN`: ``NT309A`` (one user's
  H100 hosts on 8 x 400 Gbit/s InfiniBand NDR, 2 and 4 hosts, whole curves from 8 B to 16 GiB with NCCL's
  own choice: the common RDMA fabric, latency floor to plateau) and ``AZ`` (one host each of H200, A100 and
  GB200, NVLink only, 1 KiB to 8 GiB: the NVLink side on three generations). Every other source is held
  out: the same fabric measured by another user (``NT309B``, 2-8 hosts, forced ring, tuned), other
  transports (EFA ``AWSDT``, ``AWSEP``, ``GISTP3DN``; Slingshot ``CSCS``; RoCE ``OCIGB300``), other scales
  and the multi-node NVLink domain.
- A row is scored where its measured busbw is at least :data:`RESOLUTION` GB/s: the file prints two
  decimals, so below that the rounding alone is 5% or more. Unscored rows are still predicted and written.
- Disclosed in the report: while the kernel was written, a few rows' plateaus were compared by eye, and one
  of NCCL's search rules (the two-node tree's second pass) was added after a held-out row (AWSDT-P4DE-2x8)
  came out at 60% of its measured plateau. After the held-out errors were first computed, only a bug of the fit
  (a NaN gradient that left the constants at a starting point) was fixed. On 2026-12-03, with the held-out
  errors known, two structural rules were added from NCCL's and aws-ofi-nccl's code (the NICs the ranks reach,
  the network plugin's reported latency: :mod:`sweep.model.nccl_fabric`); the report dates them and says
  what else was computed; the training sources and the fitted constants did not change. On 2026-12-04, with
  the held-out errors of the three constants known, o, f and X_f were added from the training curves'
  residuals; the report lists every form tried with its training loss and held-out errors, and the rule
  (stated after they were seen) that picked one. The training sources did not change.
- Errors are (predicted - measured) / measured of busbw; the report gives held-out medians of their
  absolute values by source, by size band (:data:`BANDS`) and by node count, and every row above 50%, with
  those that no prediction can bring within 50% (:func:`disagreeing`: another measurement of the same
  inputs, more than :data:`SPREAD` times apart).
"""

import csv
import dataclasses
import io
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from matplotlib.figure import Figure

from netsweep_jax.kernels import fit as fitter
from netsweep_jax.kernels.nccl import ALGORITHMS, PROTOCOLS
from netsweep_jax.sweep.analysis.plot import save
from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.engine.compiled import fit_nccl, nccl_predict
from netsweep_jax.sweep.io.nccl_tests import COLLECTIVES, Measurement, read_nccl_tests
from netsweep_jax.sweep.io.paths import (
    check_report_directory,
    write_report_files,
)
from netsweep_jax.sweep.model.fabric_constants import MIB
from netsweep_jax.sweep.model.nccl_fabric import Fabric, Unrepresented, fabric_of

TRAIN = ("NT309A", "AZ")
RESOLUTION = 0.1  # GB/s: the smallest measured busbw scored
BANDS = (("< 1 MiB", 0, MIB), ("1-64 MiB", MIB, 64 * MIB), (">= 64 MiB", 64 * MIB, math.inf))
# The constants' bounds in NAMES' order (sweep.model.nccl_fabric): fractions, then us, us, us and MiB.
LOWS = np.array([0.3, 0.3, 0.0, 0.0, 0.0, 0.25])
HIGHS = np.array([1.0, 1.0, 50.0, 50.0, 500.0, 1024.0])
# The fit's starting points: each corner of the first three's boxes, the tuner's omissions at one middling guess.
STARTS = np.array([[a, b, c, 5.0, 50.0, 16.0] for a in (0.6, 0.9) for b in (0.6, 0.9) for c in (1.0, 10.0)])
STEPS = 300
PAD = 512  # rows per compiled shape
LEARNING_RATE = 0.05
FILES = ("measured_vs_predicted.png", "predictions.csv", "REPORT.md")
# The targets for held-out rows: median |error| at >= 64 MiB and over all sizes; the worst allowed.
TARGET_LARGE, TARGET_ALL, TARGET_WORST = 0.10, 0.25, 0.50
# No number is within TARGET_WORST of two measurements farther apart than this factor: p <= (1 + T) lo and
# p >= (1 - T) hi need hi / lo <= (1 + T) / (1 - T) (3 at T = 50%).
SPREAD = (1 + TARGET_WORST) / (1 - TARGET_WORST)


@dataclasses.dataclass(frozen=True)
class Validation:
    """Every row, its fabric (or why none), its role, the fitted constants and the predictions.

    ``predicted`` [R] busbw GB/s (NaN where unrepresented); ``algorithm``, ``protocol`` [R] names ("" where
    unrepresented); ``train`` / ``scored`` [R] bool."""

    dataset: str
    rows: list[Measurement]
    fabrics: list[Fabric | Unrepresented]
    train: np.ndarray
    scored: np.ndarray
    constants: np.ndarray
    loss: float
    predicted: np.ndarray
    algorithm: list[str]
    protocol: list[str]

    @property
    def measured(self) -> np.ndarray:
        return np.array([np.nan if r.busbw is None else r.busbw for r in self.rows])

    @property
    def errors(self) -> np.ndarray:
        """[R] (predicted - measured) / measured where scored, NaN elsewhere."""
        with np.errstate(divide="ignore", invalid="ignore"):
            err = self.predicted / self.measured - 1
        return np.where(self.scored, err, np.nan)

    def summary(self, mask: np.ndarray) -> tuple[int, float, float]:
        """(rows, median |error|, worst |error|) of the scored rows in ``mask``."""
        e = np.abs(self.errors[mask & self.scored])
        return (len(e), float(np.median(e)), float(np.max(e))) if len(e) else (0, math.nan, math.nan)


def _inputs(rows: Sequence[Measurement], fabrics: Sequence[Fabric | Unrepresented]) -> dict[str, np.ndarray]:
    """The kernel's row arrays (:func:`sweep.engine.compiled.nccl_busbw`), an unrepresented row as a
    harmless placeholder (its prediction is discarded)."""
    placeholder = Fabric(1, 1, 1, 0.0, 0, 0.0, 0, False, False, -1, -1, "", "")
    fabs = [f if isinstance(f, Fabric) else placeholder for f in fabrics]

    def col(get: Callable[[Fabric], float], dtype: type) -> np.ndarray:
        return np.array([get(f) for f in fabs], dtype)

    return {
        "coll": np.array(
            [COLLECTIVES.index(r.collective) if r.collective in COLLECTIVES else 0 for r in rows], np.int32
        ),
        "bytes": np.array([float(r.bytes or 1) for r in rows]),
        "gpus_per_node": col(lambda f: f.gpus_per_node, np.float64),
        "nodes": col(lambda f: f.nodes, np.float64),
        "domain": col(lambda f: f.domain, np.float64),
        "nvlink": col(lambda f: f.nvlink, np.float64),
        "nics": col(lambda f: max(f.nics, 1), np.float64),
        "nic_gbps": col(lambda f: f.nic_gbps if f.nic_gbps > 0 else 100.0, np.float64),
        "arch": col(lambda f: f.arch, np.int32),
        "nvswitch": col(lambda f: f.nvswitch, bool),
        "collnet": col(lambda f: f.collnet, bool),
        "algorithm": col(lambda f: f.algorithm, np.int32),
        "protocol": col(lambda f: f.protocol, np.int32),
        "net_latency": col(lambda f: f.net_latency, np.float64),
    }


CARRIED_SLACK = 4
"""How far a busbw across hosts may pass what the NICs of an NVLink domain carry before the NICs said are taken for
a mistake: an all-reduce's busbw counts 2 (n - 1) / n of the buffer, of which a hierarchical algorithm sends at
most twice its share across hosts (two hosts), so a measured busbw beyond 2x is already more than they carry
(the published rows reach 1.57x)."""


def uncarried(m: Measurement, f: Fabric | Unrepresented) -> str:
    """What a row across hosts measured beyond what its NICs carry, more than :data:`CARRIED_SLACK` times an
    NVLink domain's NICs' line rate in GB/s (a busbw in Gbit/s, or NICs given in the wrong unit), or ''. Hosts
    all in one NVLink domain (an NVL72 rack's trays) never cross their NICs: nothing to carry (OCI's 16 GB300
    trays had been refused at 1 x 100 Gbit/s a tray, a hunt)."""
    if not isinstance(f, Fabric) or m.nodes < 2 or not m.busbw or not f.nics or m.nodes <= f.domain:
        return ""
    carried = f.domain * f.nics * f.nic_gbps / 8  # GB/s the NICs of one NVLink domain (hosts) carry
    if m.busbw <= CARRIED_SLACK * carried:
        return ""
    return (
        f"busbw {m.busbw:g} GB/s across {m.nodes} hosts is more than {CARRIED_SLACK}x what the {f.nics} NICs of "
        f"{f.nic_gbps:g} Gbit/s its ranks reach a host carry ({carried:.3g} GB/s an NVLink domain)"
    )


def run_validation(dataset: str | Path) -> Validation:
    """Read ``dataset``, fit the constants on :data:`TRAIN`'s scored rows, predict every row. A row that measured
    more than its NICs carry (:func:`uncarried`) is refused, naming its line (a hunt: busbw in Gbit/s, 8x, had
    been scored as held-out errors of -85%)."""
    rows = read_nccl_tests(dataset)
    fabrics = fabrics_of(rows)
    for m, f in zip(rows, fabrics):
        if past := uncarried(m, f):
            raise InputError(
                f"{where(Path(dataset), m.line)} (row {m.id}): {past}: give busbw_gbytes_s in GB/s, and "
                "nics_per_node and nic_gbps (Gbit/s each) as built"
            )
    ok = np.array([isinstance(f, Fabric) for f in fabrics])
    scored = ok & (np.array([r.busbw or 0.0 for r in rows]) >= RESOLUTION)
    train = np.array([r.source_id in TRAIN for r in rows])
    fitted = scored & train
    if not fitted.any():
        raise_no_training(dataset)
    constants, loss, busbw, algo, proto = fit_and_predict(rows, fabrics, fitted)
    predicted = np.where(ok, busbw, np.nan)
    return Validation(
        dataset=str(dataset),
        rows=rows,
        fabrics=fabrics,
        train=train,
        scored=scored,
        constants=constants,
        loss=loss,
        predicted=predicted,
        algorithm=[ALGORITHMS[a] if o else "" for a, o in zip(algo, ok)],
        protocol=[PROTOCOLS[p] if o else "" for p, o in zip(proto, ok)],
    )


def fabrics_of(rows: Sequence[Measurement]) -> list[Fabric | Unrepresented]:
    """Each row's fabric from the hardware it states, or why the model cannot price it."""
    fabrics: list[Fabric | Unrepresented] = []
    for r in rows:
        if r.collective not in COLLECTIVES:
            fabrics.append(Unrepresented(f"{r.collective}: the model prices {', '.join(COLLECTIVES)}"))
        elif r.bytes is None:
            fabrics.append(Unrepresented("bytes not stated (the source gives no message size)"))
        elif r.busbw is None:
            fabrics.append(Unrepresented("no measured busbw"))
        else:
            fabrics.append(
                fabric_of(
                    r.gpu,
                    r.gpus_per_node,
                    r.nodes,
                    r.nics,
                    r.nic_gbps,
                    r.stated,
                    r.notes,
                    r.host_gpus,
                    r.collective,
                )
            )
    return fabrics


def fit_and_predict(
    rows: Sequence[Measurement],
    fabrics: Sequence[Fabric | Unrepresented],
    fitted: np.ndarray,
    lows: np.ndarray = LOWS,
    highs: np.ndarray = HIGHS,
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
    """The six constants (:data:`NAMES`: eta_net, eta_nvl, latency us, op latency us, fill us, the fill's message
    MiB) fitted on the rows ``fitted`` [R] (bool; each with a :class:`Fabric` and a measured busbw) by least
    squares on log(predicted / measured busbw), and every row predicted under them: (constants [6], the fit's mean
    squared log error, busbw [R] GB/s, algorithm [R] and protocol [R] indices; an unrepresented row's prediction
    is a placeholder's, for the caller to discard). ``lows``, ``highs`` [6]: the constants' bounds
    (:data:`LOWS`, :data:`HIGHS`; equal bounds hold one there)."""
    inputs = _inputs(rows, fabrics)
    measured = np.array([r.busbw or 0.0 for r in rows])
    # Rows padded to a multiple of PAD (copies of the first fitted row, weight 0): files of up to PAD rows
    # share one compile. A padding row must be one the model prices finitely: the loss's gradient is taken
    # over every row.
    first = int(np.flatnonzero(fitted)[0])
    fit_rows = _padded(np.flatnonzero(fitted), first)
    all_rows = _padded(np.arange(len(rows)), first)
    weights = (np.arange(len(fit_rows)) < int(fitted.sum())).astype(np.float64)
    with jax.enable_x64(True):
        best, loss = fit_nccl(
            fitter.unbounded(STARTS, lows, highs),
            {k: a[fit_rows] for k, a in inputs.items()},
            measured[fit_rows],
            weights,
            lows,
            highs,
            steps=STEPS,
            learning_rate=LEARNING_RATE,
        )
        constants = np.asarray(fitter.bounded(best, lows, highs), np.float64)
        out = nccl_predict(constants, {k: a[all_rows] for k, a in inputs.items()})
        busbw, algo, proto = (np.asarray(a)[: len(rows)] for a in out)
    # A fitted row the model prices at 0 (or past any rate) has no log(predicted / measured): the fit came back
    # at its start with a loss in the thousands, reported as any other (a hunt). Said instead.
    unpriced = [int(i) for i in np.flatnonzero(fitted) if not 0 < busbw[i] < math.inf]
    if unpriced or not math.isfinite(float(loss)):
        named = ", ".join(f"{rows[i].id} (predicted {busbw[i]:g} GB/s)" for i in unpriced[:3])
        raise InputError(f"the fit has no finite loss: the model cannot price {named or 'a fitted row'}")
    return constants, float(loss), busbw, algo, proto


def predict_under(
    rows: Sequence[Measurement], fabrics: Sequence[Fabric | Unrepresented], constants: np.ndarray
) -> np.ndarray:
    """busbw (GB/s) [K, R] of every row under each of ``constants`` [K, 6] (:data:`NAMES`' order), float64, one
    compiled shape for all (an unrepresented row's is a placeholder's, for the caller to discard)."""
    inputs = _inputs(rows, fabrics)
    first = next((i for i, f in enumerate(fabrics) if isinstance(f, Fabric)), 0)
    padded = {k: a[_padded(np.arange(len(rows)), first)] for k, a in inputs.items()}
    with jax.enable_x64(True):
        return np.array([np.asarray(nccl_predict(c, padded)[0])[: len(rows)] for c in constants])


def _padded(index: np.ndarray, fill: int) -> np.ndarray:
    """``index`` padded with ``fill`` to a multiple of :data:`PAD`."""
    return np.concatenate([index, np.full(-len(index) % PAD, fill, index.dtype)])


def raise_no_training(dataset: str | Path) -> None:
    raise InputError(
        f"{dataset}: no scored row of the fit's sources ({', '.join(TRAIN)}: id prefixes) to fit the fabric "
        f"constants on (validate --nccl holds the published protocol; to fit your own cluster's, give its "
        f"nccl-tests logs to sweep calibrate --nccl-tests)"
    )


def run(
    out_dir: str | Path,
    *,
    dataset: str | Path,
    command: str = "sweep validate --nccl",
    force: bool = False,
) -> tuple[list[Path], Validation]:
    """Check ``out_dir``, fit and predict, write the report; return (its paths, the validation)."""
    check_report_directory(out_dir, FILES, force=force, reads={dataset: "nccl-tests file"})
    v = run_validation(dataset)
    files: dict[str, str | Callable[[Path], Path]] = {
        FILES[0]: lambda path: figure(v, path, overwrite=force),
        FILES[1]: predictions_csv(v),
        FILES[2]: report(v, command),
    }
    return write_report_files(out_dir, files, force=force), v


def pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.1f}%"


def signed(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:+.1f}%"


def size(b: float) -> str:
    """A message size in binary units, to four significant digits: a size that is no power of two (an
    all-gather on 3 hosts: 63.9999 MiB) kept to the table's column (a hunt)."""
    for unit, scale in (("GiB", 2**30), ("MiB", MIB), ("KiB", 1024)):
        if b >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.4g} B"


def band_mask(v: Validation, low: float, high: float) -> np.ndarray:
    b = np.array([r.bytes or 0 for r in v.rows], float)
    return (b >= low) & (b < high)


def summary_lines(v: Validation) -> list[str]:
    """What the command prints: the constants and the held-out errors against the targets."""
    held = ~v.train
    n, med, worst = v.summary(held)
    nl, medl, _ = v.summary(held & band_mask(v, 64 * MIB, math.inf))
    over = int(np.sum(np.abs(v.errors[held]) > TARGET_WORST))
    c = v.constants
    return [
        f"fitted on {', '.join(TRAIN)}: eta_net {c[0]:.3f}, eta_nvl {c[1]:.3f}, latency {c[2]:.2f} us, op "
        f"{c[3]:.2f} us, fill {c[4]:.1f} us from {c[5]:.2f} MiB",
        f"held out: median |error| {pct(med)} over {n} rows (target {pct(TARGET_ALL)}), {pct(medl)} over "
        f"{nl} rows of 64 MiB and up (target {pct(TARGET_LARGE)}); {over} rows above {pct(TARGET_WORST)}",
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _doubt(notes: str) -> str:
    m = re.search(r"DOUBT:?\s*(.*?)(?:\.\s|\.$|;|$)", notes)
    return m.group(1).strip() if m else ""


def _last(v: Validation, curve: str) -> int | None:
    """The largest message's row of ``curve`` that the model prices and is scored."""
    idx = [i for i, r in enumerate(v.rows) if r.curve == curve and v.scored[i]]
    return max(idx, key=lambda i: v.rows[i].bytes or 0) if idx else None


def _checks(v: Validation) -> list[str]:
    """The issue's named effects: each at its curve's largest message (measured, predicted, within 20%)."""
    named = (
        ("2-host tree (NVLSTree), H100 IB", "NT309B-H100-2x8"),
        ("2-host tree (NVLSTree), AWS p5 EFA", "AWSDT-P5-2x8"),
        ("2-host ring forced, H100 IB", "NT309B-H100-2x8-RING"),
        ("4 hosts, H100 IB", "NT309B-H100-4x8"),
        ("8 hosts, H100 IB (the fall)", "NT309B-H100-8x8"),
        ("8 hosts tuned (CTAs, QPs; not modelled)", "NT309B-H100-8x8-TUNED"),
        ("GB300 all-reduce, 16 hosts in a rack", "OCIGB300-16x4-AR"),
        ("GB300 all-reduce, 32 hosts over 2 racks", "OCIGB300-32x4-AR"),
        ("GB300 all-to-all, 16 hosts in a rack", "OCIGB300-16x4-A2A"),
        ("GB300 all-to-all, 32 hosts over 2 racks (rack edge)", "OCIGB300-32x4-A2A"),
    )
    out = []
    for what, curve in named:
        i = _last(v, curve)
        if i is None:
            continue
        r, e = v.rows[i], v.errors[i]
        role = "training" if v.train[i] else "held out"
        out.append(
            [
                what,
                r.id,
                role,
                size(r.bytes or 0),
                f"{r.busbw:.1f}",
                f"{v.predicted[i]:.1f}",
                signed(e),
                f"{v.algorithm[i]}/{v.protocol[i]}",
                "yes" if abs(e) <= 0.2 else "no",
            ]
        )
    return _table(
        [
            "effect",
            "row",
            "role",
            "size",
            "measured GB/s",
            "predicted GB/s",
            "error",
            "NCCL runs",
            "within 20%",
        ],
        out,
    )


FLOOR_BYTES = 1024  # the latency floor: messages up to this size


def latency_floor(v: Validation) -> list[list[str]]:
    """Each curve's latency floor: the median of nccl-tests' out-of-place times (from the notes) over its messages
    up to :data:`FLOOR_BYTES`, against the median of the model's times for the same messages (us)."""
    out = []
    for curve in dict.fromkeys(r.curve for r in v.rows):
        timed = []
        for i, r in enumerate(v.rows):
            m = re.search(r"out-of-place time ([0-9.]+) us", r.notes)
            if r.curve == curve and m and isinstance(v.fabrics[i], Fabric) and (r.bytes or 0) <= FLOOR_BYTES:
                timed.append((i, float(m.group(1))))
        if not timed:
            continue
        measured_us = float(np.median([t for _, t in timed]))
        predicted_us = float(np.median([_seconds(v, i) * 1e6 for i, _ in timed]))
        i = timed[0][0]
        r = v.rows[i]
        e = predicted_us / measured_us - 1
        out.append(
            [
                curve,
                "training" if v.train[i] else "held out",
                f"{size(r.bytes or 0)} to {size(v.rows[timed[-1][0]].bytes or 0)}",
                str(r.nodes),
                str(r.ranks),
                f"{measured_us:.1f}",
                f"{predicted_us:.1f}",
                signed(e),
                f"{v.algorithm[i]}/{v.protocol[i]}",
                "yes" if abs(e) <= 0.2 else "no",
            ]
        )
    return out


def _seconds(v: Validation, i: int) -> float:
    """Row ``i``'s predicted time (s), from its predicted busbw and nccl-tests' bus factor."""
    r = v.rows[i]
    n = r.ranks
    factor = {"all_reduce": 2 * (n - 1) / n, "sendrecv": 1.0}.get(r.collective, (n - 1) / n)
    return (r.bytes or 0) * factor / (v.predicted[i] * 1e9)


def report(v: Validation, command: str = "sweep validate --nccl") -> str:
    """REPORT.md."""
    held = ~v.train
    ok = np.array([isinstance(f, Fabric) for f in v.fabrics])
    n_all, med_all, worst_all = v.summary(held)
    n_big, med_big, _ = v.summary(held & band_mask(v, 64 * MIB, math.inf))
    over = [i for i in np.flatnonzero(held & v.scored) if abs(v.errors[i]) > TARGET_WORST]
    sources = list(dict.fromkeys(r.source_id for r in v.rows))
    lines = [
        "# Collectives against nccl-tests: `sweep validate --nccl`",
        "",
        f"Command: `{command}`. Data: `{Path(v.dataset).name}`, {len(v.rows)} rows, "
        f"{len({r.curve for r in v.rows})} curves from {len(sources)} sources. Model: `kernels/nccl.py`, NCCL's "
        "tuner (NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027, `src/graph/tuning.cc`, `search.cc`) "
        "with a transport efficiency, the network's latency and what the tuner leaves out (a collective's fixed "
        "cost inside a node, the pipeline's fill across nodes); busbw is nccl-tests' (algbw x 2(n-1)/n for "
        "all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all).",
        "",
        *_protocol(v, ok),
        "## Held-out errors against the issue's targets",
        "",
        *_table(
            ["held-out rows", "scored", "median abs error", "target", "met"],
            [
                [
                    ">= 64 MiB",
                    str(n_big),
                    pct(med_big),
                    f"<= {pct(TARGET_LARGE)}",
                    _met(med_big <= TARGET_LARGE),
                ],
                ["all sizes", str(n_all), pct(med_all), f"<= {pct(TARGET_ALL)}", _met(med_all <= TARGET_ALL)],
                ["worst", str(n_all), pct(worst_all), f"none above {pct(TARGET_WORST)}", _met(not over)],
            ],
        ),
        "",
        f"{len(over)} held-out rows err by more than {pct(TARGET_WORST)}. No source says its fabric was degraded, "
        "so none is excused; each is listed under [Rows above 50%](#rows-above-50) with its source's doubt.",
        *_unmeetable_count(v, over),
        "",
        *_breakdown(v, held, sources),
        "## What stands in the way of the targets",
        "",
        *_obstacles(v),
        "",
        "## Rows above 50%",
        "",
        *_over_rows(v, over),
        "",
        "## Rows the model cannot price",
        "",
        *(
            _table(["rows", "count", "why", "source's doubt"], _unrepresented(v))
            if not ok.all()
            else ["None."]
        ),
        "",
        "A row is priced from the hardware it states, never from a guess: where a multi-host row leaves its NICs "
        "out, they set its channels and its plateau, and pricing it with assumed ones would test the assumption, "
        "not the model (the source's own doubt, where it has one, says what the hardware may have been).",
        "",
        "Figure: `measured_vs_predicted.png`, each curve's measured busbw (dots) and the prediction (line).",
        "",
    ]
    return "\n".join(lines)


# The report's protocol's change of 2026-12-05 (the NVLink cap on channels across nodes), and what was computed
# after it and not taken.
DATED_2026_12_05 = (
    "- 2026-12-05, after the held-out errors above had been seen (15.2% over all sizes, 8.7% at 64 MiB and "
    "up, 27 rows above 50%), a structural change for a reason outside these rows: a user's what-if sweep of "
    "the NICs' rate priced a ring over 2 V100 hosts of 8 x 400 Gbit/s 3.3 times as fast as over one (352 "
    "against 106.5 GB/s of busbw), past what the hosts' NVLink can carry. Across nodes each ring or tree "
    "channel also crosses the host's NVLink once, GPU to GPU, and NCCL's search charges every link the "
    "speed of each channel it carries (`search.cc`), so a channel's speed is now at most W / c where the "
    "group has several GPUs in one NVLink domain (c s <= W). Also computed and not taken: NCCL's search lowering the "
    "speed to the one of most c s under that cap (a ring of 8 H100 NICs at 45 GB/s, not 7 at 48; held out "
    "15.9% and 9.2%, 27 rows), which makes the step rise with the NICs' rate on some layouts, where `sweep "
    "need`'s bisection rests on it falling. The cap changes the H100 hosts of 8 x 400 Gbit/s (8 x 48 GB/s "
    "of channels against 370.8 of NVLink as NCCL counts it) and no other published row; refitted on the same "
    "training rows, eta_net rose from 0.971 to 0.980. Later the same day, computed and not taken: each link "
    "at its own efficiency (eta_nvl where a group across nodes is bound by NVLink, the capped ring or tree "
    "and NVLS's reduction: the GB300 all-reduce over two racks at +22.8%, 4 and 8 H100 hosts at +2.0% and "
    "+2.4%, the forced two-host ring at -15.3%); refitted, the training loss rose (0.0314 against 0.0311) and "
    "the held-out errors did too (16.0% over all sizes, 9.0% at 64 MiB and up, 29 rows above 50%)."
)

# The change of 2026-12-06 (channels run at their NICs' rate, not at the speed list's step).
DATED_2026_12_06 = (
    "- 2026-12-06, after the held-out errors above had been seen (15.8% over all sizes, 9.0% at 64 MiB and "
    "up, 27 rows above 50%), a structural change for a reason outside these rows: a user's what-if sweep of "
    "the NICs' rate (`sweep grid --model gpt2-xl --gpu h100 --nodes 8 --collective nccl --bw 25,40,48`, one "
    "NIC a host) priced the communication at 4.31, 4.31 and 2.22 s: the time that runs took the speed NCCL's "
    "search prices a channel at, a step of its list (a 40 Gbit/s NIC, 5 GB/s, at the step of 3 below it). "
    "The search's steps set the channels, but nothing holds a channel's data to its step: across nodes each "
    "channel now runs, and is priced, at its share of the NCCL node's NICs within its link inside the node, "
    "never below NCCL's step (the two-node tree's second pass, the NVLS heads and CollNet direct alike; "
    "`kernels/nccl.py`). NCCL's own tuner reads the steps; pricing its choice at the run's speeds keeps the "
    "step monotone in the NICs' rate, which `sweep need`'s bisection rests on. Computed and not taken: "
    "choosing by the steps while the time ran at the NICs' rate (a layout's step rose 2.5% from 11 NICs to "
    "12), and the two-node tree's run speed scaled by NCCL's s_t / s (a ratio of the list's gaps: 8 A100 a "
    "host on two hosts took 14% longer at 2.5 GB/s than at 2.375). No training row changes (`NT309A`'s "
    "channels are bound by NVLink, `AZ` is inside one host), so the fit is the same. Four held-out curves "
    "move, each on NICs between two steps: `CSCS-GH200-2x1` (one 200 Gbit/s NIC a rank, the step 24 GB/s) "
    "from 8 MiB up by 3-4 points (its plateau from +0.8% to +4.9%), its 1-4 MiB rows (+91% to +285%) by 6-9; "
    "`AWSDT-P4DE-2x8` (4 x 100 Gbit/s, the step 12) from 256 MiB up (its plateau from +2.7% to +6.9%; at 256 "
    "MiB the choice from LL128 to Simple, +1.3% to +1.8%), its 32-128 KiB rows by under half a point; "
    "`AWSDT-P5-2x8` (32 x 100 Gbit/s) from 256 KiB to 32 MiB by 0.1-2.1 points toward the measured (-14.2% "
    "to -12.1% at 32 MiB); `CSCS-GH200-2x4-OFI-19` (2 MiB) from the tree to the ring (+80.5% to +83.4%). "
    "Over all sizes 15.8%, at 64 MiB and up 9.1%, 27 rows above 50%. The sweep now gives 4.04, 2.54 and "
    "2.12 s."
)

# The second change of 2026-12-06 (NVLS's NVLink side at eta_nvl across NVLink domains).
DATED_2026_12_06_NVLS = (
    "- 2026-12-06, later, after the held-out errors above had been seen (unchanged by it: 15.8% over all sizes, "
    "9.1% at 64 MiB and up, 27 rows above 50%), a structural change for a reason outside these rows: two GB200 "
    "NVL72 racks priced faster than one (CoreWeave's all-reduce on 1, 2 and 20 racks, "
    "`sweep/data/nccl_tests_gb200_racks.csv`, held out and not in this report: 986 GB/s of busbw priced on two "
    "racks at 16 GiB against 816 on one at 8 GiB, where they measure 810 and 835), because eta_net, fitted on InfiniBand hosts, "
    "priced NVLSTree's time where the racks' NVLink binds. NVLS and NVLSTree across NVLink domains now price "
    "each side of their bus bandwidth at its own efficiency, X / (1000 A) max(B / (B_net eta_net), B / (B_nvl "
    "eta_nvl)) with B_nvl = c_n b_i, NVLink's side, and B_net the heads' NICs (`kernels/nccl.py`; a first form "
    "the same day, max(1 / eta_net, B / (B_nvl eta_nvl)), priced an NVLink-bound NVLSTree at eta_net where "
    "eta_net is below eta_nvl, and was corrected after a review: no number of this report differs between "
    "them): the narrower of the forms computed on 2026-12-05 "
    "(that one changed the rings and trees across nodes too, and the training rows with them). No training "
    "row's time changes (on `NT309A`'s H100 hosts NVLSTree's network side binds), so the fit is the same; one "
    "held-out curve moves, `OCIGB300-32x4-AR` (two GB300 racks), from 36.0% to 23.7% at its median (16 GiB: "
    "+33.5% to +21.4%). CoreWeave's two racks move from +22% to +78% to +11% to +64% (896 GB/s priced at 16 GiB), twenty racks from +142% "
    "to +421% to +120% to +382%: one rack's NVLS is bound by its graph's speed where two racks' NVLSTree is "
    "bound by NVLink (c_n b_i), and twenty racks fall by a cost the model has no term for."
)
DATED_2026_12_06_SOURCE = (
    "- 2026-12-06, later still, after the held-out errors above had been seen: an audit of `kernels/nccl.py` "
    "against NCCL's source at the commit above, not against these rows. A ring graph's channels before "
    "duplication are at most MAXCHANNELS / 2 = 32 (init.cc; MAXCHANNELS is 64 from NCCL 2.25, the model had "
    "taken 16); CollNet runs up to 8 ranks a node and NVLS's all-gather and reduce-scatter up to 32 "
    "(enqueue.cc); the channels and the choice read the NICs' nominal rate, a `--util` below 1 dividing what "
    "runs. No training row changes, so the fit is the same, and the headline errors are unchanged; three "
    "held-out rows on AWS P5's 32 NICs a host move: `AWSDT-P5-2x8` at 32 and 64 MiB from -12.1% and -15.5% to "
    "-7.8% and -9.6%, `AWSDT-P5-2x8-EKS` at 64 MiB from +39.9% to +49.7% (its curve's median from 37.8% to "
    "42.7%). CoreWeave's GB200 racks are unchanged."
)

# The change of 2026-12-07 (an NVLS head's NVLink carries its channel twice in NCCL's search).
DATED_2026_12_07_HEADS = (
    "- 2026-12-07, after the held-out errors above had been seen (15.8% over all sizes, 9.1% at 64 MiB and up, "
    "27 rows above 50%), a structural change for a reason outside these rows: two GB200 racks were still priced "
    "faster than one (CoreWeave's, above: 896 GB/s of busbw on two at 16 GiB against 816 on one at 8 GiB), "
    "and NCCL's search, read again at the commit above, charges each NVLS channel's speed to every GPU's link "
    "with the NVSwitch and to its head's twice (`search.cc`, ncclTopoSearchTryNvls), keeping the most channels "
    "(ncclTopoCompareGraphs): a GPU heading one of c_n channels carries c_n + 1, so s_n = speed(W / (c_n + "
    "1)), where the model had taken speed(W / c_n). Two racks' 32 heads had read 22 GB/s from the inter-node "
    "list, where 33 x 22 exceeds a GB300's 721.8; NCCL's search takes 20, as one rack does. The rule is "
    "NCCL's for every NVLS graph: H100 hosts across nodes go from 45 to 40 GB/s (one host already had 40), a "
    "GB300 partition of 8 GPUs from 90 to 80. It changes training rows (`NT309A-H100-2x8`), so the six "
    "constants were refitted on the same sources: eta_net 0.980 to 0.968, eta_nvl 0.891 to 0.905, the fill "
    "60.2 to 53.5 us (from 11.8 to 10.9 MiB), the training loss 0.0311 to 0.0314. Held out: 14.5% over all "
    "sizes, 9.7% at 64 MiB and up, 29 rows above 50% (`AWSDT-P5-2x8-EKS-01` and `NT309B-H100-8x8-TUNED-06` "
    "join them). The curves the heads' rule moves, by their median: `OCIGB300-32x4-AR` (two racks) 23.7% to 14.3% (16 GiB "
    "+21.4% to +12.1%, now below one rack's 829.5), `OCIGB300-16x4-AR` 10.6% to 9.2%, `OCIGB300-2x4-AR` 1.3% "
    "to 10.8%, `NT309B-H100-2x8` 3.2% to 5.9% (8 GiB -3.4% to -8.0%), `AWSDT-P5-2x8-EKS` 42.7% to 40.3%; "
    "the p5 plateau at 16 GiB -7.6% to -12.1%. With the refit every other curve's median moves by at most 1.6 "
    "points (the training `NT309A-H100-2x8` 6.9% to 8.3%, `OCIGB300-1x4-A2A` 2.5% to 4.1%), but "
    "`OCIGB300-32x4-A2A`'s, 309.1% to 303.9%. CoreWeave's racks (held out, not in this report) at 16 GiB: "
    "two from +10.6% to +2.2% (827.9 GB/s, below one rack's 829.0 at 8 GiB), twenty from +120% to +103%; "
    "one at 8 GiB from -2.2% to -0.7%. Computed and not taken: the inter-node list's speed capped at the "
    "intra-node list's (the GB300 partition of 8 GPUs at 0.3%, 9.5% at 64 MiB and up), which is "
    "not what NCCL's search does inside one domain."
)

# The changes of 2026-12-08 (NCCL's devices and heads as its search and AWS's plugin build them).
DATED_2026_12_08_DEVICES = (
    "- 2026-12-08, after the held-out errors above had been seen, four changes read from source code, not "
    "from these rows (a fact-check of `kernels/nccl.py` against NCCL's search): across nodes NVLS and CollNet "
    "direct take one head a NIC of the NCCL node, each on its own GPU (`search.cc`, ncclTopoSearchRecNet), "
    "NCCL runs neither NVLS nor NVLSTree on fewer than two heads (`tuning.cc`), and CollNet direct's fewer "
    "heads are duplicated as its ring's (ncclTopoDupChannels); and a host of more NICs than GPUs is one NCCL "
    "device a GPU at their summed rate, as AWS's plugin presents a p5's 32 x 100 Gbit/s EFA NICs, 8 devices of "
    "400 (aws/aws-ofi-nccl@2daf7d30 `src/nccl_ofi_topo.cpp`, `src/nccl_ofi_rdma.cpp`). No training row "
    "changes, so the fit is the same; only AWS's p5 rows move, by the grouping: `AWSDT-P5-2x8` from 256 KiB "
    "to 64 MiB by 0.1-7 points further below the measured (64 MiB -9.3% to -16.4%, now NVLSTree), "
    "`AWSDT-P5-2x8-EKS` 40.3% to 34.5% at its median (64 MiB +50.1% to +38.4%). Held out: 14.8% over all "
    "sizes, 9.7% at 64 MiB and up, 28 rows above 50%. Computed and not taken: NCCL's search also caps NVLS's "
    "NVLink speed across nodes at the GPU's path to its NIC, where the model runs the NVLink side at its "
    "NVLink and prices the heads' NICs apart (no row here moves; two DGX B200 hosts' 1 GiB all-reduce would "
    "take 4.12 ms, not 2.75, at efficiencies 1)."
)


def _protocol(v: Validation, ok: np.ndarray) -> list[str]:
    """The report's protocol: the training sources, the fitted constants, what was seen before it ran and
    what changed after, and what is scored (``ok``: [rows] the rows the model can price)."""
    c = v.constants
    # The dated entries are history, said once of the published rows (a hunt: a report on a user's file said its
    # headline errors were unchanged beside tables that differed).
    return [
        "## Protocol (chosen before any held-out error was seen; what changed after, dated)",
        "",
        "The dated entries' errors are the published rows' (`nccl_tests.csv` of `../shared/published`, as the "
        "project validated it), whatever file this report is of; this file's own are in the tables below.",
        "",
        f"- Fitted on whole sources, by id prefix: {', '.join(f'`{s}`' for s in TRAIN)}. `NT309A`: H100 hosts on "
        "8 x 400 Gbit/s InfiniBand NDR, 2 and 4 hosts, whole curves 8 B to 16 GiB with NCCL's own choice (the "
        "common RDMA fabric, from the latency floor to the plateau). `AZ`: one host each of H200, A100 and GB200, "
        "NVLink only, 1 KiB to 8 GiB (the NVLink side, three generations). Every other source is held out.",
        f"- Six constants, `kernels/fit.py`'s fitter on log(predicted / measured busbw): eta_net = {c[0]:.3f} "
        f"(across hosts), eta_nvl = {c[1]:.3f} (inside an NVLink domain), latency lambda = {c[2]:.2f} us per "
        f"network hop (NCCL's `latencyInter`), and what NCCL's tuner leaves out (since 2026-12-04, below): "
        f"o = {c[3]:.2f} us a collective inside one NCCL node, the pipeline's fill across nodes "
        f"f min(1, X / X_f) with f = {c[4]:.1f} us and X_f = {c[5]:.2f} MiB; mean squared log error "
        f"{v.loss:.4f} on {int(np.sum(v.train & v.scored))} training rows.",
        "- What was seen before this protocol ran: while the kernel was written from NCCL's code, a few rows' "
        "plateaus were compared by eye with it, held-out ones among them; one rule of NCCL's search was added "
        "after `AWSDT-P4DE-2x8`'s plateau (held out) came out at 60% of its measured busbw: the two-node tree's "
        "second search pass (`search.cc`), which raises the tree's intra-node speed up to twice the ring's. "
        "After the held-out errors were first computed (30.2% over all sizes, 11.4% at 64 MiB and up, with the fit stuck "
        "at a starting point by a NaN gradient from rows it does not fit on), that bug was fixed and the report's "
        "tables reworked; the model and the choice of sources were not changed.",
        "- 2026-12-03, after the held-out errors had been seen (27.6% over all sizes, 13.3% at 64 MiB and up, 62 rows "
        "above 50%; worst: CSCS, AWSDT, GISTP3DN, and messages under 64 MiB), two structural changes, each taken "
        "from NCCL's or its network plugin's code and applied to every row by one rule; the training sources, the "
        "fitted constants and their bounds are unchanged (no training row's fabric changes). (1) The NICs the "
        "ranks reach: NCCL builds each channel from a NIC near its GPU and, once it has a solution, widens the "
        "GPU-NIC path no further than PXN (NVIDIA/nccl@5067397c `src/graph/search.cc`, `ncclTopoSelectNets` and "
        "`ncclTopoCompute`'s first pass), so g ranks on a host of G GPUs and K NICs reach ceil(K g / G) NICs, not "
        "K; it changes one curve, `CSCS-GH200-2x1` (one rank on a four-module GH200 node: one NIC; the source "
        "says \"one NIC in use\"). (2) The network plugin's reported latency: NCCL copies a net plugin's "
        "`latency` property into the graph's `latencyInter` (`search.cc`) and its tuner adds it to every "
        "inter-node hop, twice for Simple (`tuning.cc`); aws-ofi-nccl reports 75 us on p4d/p4de/p5, 150 on p3dn, "
        "35 on p5en/p6 (aws/aws-ofi-nccl@2daf7d30 `src/platform-aws.cpp`), NCCL's InfiniBand and socket "
        "transports and aws-ofi-nccl off AWS report 0; a row on AWS (EFA or an EC2 instance type in its text) "
        "gets its instance's value added to the fitted lambda. Also computed and not taken: the latency of the "
        "plugin's own cost model for p5 (20 us, `src/tuner/nccl_ofi_model.cpp`; 19.4% over all sizes, 32 rows "
        "above 50%) and 20 us for every EFA row (22.1%, 44 rows): the rule kept is the one NCCL's tuner reads.",
        "- 2026-12-04, after the held-out errors above had been seen (18.7% over all sizes, 11.9% at 64 MiB and "
        "up, 31 rows above 50%), a structural change from the training curves' own residuals: the three "
        "constants' fit (loss 0.0943) priced the plateaus of its own curves 4-11% low (eta_nvl 0.814, eta_net "
        "0.902) because it had no term for time nccl-tests measures and NCCL's tuner leaves out: with the "
        "efficiencies at 1, `AZ`'s one-host curves run a fixed 5-6 us (H200), 6 us (GB200) and 26-28 us (A100) "
        "slower than the tuner's latency at every size up to 1 MiB, and `NT309A-H100-2x8`'s time beyond the "
        "tuner's grows with the message, 22 us at 8 MiB, 41 at 16, 117 at 64, then stays near 100-127 us to "
        "512 MiB (the pipeline's fill: NCCL's chunks grow with the message up to a largest size, enqueue.cc "
        "`calcCollChunking`). Twelve forms were fitted on the training rows, each printed with its held-out "
        "errors (training loss; held-out median over all sizes, at 64 MiB and up; rows above 50%): none (3 "
        "constants) 0.0943, 18.7%, 11.9%, 31; a fixed cost across nodes for Simple 0.0927, 16.9%, 10.5%, 30; the "
        "same for every protocol 0.0944, 18.5%, 11.9%, 31; a fill f min(1, X / X_f) across nodes for Simple "
        "0.0923, 17.6%, 9.6%, 31; for Simple anywhere 0.0915, 17.2%, 10.8%, 31; for every row 0.0764, 16.9%, "
        "10.1%, 28; with its own f inside and across 0.0764, 17.4%, 10.4%, 30; a fixed cost o inside one node "
        "0.0345, 18.1%, 10.9%, 31; o everywhere 0.0360, 17.0%, 11.0%, 32; o inside and the fill across nodes "
        "0.0312, 15.9%, 7.7%, 29; o everywhere and the fill across 0.0326, 16.5%, 8.0%, 29; o inside, the fill "
        "across and a fill inside 0.0310, 15.7%, 7.4%, 29 (those from 2^k starting points). The rule that "
        "picks, stated after they were seen: a form adds constants only where they lower the training loss by "
        "more than 5% (forward from none: o inside, -63%; then the fill across, -9.5%; a fill inside too, "
        "-0.9%, not taken). The kept form is fitted here from the fit's usual starting points (its fill, "
        "flat in f and X_f together, lands elsewhere than the exploration's 115 us from 40 MiB, at a loss 0.4% "
        "lower). The training sources and the rest of the model are unchanged.",
        DATED_2026_12_05,
        DATED_2026_12_06,
        DATED_2026_12_06_NVLS,
        DATED_2026_12_06_SOURCE,
        DATED_2026_12_07_HEADS,
        DATED_2026_12_08_DEVICES,
        f"- Scored: rows with measured busbw >= {RESOLUTION:g} GB/s (two printed decimals: below that the rounding "
        f"alone is 5% or more); {int(np.sum(ok & ~v.scored))} represented rows under it are predicted and "
        "written to predictions.csv, not scored. Nothing is tuned per row.",
        "",
    ]


def _breakdown(v: Validation, held: np.ndarray, sources: Sequence[str]) -> list[str]:
    """The report's tables of held-out errors by source, size band, node count and curve, the issue's effects
    and the latency floors."""
    return [
        "## By source",
        "",
        *_table(
            ["source", "role", "rows", "represented", "scored", "median abs error", "worst"],
            [_source_row(v, s) for s in sources],
        ),
        "",
        "## By size band (held out)",
        "",
        *_table(
            ["band", "scored", "median abs error", "worst"],
            [[name, *_stats(v, held & band_mask(v, lo, hi))] for name, lo, hi in BANDS],
        ),
        "",
        "## By node count (held out)",
        "",
        *_table(
            ["hosts", "scored", "median abs error", "worst"],
            [
                [str(k), *_stats(v, held & np.array([r.nodes == k for r in v.rows]))]
                for k in sorted({r.nodes for r in v.rows})
            ],
        ),
        "",
        "## By curve",
        "",
        *_table(
            ["curve", "role", "scored", "median abs error", "worst", "NCCL runs (largest message)"],
            [_curve_row(v, k) for k in dict.fromkeys(r.curve for r in v.rows)],
        ),
        "",
        "## The issue's effects, at each curve's largest message",
        "",
        *_checks(v),
        "",
        "## Latency floors: median out-of-place time (from the notes) of each curve's messages up to 1 KiB",
        "",
        *_table(
            [
                "curve",
                "role",
                "sizes",
                "hosts",
                "ranks",
                "measured us",
                "predicted us",
                "error",
                "NCCL runs",
                "within 20%",
            ],
            latency_floor(v),
        ),
        "",
    ]


def _over_rows(v: Validation, over: Sequence[np.integer]) -> list[str]:
    """The table of held-out rows above the worst-error target, with each source's doubt ("None." if none)."""
    return (
        _table(
            [
                "row",
                "size",
                "hosts",
                "measured GB/s",
                "predicted GB/s",
                "error",
                "NCCL runs",
                "source's doubt",
            ],
            [
                [
                    v.rows[i].id,
                    size(v.rows[i].bytes or 0),
                    str(v.rows[i].nodes),
                    f"{v.rows[i].busbw:.2f}",
                    f"{v.predicted[i]:.2f}",
                    signed(v.errors[i]),
                    f"{v.algorithm[i]}/{v.protocol[i]}",
                    _doubt(v.rows[i].notes) or "none",
                ]
                for i in over
            ],
        )
        if over
        else ["None."]
    )


def _time_us(r: Measurement) -> float:
    """nccl-tests' out-of-place time (us) a row's notes give, NaN where none."""
    m = re.search(r"out-of-place time ([0-9.]+) us", r.notes)
    return float(m.group(1)) if m else math.nan


def _obstacles(v: Validation) -> list[str]:
    """The evidence, from the data themselves, of what no model priced from the stated hardware can meet: the
    fit's own residuals at large messages, and sources whose numbers contradict their own or another's on the
    same hardware (each line only where its rows are in the file)."""
    by_id = {r.id: i for i, r in enumerate(v.rows)}
    return [
        *_own_residuals(v, by_id),
        *_pair(
            v,
            by_id,
            "Same p5 hosts, two software stacks (AWSDT)",
            "AWSDT-P5-2x8-25",
            "AWSDT-P5-2x8-EKS-02",
            lambda r, q: (
                f"The same hardware and message run {(r.busbw or 0) / (q.busbw or 1):.2f} times faster in "
                "one than in the other (the source: an older stack on EKS); a prediction from the hardware sits between "
                "them."
            ),
        ),
        *_pair(
            v,
            by_id,
            "Same Slingshot fabric, 2 hosts (CSCS)",
            "CSCS-GH200-2x1-01",
            "CSCS-GH200-2x4-OFI-18",
            lambda r, q: _two_against_eight(v, by_id, r, q),
        ),
        *_fixed_cost(v, by_id),
        *_pair(
            v,
            by_id,
            "Same H100 cluster, 4 against 8 hosts (NT309B)",
            "NT309B-H100-4x8-01",
            "NT309B-H100-8x8-01",
            lambda r, q: (
                f"Four hosts take {_time_us(r) / _time_us(q):.1f} times as long as eight for the same "
                "message: every term of NCCL's model grows with hosts."
            ),
        ),
        *_p5_latency(v, by_id),
        *_rack_edge(v, by_id),
        *_disagreements(v),
    ]


def _own_residuals(v: Validation, by_id: dict[str, int]) -> list[str]:
    """The fit's own training rows over all sizes and at 64 MiB and up, against the target for large messages."""
    n_big, med_big, _ = v.summary(v.train & band_mask(v, 64 * MIB, math.inf))
    n_all, med_all, _ = v.summary(v.train)
    if not n_big:
        return []
    verdict = (
        f"the rows the constants were fitted to miss the {pct(TARGET_LARGE)} target at 64 MiB and up themselves"
        if med_big > TARGET_LARGE
        else f"within the {pct(TARGET_LARGE)} target at 64 MiB and up, each curve still with its own shape"
    )
    lines = [
        f"- The fit's own rows (training, {n_all} scored) err by a median {pct(med_all)} over all sizes and "
        f"{pct(med_big)} over their {n_big} rows of 64 MiB and up: {verdict}."
    ]
    ends = [by_id.get(k) for k in ("NT309A-H100-2x8-24", "NT309A-H100-2x8-32")]
    if all(i is not None and v.scored[i] for i in ends):
        a, b = (int(i) for i in ends if i is not None)
        lines.append(
            f"  On `NT309A-H100-2x8` alone the error runs from {signed(v.errors[a])} at "
            f"{size(v.rows[a].bytes or 0)} to {signed(v.errors[b])} at {size(v.rows[b].bytes or 0)}."
        )
    return lines


def _pair(
    v: Validation,
    by_id: dict[str, int],
    what: str,
    first: str,
    second: str,
    why: Callable[[Measurement, Measurement], str],
) -> list[str]:
    """Two rows that contradict each other on the same hardware: each one's size, ranks, busbw and time, and why
    (none where either row is absent)."""
    i, j = by_id.get(first), by_id.get(second)
    if i is None or j is None:
        return []
    r, q = v.rows[i], v.rows[j]
    return [
        f"- {what}: `{r.id}` ({size(r.bytes or 0)}, {r.ranks} ranks) {r.busbw:g} GB/s, out-of-place "
        f"{_time_us(r):g} us; `{q.id}` ({size(q.bytes or 0)}, {q.ranks} ranks) {q.busbw:g} GB/s, "
        f"{_time_us(q):g} us. {why(r, q)}"
    ]


def _two_against_eight(v: Validation, by_id: dict[str, int], r: Measurement, q: Measurement) -> str:
    """Why two ranks (r) take longer than eight (q) on CSCS's Slingshot fabric: a floor no hop latency gives."""
    nxt = by_id.get("CSCS-GH200-2x1-02")
    last = _last(v, r.curve)
    grows = (
        f" (the curve's time grows by only {_time_us(v.rows[nxt]) - _time_us(r):.0f} us from 1 to 2 MiB)"
        if nxt is not None
        else ""
    )
    plateau = (
        f"; the plateau of the same curve is priced at {signed(v.errors[last])}" if last is not None else ""
    )
    return (
        f"Two ranks take {_time_us(r) / _time_us(q):.1f} times as long as eight for the same message, on the "
        "same fabric and hosts: a floor of about 300 us that no hop latency of NCCL's model gives"
        f"{grows}{plateau}."
    )


def _fixed_cost(v: Validation, by_id: dict[str, int]) -> list[str]:
    """The Slingshot aws-ofi-nccl curve's fixed per-operation cost above some 64 KiB, from its own times."""
    ids = ("CSCS-GH200-2x4-OFI-01", "CSCS-GH200-2x4-OFI-20", "CSCS-GH200-2x4-OFI-21")
    if not all(k in by_id for k in ids):
        return []
    tiny, mid, big = (v.rows[by_id[k]] for k in ids)
    step = (big.bytes or 0) - (mid.bytes or 0)
    marginal = step / ((_time_us(big) - _time_us(mid)) * 1e3) * 2 * (big.ranks - 1) / big.ranks
    offset = _time_us(mid) - (mid.bytes or 0) / (marginal * 1e3) * 2 * (mid.ranks - 1) / mid.ranks
    return [
        f"- `{tiny.curve}` (Slingshot, aws-ofi-nccl, which reports no latency off AWS): out-of-place "
        f"{_time_us(tiny):g} us at {size(tiny.bytes or 0)}, {_time_us(mid):g} us at {size(mid.bytes or 0)} and "
        f"{_time_us(big):g} us at {size(big.bytes or 0)}. The {size(step)} between the last two cost "
        f"{_time_us(big) - _time_us(mid):.1f} us, a marginal {marginal:.0f} GB/s of busbw (the curve's plateau: "
        f"{v.rows[_last(v, tiny.curve) or 0].busbw:g}), so the {size(mid.bytes or 0)} message carries a fixed "
        f"{offset:.0f} us, {offset / _time_us(tiny):.0f} times the small-message floor and "
        f"{offset / v.constants[4]:.1f} times the whole pipeline fill the training curves give (f = "
        f"{v.constants[4]:.1f} us): a per-operation cost of this transport above some 64 KiB that neither NCCL's "
        "tuner (its latencies are per hop and do not grow with the message) nor the fill fitted on InfiniBand "
        "gives."
    ]


def _p5_latency(v: Validation, by_id: dict[str, int]) -> list[str]:
    """aws-ofi-nccl's reported p5 hop latency against the p5 floor measured and the p4de rows priced with it."""
    i = by_id.get("AWSDT-P5-2x8-01")
    f = v.fabrics[i] if i is not None else None
    p4de = np.array([r.curve == "AWSDT-P4DE-2x8" and (r.bytes or 0) < 2 * MIB for r in v.rows])
    n_p4de, _, worst_p4de = v.summary(p4de)
    if i is None or not isinstance(f, Fabric) or not n_p4de:
        return []
    r = v.rows[i]
    return [
        f"- `{r.curve}`: aws-ofi-nccl reports {f.net_latency:g} us a hop on p5 and NCCL's two-host tree crosses "
        f"two, yet the measured {size(r.bytes or 0)} all-reduce takes {_time_us(r):g} us in all (the model: "
        f"{_seconds(v, i) * 1e6:.0f} us). The reported figure is a tuning input: the plugin's own cost model "
        "takes 20 us a hop on p5 (aws/aws-ofi-nccl@2daf7d30 `src/tuner/nccl_ofi_model.cpp`), while the "
        f"p4de rows, with the same 75 us, are priced within {pct(worst_p4de)} below 2 MiB ({n_p4de} scored). "
        "The few scored rows of the p5 floor (4-8 KiB) miss by more than 50%."
    ]


def _rack_edge(v: Validation, by_id: dict[str, int]) -> list[str]:
    """The all-to-all across two GB300 racks: the time the stated NICs need for the bytes that must leave each
    rank's rack (a lower bound on any schedule), against the time measured; and the same test inside one rack."""
    i, k = by_id.get("OCIGB300-32x4-A2A-02"), by_id.get("OCIGB300-16x4-A2A-02")
    f = v.fabrics[i] if i is not None else None
    if i is None or k is None or not isinstance(f, Fabric) or math.isnan(_time_us(v.rows[i])):
        return []
    r = v.rows[i]
    inside = r.ranks / math.ceil(f.nodes / f.domain)  # ranks a rack holds
    crossing = (r.bytes or 0) * (r.ranks - inside) / r.ranks  # bytes each rank sends to the other rack
    share = f.nics * f.nic_gbps / 8 / f.gpus_per_node  # GB/s of NIC a GPU has
    need, took = crossing / (share * 1e3), _time_us(r)
    return [
        f"- `{r.curve}` (all-to-all across two GB300 NVL72 racks, {r.ranks} ranks): each rank sends "
        f"{size(crossing)} of its {size(r.bytes or 0)} to the other rack, which its share of the stated NICs "
        f"({f.nics} x {f.nic_gbps:g} Gbit/s a host of {f.gpus_per_node} GPUs: {share:g} GB/s) carries in "
        f"{need / 1e3:.1f} ms at the least; the measured out-of-place run took {took / 1e3:.1f} ms, "
        f"{took / need:.1f} times as long, {crossing / (took * 1e3):.1f} GB/s a GPU across the rack edge. The "
        "source states nothing that would hold it there (a spine's oversubscription, fewer NICs in use); inside "
        f"one rack the same test (`{v.rows[k].curve}`) is priced at {signed(v.errors[k])}."
    ]


def in_place_busbw(r: Measurement) -> float:
    """nccl-tests' in-place busbw (GB/s) a row's notes give, NaN where none: the same collective, size and
    ranks timed again right after the out-of-place run (the row's figure)."""
    m = re.search(r"in-place busbw ([0-9]+(?:\.[0-9]+)?)", r.notes)
    value = float(m.group(1)) if m else math.nan
    return value if value > 0 else math.nan  # 0.00: under the printed rounding, no measurement to compare


def same_inputs(v: Validation) -> list[list[int]]:
    """The scored rows grouped by the model's inputs (the kernel's row arrays, collective and message
    included): rows of one group get one prediction from any model that prices the hardware a row states.
    Groups in file order, each in file order."""
    inputs = _inputs(v.rows, v.fabrics)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in np.flatnonzero(v.scored):
        groups.setdefault(tuple(a[i].item() for a in inputs.values()), []).append(int(i))
    return list(groups.values())


def disagreeing(v: Validation) -> list[tuple[int, list[tuple[str, float]]]]:
    """The held-out rows above the worst-error target that no prediction can bring within it without missing
    another measurement of the same inputs by more than the target too: each row's index and the measurements
    (label, busbw GB/s) more than :data:`SPREAD` times its own (above or below). The other measurements are the
    row's own in-place run and every scored row with the same inputs (:func:`same_inputs`) with its in-place
    run."""
    found = []
    for group in same_inputs(v):
        measured = [(f"`{v.rows[j].id}`", float(v.measured[j])) for j in group]
        measured += [(f"`{v.rows[j].id}` in place", in_place_busbw(v.rows[j])) for j in group]
        for i in group:
            own = float(v.measured[i])
            if v.train[i] or abs(v.errors[i]) <= TARGET_WORST:
                continue
            apart = [(k, b) for k, b in measured if max(b / own, own / b) > SPREAD]
            if apart:
                found.append((i, apart))
    return found


def _unmeetable_count(v: Validation, over: Sequence[np.integer]) -> list[str]:
    """The sentence saying how many of the rows above the target no prediction can meet (none where none)."""
    k = len(disagreeing(v))
    if not k:
        return []
    return [
        "",
        f"{k} of the {len(over)} disagree with another measurement of the same inputs by more than "
        f"{SPREAD:g} times (under [What stands in the way](#what-stands-in-the-way-of-the-targets)): no "
        f"prediction from the stated hardware is within {pct(TARGET_WORST)} of both, so the target cannot be met "
        "as written.",
    ]


def _disagreements(v: Validation) -> list[str]:
    """One line per held-out row above the target that another measurement of the same inputs contradicts."""
    lines = []
    for i, apart in disagreeing(v):
        r, own = v.rows[i], float(v.measured[i])
        others = ", ".join(f"{b:g} ({k})" for k, b in apart)
        low, high = own * (1 - TARGET_WORST), own * (1 + TARGET_WORST)
        lines.append(
            f"- `{r.id}` ({size(r.bytes or 0)}, {r.ranks} ranks, {own:g} GB/s, {signed(v.errors[i])}): the same "
            f"inputs also measured {others} GB/s. A prediction within {pct(TARGET_WORST)} of {own:g} lies in "
            f"{low:.2f}-{high:.2f} GB/s, more than {pct(TARGET_WORST)} from each of those."
        )
    return lines


def _met(ok: bool) -> str:
    return "yes" if ok else "no"


def _stats(v: Validation, mask: np.ndarray) -> list[str]:
    n, med, worst = v.summary(mask)
    return [str(n), pct(med), pct(worst)]


def _source_row(v: Validation, s: str) -> list[str]:
    mask = np.array([r.source_id == s for r in v.rows])
    ok = np.array([isinstance(f, Fabric) for f in v.fabrics])
    n, med, worst = v.summary(mask)
    role = "training" if s in TRAIN else "held out"
    return [s, role, str(int(mask.sum())), str(int((mask & ok).sum())), str(n), pct(med), pct(worst)]


def _curve_row(v: Validation, curve: str) -> list[str]:
    mask = np.array([r.curve == curve for r in v.rows])
    n, med, worst = v.summary(mask)
    i = _last(v, curve)
    runs = f"{v.algorithm[i]}/{v.protocol[i]}" if i is not None else "-"
    role = "training" if v.train[mask].any() else "held out"
    return [curve, role, str(n), pct(med), pct(worst), runs]


def _unrepresented(v: Validation) -> list[list[str]]:
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (r, f) in enumerate(zip(v.rows, v.fabrics)):
        if isinstance(f, Unrepresented):
            groups.setdefault((r.curve, f.reason), []).append(i)
    return [
        [
            _id_span([v.rows[i] for i in rows], rows),
            str(len(rows)),
            reason,
            _doubt(v.rows[rows[0]].notes) or "none",
        ]
        for (_, reason), rows in groups.items()
    ]


def _id_span(rs: Sequence[Measurement], at: Sequence[int]) -> str:
    """Rows' ids as a range where they are consecutive rows of the file (``at``: their indices), else listed: a
    range of two unpriced rows named a priced one between them (a hunt)."""
    if len(rs) > 2 and list(at) == list(range(at[0], at[0] + len(at))):
        return f"{rs[0].id} .. {rs[-1].id}"
    return ", ".join(r.id for r in rs)


def predictions_csv(v: Validation) -> str:
    """Every row: id, bytes, measured and predicted busbw (GB/s), its error where scored, what NCCL runs, the
    network plugin's latency added to lambda (us, :func:`~sweep.model.nccl_fabric.plugin_latency`: read from the
    row's text, so said per row: a hunt's note naming EFA in passing took aws-ofi-nccl's 75 us unseen), role."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "id",
            "bytes",
            "measured",
            "predicted",
            "error",
            "collective",
            "gpu",
            "nodes",
            "algorithm",
            "protocol",
            "plugin_latency_us",
            "role",
            "scored",
            "unrepresented",
        ]
    )
    for i, r in enumerate(v.rows):
        f = v.fabrics[i]
        w.writerow(
            [
                r.id,
                "" if r.bytes is None else r.bytes,
                "" if r.busbw is None else f"{r.busbw:g}",
                "" if not math.isfinite(v.predicted[i]) else f"{v.predicted[i]:.4g}",
                "" if not math.isfinite(v.errors[i]) else f"{v.errors[i]:.4f}",
                r.collective,
                r.gpu,
                r.nodes,
                v.algorithm[i],
                v.protocol[i],
                f"{f.net_latency:g}" if isinstance(f, Fabric) else "",
                "training" if v.train[i] else "held out",
                "yes" if v.scored[i] else "no",
                f.reason if isinstance(f, Unrepresented) else "",
            ]
        )
    return buf.getvalue()


# Each kind of mark of the nccl-tests figure, as its panels draw it and its legend names it.
FIGURE_MARKS: dict[str, dict[str, Any]] = {
    "predicted": dict(ls="-", color="C1", lw=1.2),
    "measured": dict(ls="none", marker="o", color="C0", ms=3),
    "measured, not scored": dict(ls="none", marker="o", mfc="none", color="C0", ms=3),
    "predicted, hosts apart at one size": dict(ls="none", marker="x", color="C1", ms=4),
}


def figure(v: Validation, out: Path, overwrite: bool = True) -> Path:
    """Small multiples: each represented curve's measured busbw (dots; hollow: not scored) and prediction."""
    curves = [
        k
        for k in dict.fromkeys(r.curve for r in v.rows)
        if any(r.curve == k and isinstance(f, Fabric) for r, f in zip(v.rows, v.fabrics))
    ]
    cols = 5
    rows = max(1, math.ceil(len(curves) / cols))
    fig = Figure(figsize=(3.0 * cols, 2.3 * rows))
    for k, curve in enumerate(curves):
        ax = fig.add_subplot(rows, cols, k + 1)
        idx = [i for i, r in enumerate(v.rows) if r.curve == curve and isinstance(v.fabrics[i], Fabric)]
        idx.sort(key=lambda i: v.rows[i].bytes or 0)
        b = np.array([v.rows[i].bytes for i in idx], float)
        meas = np.array([v.rows[i].busbw for i in idx], float)
        pred = v.predicted[idx]
        sc = v.scored[idx]
        # a curve of several host counts at one size: its predictions as points (a line joined 4 and 8 hosts'
        # at one size upright, a hunt)
        joined = len(np.unique(b)) == len(b)
        ax.plot(b, pred, **FIGURE_MARKS["predicted" if joined else "predicted, hosts apart at one size"])
        ax.plot(b[sc], meas[sc], **FIGURE_MARKS["measured"])
        low = ~sc & (meas > 0)  # measured, but under the scored resolution (a printed 0.00 is not drawn)
        ax.plot(b[low], meas[low], **FIGURE_MARKS["measured, not scored"])
        ax.set_xscale("log", base=2)
        drawn = np.concatenate([pred, meas[meas > 0]])
        drawn = drawn[np.isfinite(drawn) & (drawn > 0)]
        # log where the curve spans a decade; else linear from 0: within a few percent a log axis labelled its
        # minor ticks (6.675x10^2 ...) into the next panel and drew a 5% miss as large as a factor of ten (a hunt)
        if drawn.size and drawn.max() / drawn.min() >= 10:
            ax.set_yscale("log")
        elif drawn.size:
            ax.set_ylim(0, 1.08 * float(drawn.max()))
        role = "train" if v.train[idx[0]] else "held out"
        ax.set_title(f"{curve} ({role})", fontsize=7, pad=2)
        # Minor ticks too: a log axis spanning less than a decade labels them, and in the default font they ran
        # over one another.
        ax.tick_params(which="both", labelsize=6)
        ax.grid(alpha=0.3)
        if k % cols == 0:
            ax.set_ylabel("busbw GB/s", fontsize=7)
        if k >= len(curves) - cols:
            ax.set_xlabel("bytes", fontsize=7)
    # every kind of mark named once, in the grid's first empty slot where it has one (over the first panel it
    # covered its points), whether or not a panel has it
    from matplotlib.lines import Line2D

    marks = [Line2D([], [], **style, label=name) for name, style in FIGURE_MARKS.items()]
    if len(curves) < rows * cols:
        fig.add_subplot(rows, cols, len(curves) + 1).set_axis_off()
        fig.axes[-1].legend(handles=marks, fontsize=7, loc="center")
    else:
        fig.axes[0].legend(handles=marks, fontsize=6, loc="upper left")
    # Fixed margins, kept as they are: tight_layout over some thirty axes, or cropping to them, costs seconds.
    fig.subplots_adjust(left=0.045, right=0.995, bottom=0.035, top=0.985, wspace=0.25, hspace=0.45)
    return save(fig, out, overwrite=overwrite, tight=False)
