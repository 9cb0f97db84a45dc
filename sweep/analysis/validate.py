"""``sweep validate``: how well netsweep predicts published measurements it was not fitted to.

The dataset (:data:`DATASET`) holds the scaling factors of real data-parallel
training runs, each row citing its source; facts copied from the publications
(see ``../shared/published`` in the project's workspace for how each was measured).
Profiles are the built-in ones, with compute scaled to each run's single-GPU
iteration time T1 (the ``t1`` column: measured batch / single-GPU throughput where
published, else an assumption stated in ``t1_basis``); gradient bytes are the
architecture's. Each row's gradients are bucketed as its stack does (the ``bucketing``
and ``fusion_timeout`` columns: Horovod's fusion with its defaults or the run script's
cycle time, PyTorch DDP's buckets).

The protocol a user would run, per (source, framework) group: fit on the group's
single-node rows and its smallest multi-node size, then predict its larger sizes
(held out). A group with one size only is fitted in sample and has nothing held
out. Three models, side by side:

1. ``paper``: the paper's model as published: flat ``ring``, utilization 1, no fit.
2. ``utilization``: the paper's model with one utilization per network, fitted.
3. ``calibrated``: the pipelined ``nccl-ring`` with the node's NICs, fitting one
   utilization per network (a property of the wires and the transport) and one
   jitter per framework (the losses that are not the network).

The fitted models are fitted once, on every group's training rows together.

It writes ``REPORT.md`` (tables and errors), ``predictions.csv`` (row by row) and
``measured_vs_predicted.png``; no timestamps, so regenerating gives the same files. None of
them is overwritten without ``force`` (checked before any fit), and a link is never replaced.

Any measurements file with ``framework`` and ``network`` columns can be validated the
same way (:func:`run_validation`); ``source`` (default: one source), ``id`` (default:
the line) and ``t1_basis`` are optional.
"""

import csv
import dataclasses
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from netsweep_jax.kernels.fit import FitSpec
from netsweep_jax.sweep.analysis.calibrate import calibrate
from netsweep_jax.sweep.analysis.calibration_fit import padded_rows
from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows
from netsweep_jax.sweep.analysis.plot import save
from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.wording import table_cell
from netsweep_jax.sweep.engine.compiled import predict_rows
from netsweep_jax.sweep.engine.dispatch import precision
from netsweep_jax.sweep.io.measurements import Measurements, read_measurements
from netsweep_jax.sweep.io.paths import (
    check_report_directory,
    write_report_files,
)
from netsweep_jax.sweep.io.runs import is_runs_file
from netsweep_jax.sweep.model.builtin import builtin_names, builtin_profile
from netsweep_jax.sweep.model.profile import Profile

Fits = dict[tuple[str, str | None], float]  # (parameter, group or None) -> fitted value, stored units

DATASET = Path(__file__).resolve().parents[1] / "data" / "published.csv"
FILES = ("measured_vs_predicted.png", "predictions.csv", "REPORT.md")
"""What a report directory receives."""


@dataclasses.dataclass(frozen=True)
class Model:
    """One of the compared models: its collective, what it fits and per which column."""

    name: str
    description: str
    collective: str
    fit: tuple[str, ...] = ()
    per: tuple[tuple[str, str], ...] = ()


MODELS = (
    Model("paper", "paper's model, utilization 1", "ring"),
    Model(
        "utilization",
        "paper's model, one utilization per network",
        "ring",
        ("utilization",),
        (("utilization", "network"),),
    ),
    Model(
        "calibrated",
        "nccl-ring + NICs, utilization per network, jitter per framework",
        "nccl-ring",
        ("utilization", "jitter"),
        (("utilization", "network"), ("jitter", "framework")),
    ),
)
REQUIRED = tuple(sorted({column for m in MODELS for _, column in m.per}))  # the columns the fits group by


def groups(meas: Measurements) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """[(source, framework, train [R] bools, group [R] bools)] of the protocol."""
    pairs = list(zip(meas.column("source", ""), meas.columns["framework"]))
    nodes = np.array(meas.columns["nodes"])
    out = []
    for key in dict.fromkeys(pairs):
        group = np.array([k == key for k in pairs])
        multi = sorted(set(nodes[group & (nodes > 1)]))
        smallest = multi[0] if multi else nodes[group].min()
        out.append((key[0], key[1], group & (nodes <= smallest), group))
    return out


def _predict(
    meas: Measurements, model: Model, train: np.ndarray, builtin: Sequence[Profile]
) -> tuple[np.ndarray, Fits, list[str]]:
    """([R] scaling factors of ``model`` for every row of ``meas``, fitted on the ``train`` rows; the fitted values;
    the fit's warnings, as calibrate says them: a value at its bound, one the rows do not determine)."""
    settings = Settings(collective=model.collective)
    if not model.fit:
        rows, _, features = build_rows(meas, builtin, builtin[0].model, settings)
        n = len(meas)
        padded, _, _ = padded_rows(rows, np.ones(n), np.ones(n))  # as a fit's: one compile for groups alike
        with precision("float64"):
            out = predict_rows(np.zeros(0), padded, spec=FitSpec((), (), ()), features=features)
        return np.asarray(out["scaling_factor"])[:n], {}, []
    result = calibrate(
        meas, builtin, builtin[0].model, model.fit, per=dict(model.per), train=train, settings=settings
    )
    fitted = {(p["name"], p["group"]): p["value"] for p in result["fitted"]}
    return np.array([r["predicted"] for r in result["rows"]]), fitted, list(result["warnings"])


def _refuse_what_validation_cannot_use(meas: Measurements, dataset: str | Path) -> None:
    """Refuse a file validation cannot use (one line, before any fit): a grouping column missing or empty, no
    scaling factor measured, a column that fixes what validation fits or what its models differ by."""
    missing = [c for c in REQUIRED if c not in meas.columns]
    if missing:
        raise InputError(
            f"{dataset}: no {' or '.join(repr(c) for c in missing)} column; validation fits one "
            "jitter per framework and one utilization per network"
        )
    for column in REQUIRED:  # each row's group: an empty label would be a group of its own, fitted apart
        empty = [i for i, v in enumerate(meas.columns[column]) if not str(v).strip()]
        if empty:
            raise InputError(
                f"{meas.where(empty[0])}: no {column}; validation fits one "
                f"{'jitter' if column == 'framework' else 'utilization'} per {column}, so each row names its own"
            )
    seen: dict[str, int] = {}
    for i, name in enumerate(meas.column("id", "")):  # an id names one row of predictions.csv and the report
        if str(name).strip() in seen:
            raise InputError(
                f"{meas.where(i)}: id {name!r} is {meas.where(seen[str(name).strip()])}'s too; each once"
            )
        if str(name).strip():
            seen[str(name).strip()] = i
    if meas.measured != "scaling_factor":
        raise InputError(f"{dataset}: validation compares scaling factors; this file gives {meas.measured}")
    blank = [i for i, v in enumerate(meas.columns["scaling_factor"]) if v is None]
    if (
        blank
    ):  # calibrate predicts such a row; validation has nothing to compare it with (it crashed writing it)
        raise InputError(
            f"{meas.where(blank[0])}: no measured scaling factor; validation compares every row with its "
            "measurement (sweep calibrate predicts blank rows)"
        )
    fixed = sorted({axis for m in MODELS for axis in m.fit if axis in meas.columns})
    if fixed:
        raise InputError(
            f"{dataset}: a {' and '.join(repr(a) for a in fixed)} column fixes what validation fits "
            f"(one utilization per network, one jitter per framework); drop it"
        )
    if "collective" in meas.columns:  # every model took it, and the report still named each one's own
        raise InputError(
            f"{dataset}: a 'collective' column fixes what validation's models differ by (the paper's "
            f"{MODELS[0].collective} against the calibrated {MODELS[-1].collective}); drop it"
        )


def _say_workloads(meas: Measurements, progress: Callable[[str], object] | None) -> None:
    """Say the workload a row's built-in transformer is priced at: validate takes no --gpu or --precision (a
    hunt: gpt2 rows run on H100s in bf16 were priced on a V100 in fp32, in silence, and the fit took it up)."""
    from netsweep_jax.sweep.model.compute import Workload
    from netsweep_jax.sweep.model.transformers import TRANSFORMERS

    names = sorted({str(m) for m in meas.column("model", "") if str(m) in TRANSFORMERS})
    if names and progress:
        w = Workload(names[0])
        progress(
            f"assumed: {', '.join(names)} on {w.gpu}, {w.precision}, batch {w.batch} (validate takes no --gpu or "
            "--precision: a profile file's path in the model column prices another workload)"
        )


def run_validation(
    dataset: str | Path = DATASET, progress: Callable[[str], object] | None = None
) -> tuple[Measurements, dict[str, np.ndarray], np.ndarray, dict[str, Fits], dict[str, list[str]]]:
    """Predictions of every model for every row: (Measurements, {model: [R]}, train [R], fits, {model: the fit's
    warnings}: a value at its bound or one its rows do not determine, as calibrate warns; they had been dropped,
    and a utilization stuck at 1 read as fitted, a hunt).

    ``progress(text)``, if given, hears which model is being fitted (each takes seconds), and each warning."""
    if is_runs_file(dataset):  # read as measurements: "missing column(s) nodes, ..." (a hunt, from Python)
        raise InputError(
            f"{dataset}: a file of large-model runs (tp, pp and metric columns); sweep validate --llm {dataset} "
            "validates it"
        )
    meas = read_measurements(dataset)
    _refuse_what_validation_cannot_use(meas, dataset)
    builtin = [builtin_profile(n) for n in builtin_names()]
    _say_workloads(meas, progress)
    train = np.zeros(len(meas), bool)
    for *_, in_train, _ in groups(meas):
        train |= in_train
    if train.all():
        raise InputError(
            f"{dataset}: no (source, framework) group has runs at two node counts above one (each is fitted on "
            "its smallest), so nothing is held out; measure some group at two or more multi-node sizes"
        )
    nodes = np.array(meas.columns["nodes"])
    workers = nodes * np.array(meas.columns["gpus_per_node"])
    for column, what, uses in (("network", "utilization", nodes > 1), ("framework", "jitter", workers > 1)):
        values = np.array(meas.columns[column], dtype=object)
        for value in dict.fromkeys(values.tolist()):  # checked here, before any fit starts
            if not np.any(train & (values == value) & uses):
                raise InputError(
                    f"{dataset}: no training row of {column} {value!r} runs on "
                    f"{'several nodes' if column == 'network' else 'several GPUs'}, so its {what} "
                    f"cannot be fitted; measure it at two sizes or more"
                )
    predictions: dict[str, np.ndarray] = {}
    fits: dict[str, Fits] = {}
    warnings: dict[str, list[str]] = {}
    for i, model in enumerate(MODELS, 1):
        if progress:
            doing = f"fitting on {int(train.sum())} training rows" if model.fit else "no fit"
            progress(f"model {i}/{len(MODELS)}: {model.name} ({model.description}): {doing}")
        try:
            predictions[model.name], fits[model.name], warnings[model.name] = _predict(
                meas, model, train, builtin
            )
        except InputError as e:
            if e.param not in ("fit", "per", "train", "bounds"):
                raise
            # validate has no such option: the file is what cannot be fitted
            # a detail that names parameters is a format string: the text around it is made one too
            text = literal if e.names else str
            raise InputError(
                f"{text(str(dataset))}: the {text(model.name)} model cannot be fitted to its training rows "
                f"({e.detail})",
                names=e.names,
            ) from None
        for warning in warnings[model.name]:  # said as calibrate says them
            if progress:
                progress(f"warning: the {model.name} model's fit: {warning}")
    return meas, predictions, train, fits, warnings


def _rmse(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else float("nan")


def _ids(meas: Measurements) -> list[str]:
    """[R] row names: the ``id`` column, else ``line N``."""
    return meas.columns.get("id") or [f"line {n}" for n in meas.lines]


def errors(
    meas: Measurements, predictions: Mapping[str, np.ndarray], train: np.ndarray
) -> list[tuple[Model, float, float, float, float]]:
    """[(model, held-out RMSE, held-out worst |error|, in-sample RMSE, mean error over all rows)]."""
    measured = np.array(meas.columns["scaling_factor"])
    out = []
    for m in MODELS:
        res = predictions[m.name] - measured
        worst = float(np.max(np.abs(res[~train]))) if (~train).any() else float("nan")
        out.append((m, _rmse(res[~train]), worst, _rmse(res[train]), float(np.mean(res))))
    return out


def report(
    meas: Measurements,
    predictions: Mapping[str, np.ndarray],
    train: np.ndarray,
    fits: Mapping[str, Fits],
    command: str = "sweep validate",
    warnings: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """REPORT.md text (``warnings``: :func:`run_validation`'s, listed under the fitted values)."""
    measured = np.array(meas.columns["scaling_factor"])
    held = ~train
    shipped = Path(meas.path).resolve() == DATASET.resolve()
    what = (
        (
            "published scaling factors of data-parallel training (`sweep/data/published.csv`, each row citing its "
            "source)"
        )
        if shipped
        else f"measured scaling factors (`{Path(meas.path).name}`)"
    )
    read = [f"`{c}`" for c in ("bucketing", "fusion_timeout") if c in meas.columns]
    bucketing = (
        f"Each row's gradients are bucketed as its stack does (the dataset's {' and '.join(read)} "
        f"column{'s' if len(read) > 1 else ''})."
        if "bucketing" in meas.columns
        else "Every row's gradients are bucketed by Horovod's fusion (64 MiB, 5 ms): the file has no "
        "`bucketing` column."
    )
    lines = [
        "# netsweep against " + ("published measurements" if shipped else Path(meas.path).name),
        "",
        f"Generated by `{command}`. {len(meas)} {what}. Protocol, per source and framework: "
        "fit on the single-node rows and the smallest multi-node size, predict the larger sizes "
        f"({int(held.sum())} held-out rows); a group with one size only is fitted in sample. {bucketing}",
        "",
        "![measured against predicted](measured_vs_predicted.png)",
        "",
        "## Errors (scaling factor)",
        "",
        "| model | held-out RMSE | held-out worst | in-sample RMSE | mean error, all rows |",
        "|---|---|---|---|---|",
    ]
    for m, held_rmse, worst, in_rmse, mean in errors(meas, predictions, train):
        lines.append(
            f"| {m.name}: {m.description} | {held_rmse:.3f} | {worst:.3f} | {in_rmse:.3f} | {mean:+.3f} |"
        )
    lines += [
        "",
        "## Row by row",
        "",
        "| id | GPUs | network | measured | " + " | ".join(m.name for m in MODELS) + " | set |",
        "|---|---|---|---|" + "---|" * len(MODELS) + "---|",
    ]
    col, ids = meas.columns, _ids(meas)
    for i in range(len(meas)):
        gpus = int(col["nodes"][i] * col["gpus_per_node"][i])
        cells = " | ".join(f"{predictions[m.name][i]:.3f}" for m in MODELS)
        lines.append(
            f"| {table_cell(ids[i])} | {gpus} | {table_cell(col['network'][i])} | {measured[i]:.3f} | {cells} | "
            f"{'train' if train[i] else 'held out'} |"
        )
    lines += ["", "## Fitted values", ""]
    for m in MODELS[1:]:
        for (name, group), value in fits[m.name].items():
            label = f" [{group}]" if group is not None else ""
            lines.append(f"- {m.name}: {name}{label} = {value:.4g}")
        lines += [f"- {m.name}: warning: {w}" for w in (warnings or {}).get(m.name, ())]
    if "t1_basis" in col:
        lines += ["", "## Single-GPU times (T1) used", ""]
        lines += [f"- {ids[i]}: {col['t1_basis'][i]}" for i in range(len(meas))]
    return "\n".join(lines) + "\n"


def predictions_csv(meas: Measurements, predictions: Mapping[str, np.ndarray], train: np.ndarray) -> str:
    """predictions.csv text: one row per measurement, every model's prediction."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "source", "framework", "gpus", "measured", *[m.name for m in MODELS], "set"])
    col, ids, sources = meas.columns, _ids(meas), meas.column("source", "")
    for i in range(len(meas)):
        w.writerow(
            [
                ids[i],
                sources[i],
                col["framework"][i],
                int(col["nodes"][i] * col["gpus_per_node"][i]),
                f"{col['scaling_factor'][i]:.4f}",
                *[f"{predictions[m.name][i]:.4f}" for m in MODELS],
                "train" if train[i] else "held out",
            ]
        )
    return buf.getvalue()


def square_limits(measured: ArrayLike, predicted: Sequence[ArrayLike]) -> tuple[float, float]:
    """Both axes' range of a measured-against-predicted figure: 0.4 to 1.02, the published rows' range, widened
    to every finite point drawn with a margin of 0.02 (a hunt: a user's file of scaling factors 0.15-0.3 drew 11
    of 12 points off the axes, the one left on the diagonal)."""
    drawn = np.concatenate(
        [np.asarray(measured, np.float64), *(np.asarray(p, np.float64) for p in predicted)]
    )
    drawn = drawn[np.isfinite(drawn)]
    if not drawn.size:
        return 0.4, 1.02
    return round(min(0.4, float(drawn.min()) - 0.02), 6), round(max(1.02, float(drawn.max()) + 0.02), 6)


def figure(
    meas: Measurements,
    predictions: Mapping[str, np.ndarray],
    train: np.ndarray,
    out: Path,
    overwrite: bool = True,
) -> Path:
    """Measured against predicted, one marker per model; held-out rows filled."""
    fig = Figure(figsize=(5.2, 5))
    ax = fig.gca()
    measured = np.array(meas.columns["scaling_factor"])
    for m, marker in zip(MODELS, "osD"):
        p = predictions[m.name]
        line = ax.plot(measured[~train], p[~train], marker, ms=6, label=f"{m.name}, held-out rows")[0]
        ax.plot(
            measured[train],
            p[train],
            marker,
            ms=6,
            mfc="none",
            color=line.get_color(),
            label=f"{m.name}, training rows",
        )
    low, high = square_limits(measured, [predictions[m.name] for m in MODELS])
    ax.plot([low, high], [low, high], "k--", lw=0.8)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("measured scaling factor")
    ax.set_ylabel("predicted scaling factor")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return save(fig, out, overwrite=overwrite)


def write_report(
    out_dir: str | Path,
    meas: Measurements,
    predictions: Mapping[str, np.ndarray],
    train: np.ndarray,
    fits: Mapping[str, Fits],
    command: str = "sweep validate",
    force: bool = False,
    warnings: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """Write REPORT.md, predictions.csv and measured_vs_predicted.png (of :func:`run_validation`'s
    results) into ``out_dir``; return their paths. An existing one is refused without ``force``
    (a link, or anything but a regular file, always), before any is written."""
    return write_report_files(
        out_dir,
        {
            FILES[0]: lambda path: figure(meas, predictions, train, path, overwrite=force),
            FILES[1]: predictions_csv(meas, predictions, train),
            FILES[2]: report(meas, predictions, train, fits, command, warnings),
        },
        force=force,
    )


def run(
    out_dir: str | Path,
    command: str = "sweep validate",
    dataset: str | Path = DATASET,
    progress: Callable[[str], object] | None = None,
    force: bool = False,
) -> tuple[list[Path], list[tuple[Model, float, float, float, float]]]:
    """Write REPORT.md, predictions.csv and measured_vs_predicted.png into ``out_dir``; return
    (their paths, :func:`errors`). ``out_dir`` is checked before anything is fitted."""
    check_report_directory(out_dir, FILES, force=force, reads={dataset: "measurements file"})
    meas, predictions, train, fits, warnings = run_validation(dataset, progress)
    paths = write_report(out_dir, meas, predictions, train, fits, command, force=force, warnings=warnings)
    return paths, errors(meas, predictions, train)
