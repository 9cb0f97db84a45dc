"""The public API: typed entry points over the analysis floor, re-exported by :mod:`netsweep_jax.sweep`.

Each function takes its model and main input positionally and every option by
keyword, refuses bad input with :class:`~netsweep_jax.sweep.core.errors.InputError`
(a ``ValueError`` with a one-line message), and returns plain data: an
``xarray.Dataset``, a JSON-ready dict, or a small frozen dataclass. The commands of
the CLI call the same functions underneath, so a result here is the number the
command prints.

Units are the CLI's throughout: bandwidth in Gbit/s, latency in us, overhead in ms,
fusion buffer in MiB, fusion timeout in ms, times in seconds, utilization, ratio,
slowdown and jitter as plain numbers.
"""

import dataclasses
import functools
import inspect
import math
import numbers
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from typing_extensions import Unpack

from netsweep_jax.sweep.analysis import calibrate as _calibration
from netsweep_jax.sweep.analysis import compare as _comparison
from netsweep_jax.sweep.analysis import need as _need
from netsweep_jax.sweep.analysis import validate as _validation
from netsweep_jax.sweep.analysis.calibration_rows import Settings as _Settings
from netsweep_jax.sweep.analysis.layout_jobs import one_fabric
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords
from netsweep_jax.sweep.core.schema import COMPARE
from netsweep_jax.sweep.core.values import json_ready
from netsweep_jax.sweep.engine.evaluate import evaluate as _evaluate
from netsweep_jax.sweep.engine.grid_options import AxisValues, GridOptions, Models
from netsweep_jax.sweep.engine.workloads import check_models
from netsweep_jax.sweep.io.paths import check_report_directory as _check_report_directory
from netsweep_jax.sweep.io.reader import check_selection as _check_selection
from netsweep_jax.sweep.io.reader import open_cube as _open_cube
from netsweep_jax.sweep.io.runs import is_runs_file
from netsweep_jax.sweep.model.builtin import builtin_names, builtin_profile
from netsweep_jax.sweep.model.fabric_constants import FabricConstants
from netsweep_jax.sweep.model.fabrics import FabricPreset
from netsweep_jax.sweep.model.profile import Profile, load_profile
from netsweep_jax.sweep.model.vector_add import read_table

__all__ = [
    "Comparison",
    "ModelErrors",
    "Validation",
    "builtin_names",
    "builtin_profile",
    "calibrate",
    "compare",
    "evaluate",
    "load_profile",
    "open_cube",
    "Profile",
    "solve",
    "validate",
]


def _number(value: object, param: str) -> float:
    """``value`` (a number, NumPy's too, or a 0-d array) as a finite float, else :class:`InputError` naming
    ``param``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:  # a 0-d array is its one number, as for the axes
        value = value.item()
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
    ):
        raise InputError(f"{value!r}: expected one finite number", param=param)
    return float(value)


def _flag(value: object, param: str) -> bool:
    """A yes-or-no keyword: a bool (NumPy's too); anything else one error naming it (``"no"`` is truthy: a
    ``force="no"`` replaced a user's files)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{value!r}: expected True or False", param=param)
    return bool(value)


def _fabric(value: Any) -> Any:
    """``fabric`` as the engine takes it: a name or path (str or Path) read as ``--fabric`` reads it, a preset
    or a fabric file (:func:`~sweep.analysis.layout_jobs.one_fabric`); anything else as given (a preset,
    constants, None)."""
    return one_fabric(str(value)) if isinstance(value, (str, Path)) else value


@functools.wraps(_evaluate)
def evaluate(model: Models, **settings: Any) -> xr.Dataset:
    if "fabric" in settings:
        settings["fabric"] = _fabric(settings["fabric"])
    return _evaluate(model, **settings)


def _path(value: object, param: str) -> Path:
    if not isinstance(value, (str, Path)) or not str(value):
        raise InputError(f"{value!r}: expected a file path (str or Path)", param=param)
    return Path(value)


def solve(model: Models, *, target: float, axis: str, **axes: Unpack[GridOptions]) -> xr.Dataset:
    """The value of ``axis`` at which the scaling factor reaches ``target``, for every combination (``sweep need``).

    Args:
      model: as :func:`evaluate`.
      target: scaling factor to reach, in (0, 1].
      axis: the axis solved for: ``bandwidth`` (Gbit/s), ``utilization`` or ``ratio``
        (the smallest value reaching the target), or ``latency`` (us), ``overhead`` (ms),
        ``slowdown`` or ``jitter`` (the largest value still reaching it).
      **axes: the other axes and settings, the keys of :class:`~netsweep_jax.sweep.engine.grid_options.GridOptions`
        (as :func:`evaluate`'s, the kept variables aside; ``bandwidth`` in Gbit/s is required unless
        it is the axis solved for).

    Returns:
      ``xarray.Dataset`` over every dim but ``axis``: ``required_<axis>`` (growing axes) or
      ``allowed_<axis>`` (falling ones) in the axis's units, NaN where unreachable, and
      ``status`` (int8: 0 solved, 1 met at the limit searched, 2 unreachable).
    """
    if not isinstance(axis, str):
        raise InputError(f"{axis!r}: expected an axis name", param="axis")
    if "fabric" in axes:
        axes["fabric"] = _fabric(axes["fabric"])
    return _need.solve(model, target=_number(target, "target"), axis=axis, **axes)


@refuse_unknown_keywords
def calibrate(
    measurements: str | Path,
    *,
    fit: str | Sequence[str] = "utilization",
    model: str | Sequence[str] = "resnet50",
    profile: str | Path | Sequence[str | Path] | None = None,
    iteration_time: float | None = None,
    per: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    train: str | None = None,
    collective: str | None = None,
    bucketing: str | None = None,
    reduce_table: str | Path | None = None,
    intra_bandwidth: float | None = None,
    nics_per_node: float | None = None,
    fusion_buffer: float = 64.0,
    fusion_timeout: float = 5.0,
    out: str | Path | None = None,
    force: bool = False,
    gpu: str | None = None,
    precision: str | None = None,
    batch: int | None = None,
    seq_len: int | None = None,
) -> dict[str, Any]:
    """Fit model parameters to measured runs, and predict every run (``sweep calibrate``).

    Args:
      measurements: a CSV of measured runs: ``nodes``, ``gpus_per_node``, ``bandwidth`` (Gbit/s) and
        ``scaling_factor`` or ``iteration_time`` (s); optional ``model``, ``collective``, ``t1`` (s), any
        axis in its units, and label columns (see :mod:`netsweep_jax.sweep.io.measurements`).
      fit: what to fit, a comma list or sequence of ``utilization``, ``latency``, ``overhead``,
        ``slowdown``, ``jitter``.
      model: built-in profile name(s) for rows without a ``model`` column: the paper's CNNs or
        transformers (``gpu``, ``precision``, ``batch``, ``seq_len``: their workload, values a profile each).
      profile: profile file(s) replacing ``model``; ``iteration_time``: T1 (s), a profile file's where the
        format has none, else the built-in model's or the profile's compute scaled to it (as ``sweep grid
        --iteration-time``).
      per: parameter -> label column: one value per value of that column (``{"jitter": "framework"}``).
      bounds: parameter -> (low, high) in its units (defaults: utilization 1e-4..1, latency 0..1000 us,
        overhead 0..1000 ms, slowdown and jitter 0..1).
      train: a row filter (``"gpus <= 16"``): fit on those rows, report the error on the others.
      collective, bucketing, reduce_table (a ``bytes,seconds`` CSV), intra_bandwidth (Gbit/s): None
        follows the workload as ``sweep grid`` (the paper's ring, Horovod fusion and V100 NVLink for its
        CNNs; nccl-ring, DDP buckets and the GPU preset's NVLink for transformers),
        nics_per_node, fusion_buffer (MiB), fusion_timeout (ms): settings for rows whose file
        does not give them (``nics_per_node`` None: 1 a node, said where the GPU's system has more).
      out: also write the result as JSON here (``force``: overwrite).

    A file of large-model runs (``tp``, ``pp`` and ``metric`` columns, as ``sweep validate --llm`` reads) fits
    validate --llm's constants instead, as ``sweep calibrate FILE`` does: ``train`` names groups of its runs,
    ``out`` and ``force`` apply, any other keyword given is refused, and the result is that command's JSON.

    Returns:
      The result as a JSON-ready dict (None where a number is undefined): ``fitted`` (``name``, ``group``,
      ``value``, ``stderr``, ``units``, ``bounds`` each), ``rmse`` over the training rows (absolute for scaling
      factors, relative for iteration times), ``heldout_rmse``/``heldout_max_abs`` with ``train``, ``warnings``,
      and ``rows`` (measured, predicted, residual, ... per run; a blank measured value is predicted, not fitted,
      with ``interval`` the fit's 95% interval).
    """
    path = _path(measurements, "measurements")
    keywords = {name: value for name, value in locals().items() if name not in ("measurements", "path")}
    if is_runs_file(path):  # as the command routes it (a hunt: refused here, asked for data-parallel columns)
        return _calibrate_runs(path, keywords)
    try:
        return _calibrate_measurements(path, keywords)
    except InputError as e:
        if e.param != "t1":
            raise
        # A profile without its T1 is asked for by load_profile's keyword; calibrate's is iteration_time (a hunt:
        # told to give t1, which it then refused as unknown).
        raise InputError(e.detail, param="iteration_time") from None


def _calibrate_measurements(path: Path, k: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`calibrate` of data-parallel measurements, ``k`` its keywords."""
    _check_kinds(k["model"], k["profile"], k["force"])
    if k["train"] is not None and not isinstance(k["train"], str):
        raise InputError(f"{k['train']!r}: expected a row filter such as 'gpus <= 16'", param="train")
    settings = _row_settings(
        k["collective"], k["bucketing"], k["reduce_table"], k["intra_bandwidth"], k["nics_per_node"],
        k["fusion_buffer"], k["fusion_timeout"],
    )  # fmt: skip
    result = _calibration.calibrate_file(
        path,
        k["fit"],
        out=None if k["out"] is None else _path(k["out"], "out"),
        force=k["force"],
        model=k["model"] if isinstance(k["model"], str) else ",".join(k["model"]),
        profile=k["profile"],
        iteration_time=None
        if k["iteration_time"] is None
        else _number(k["iteration_time"], "iteration_time"),
        per=[f"{name}={column}" for name, column in _mapping(k["per"], "per").items()],
        bounds=_bounds_items(k["bounds"]),
        train=k["train"],
        settings=settings,
        **{name: k[name] for name in ("gpu", "precision", "batch", "seq_len")},
    )
    return json_ready(result)  # NaN (a standard error the fit cannot tell) as None


def _calibrate_runs(path: Path, keywords: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`calibrate` of a file of large-model runs: ``sweep calibrate RUNS``'s fit and JSON; a keyword of
    ``keywords`` but train, out and force (the data-parallel ones) given a value other than its default is
    refused, never ignored."""
    train, out, force = keywords["train"], keywords["out"], keywords["force"]
    defaults = inspect.signature(calibrate).parameters
    given = [
        name
        for name, value in keywords.items()
        if name not in ("train", "out", "force") and not _is_default(value, defaults[name].default)
    ]
    if given:
        raise InputError(
            "is for data-parallel measurements; a file of large-model runs states each run's settings in its "
            "columns (train, out and force apply)",
            param=given[0],
        )
    _flag(force, "force")
    if train is not None and not isinstance(train, str):
        raise InputError(f"{train!r}: expected groups of the file's runs (comma-separated)", param="train")
    from netsweep_jax.sweep.analysis import llm_validation  # the layout family's fit: only where asked for

    written = None if out is None else _path(out, "out")
    command = f"sweep.calibrate({str(path)!r}{'' if train is None else f', train={train!r}'})"
    _, _, document = llm_validation.calibrate_runs_file(path, train, written, bool(force), command)
    return json_ready(document)


def _is_default(value: object, default: object) -> bool:
    """Whether a keyword's value is its default: an array's elementwise answer is not (a hunt: NumPy's ``fit``
    raised "the truth value of an array is ambiguous" with a traceback)."""
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _check_kinds(model: object, profile: object, force: object) -> None:
    """``model``: built-in name(s); ``profile``: None, a path or a list of paths; ``force``: a bool; else one
    error naming it."""
    _flag(force, "force")
    if not (
        isinstance(model, str)
        or isinstance(model, (list, tuple))
        and model
        and all(isinstance(m, str) for m in model)
    ):
        raise InputError(f"{model!r}: expected built-in model name(s)", param="model")
    if profile is not None and not (
        isinstance(profile, (str, Path))
        or isinstance(profile, (list, tuple))
        and all(isinstance(p, (str, Path)) for p in profile)
    ):
        raise InputError(f"{profile!r}: expected a profile file path or a list of them", param="profile")


def _row_settings(
    collective: str | None,
    bucketing: str | None,
    reduce_table: str | Path | None,
    intra_bandwidth: float | None,
    nics_per_node: float | None,
    fusion_buffer: float,
    fusion_timeout: float,
) -> _Settings:
    """The settings of rows whose measurements file does not give them, each number checked."""
    intra = (
        {} if intra_bandwidth is None else {"intra_bandwidth": _number(intra_bandwidth, "intra_bandwidth")}
    )
    return _Settings(
        collective=collective,
        bucketing=bucketing,
        reduce_table=None if reduce_table is None else read_table(_path(reduce_table, "reduce_table")),
        **intra,
        nics_per_node=None if nics_per_node is None else _number(nics_per_node, "nics_per_node"),
        fusion_buffer=_number(fusion_buffer, "fusion_buffer"),
        fusion_timeout=_number(fusion_timeout, "fusion_timeout"),
    )


def _bounds_items(bounds: Mapping[str, tuple[float, float]] | None) -> list[str]:
    """``{name: (low, high)}`` as the CLI's ``name=low:high`` items, each pair checked."""
    items = []
    for name, pair in _mapping(bounds, "bounds").items():
        if isinstance(pair, np.ndarray) and pair.ndim == 1:  # a NumPy pair, as the axes take arrays
            pair = pair.tolist()
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise InputError(f"{name}={pair!r}: expected a (low, high) pair", param="bounds")
        items.append(f"{name}={_number(pair[0], 'bounds')!r}:{_number(pair[1], 'bounds')!r}")
    return items


def _mapping(value: object, param: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{value!r}: expected a dict (parameter -> ...)", param=param)
    return value


@dataclasses.dataclass(frozen=True)
class ModelErrors:
    """How well one of :func:`validate`'s models predicts (errors in scaling factor).

    Attributes:
      model, description: the model's name (``paper``, ``utilization``, ``calibrated``) and what it is.
      heldout_rmse, heldout_worst: RMSE and largest absolute error over the held-out rows (NaN if none).
      insample_rmse: RMSE over the training rows.
      mean_error: mean of predicted - measured over all rows.
    """

    model: str
    description: str
    heldout_rmse: float
    heldout_worst: float
    insample_rmse: float
    mean_error: float


@dataclasses.dataclass(frozen=True)
class Validation:
    """What :func:`validate` found.

    Attributes:
      errors: one :class:`ModelErrors` per model, in the report's order.
      predictions: model name -> [R] predicted scaling factors, one per row of the file.
      measured: [R] measured scaling factors.
      train: [R] bools, True for the rows the fits saw.
      fitted: model name -> {(parameter, group): value in its units}.
      paths: the files written (empty without ``out``).
      warnings: model name -> its fit's warnings (a value at its bound, one the rows do not determine).
    """

    errors: tuple[ModelErrors, ...]
    predictions: dict[str, np.ndarray]
    measured: np.ndarray
    train: np.ndarray
    fitted: dict[str, dict[tuple[str, str | None], float]]
    paths: tuple[Path, ...] = ()
    warnings: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


@refuse_unknown_keywords
def validate(
    dataset: str | Path | None = None,
    *,
    out: str | Path | None = None,
    force: bool = False,
    progress: Callable[[str], object] | None = None,
) -> Validation:
    """The held-out protocol on measured runs (``sweep validate``): how well three models predict.

    Per (``source``, ``framework``) group, fit on the single-node rows and the smallest
    multi-node size, predict the larger sizes. Models: the paper's (utilization 1, no
    fit), one utilization per network, and the pipelined ``nccl-ring`` with one
    utilization per network and one jitter per framework.

    Args:
      dataset: a measurements CSV (as :func:`calibrate`'s, with ``framework`` and ``network``
        columns and scaling factors); default: the shipped published measurements.
      out: also write REPORT.md, predictions.csv and measured_vs_predicted.png into this directory.
      force: replace those files where they exist (never through a link); without it they are refused,
        before anything is fitted.
      progress: called with a line of text as each model is fitted (each takes seconds).

    Returns:
      :class:`Validation`: the errors per model, predictions per row, and the files written.
    """
    path = _validation.DATASET if dataset is None else _path(dataset, "dataset")
    force = _flag(force, "force")
    if progress is not None and not callable(progress):
        raise InputError(f"{progress!r}: expected a function of one line of text, or None", param="progress")
    if out is not None:
        _check_report_directory(
            _path(out, "out"), _validation.FILES, force=force, reads={path: "measurements file"}
        )
    meas, predictions, train, fits, said = _validation.run_validation(path, progress)
    paths = (
        ()
        if out is None
        else tuple(
            _validation.write_report(
                _path(out, "out"), meas, predictions, train, fits, force=force, warnings=said
            )
        )
    )
    errors = tuple(
        ModelErrors(m.name, m.description, held, worst, in_sample, mean)
        for m, held, worst, in_sample, mean in _validation.errors(meas, predictions, train)
    )
    return Validation(
        errors,
        dict(predictions),
        np.array(meas.columns["scaling_factor"], np.float64),
        train,
        dict(fits),
        paths,
        {name: tuple(lines) for name, lines in said.items() if lines},
    )


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found.

    Attributes:
      rows: one answer per configuration (model, bandwidth and any dim that varies): its
        ``today``, ``fixed`` and per-compressor ``times`` (s per iteration of equal progress),
        ``best`` compressor, ``gain`` and ``winner``.
      dataset: the evaluated ``xarray.Dataset`` (``transport`` today and fixed, each at its ``utilization``, a
        coordinate along it, today's 1 by default under NCCL's pricing; every compressor; its attributes today's
        sweep's, and ``fixed_transport`` what the fixed one is): one sweep per GPU the models run on (two under
        NCCL's pricing, the fixed one's fabric at line rate), joined along ``model`` in the order given (an attribute that differs between
        them, as ``intra_bandwidth_gbps``, one value per model).
      paths: the files written (empty without ``out``).
      utilization: today's, as compare took it; assumed: what compare assumed beyond its keywords' defaults
        (the transformers' workload, the grid's defaults, a fabric's settings; ``sweep compare``'s line also
        names the options not given).
    """

    rows: tuple[_comparison.Row, ...]
    dataset: xr.Dataset
    paths: tuple[Path, ...] = ()
    utilization: float | None = None
    assumed: str = ""

    def table(self) -> str:
        """The answers as aligned text, one line per configuration (what ``sweep compare`` prints)."""
        return _comparison.table(self.rows, self.utilization)


def compare(
    model: Models = COMPARE.models,
    *,
    bandwidth: AxisValues | None = None,
    utilization: float | None = None,
    compressor: str | Sequence[str] | None = None,
    nodes: int = COMPARE.nodes,
    gpus_per_node: int | None = None,
    collective: str | None = None,
    bucketing: str = COMPARE.bucketing,
    iterations_factor: str | Mapping[str, float] | None = None,
    codec_cost: str | Path | None = None,
    gpu: str | None = None,
    precision: str | None = None,
    batch: int | None = None,
    seq_len: int | None = None,
    out: str | Path | None = None,
    force: bool = False,
    fabric: str | FabricPreset | FabricConstants | None = None,
    **axes: Any,
) -> Comparison:
    """Fix the transport or compress? Per model and bandwidth (``sweep compare``).

    Compares no compression at today's ``utilization``, no compression with the transport
    fixed (utilization 1; where NCCL's own collective prices the run, its fitted efficiencies
    eta_net and eta_nvl at 1 too), and the best of ``compressor`` at today's utilization.

    Args:
      model: as :func:`evaluate` (default: resnet50, vgg16, bert-large, gpt2-xl).
      bandwidth: Gbit/s, a number, sequence or value-syntax string (None: 10, 25, 100 and 400, or a fabric
        preset's NIC rate, or the one a fabric file records).
      utilization: today's, one number in [1e-4, 1) (None: 0.32, the paper's measured share); where NCCL's own
        collective prices the run (``collective`` nccl, or a ``fabric``) in [1e-4, 1] (None: 1, the fabric as its
        fitted efficiencies price it: they are the transport measured today).
      compressor: the compressors to try (``"fp16,int8,topk:0.01"``, ...; None: ``COMPARE.compressors``
        of :mod:`sweep.core.schema`, PowerSGD left out, and said so, for a model without tensor shapes).
      nodes, gpus_per_node, collective, bucketing: one value each (None: 8 GPUs a node and ``"nccl-ring"``, or
        the ``fabric``'s).
      iterations_factor: extra iterations per compressor for the same accuracy
        (``"topk:0.01=1.3"`` or ``{"topk:0.01": 1.3}``; default 1).
      codec_cost: JSON file overriding the codec throughput model.
      gpu, precision, batch, seq_len: the transformers' workload (default: h100, the GPU's precision: bf16, fp16 on a V100; batch 8).
      out: also write REPORT.md, compare.csv and speedups.png into this directory.
      force: replace those files where they exist (never through a link); without it they are refused.
      fabric: as :func:`evaluate`'s (``sweep compare --fabric``): a fabric preset's name (its GPUs and NICs a node,
        NIC rate and GPU where those are not given) or a fabric file's constants
        (:func:`sweep.io.fabric_file.read_fabric`; its logs' hosts and GPU where it records them, as a preset's);
        either implies NCCL's collective where none is given.
      **axes: other axes as :func:`evaluate` (``latency`` in us, ``jitter``, ``nics_per_node``, ...), and
        ``iteration_time`` (s): every model's T1, its compute scaled to it as :func:`evaluate` scales it.

    Returns:
      :class:`Comparison`: one row per configuration, the evaluated Dataset, the files written.
    """
    if utilization is not None:
        _number(utilization, "utilization")
    check_models(model)
    force = _flag(force, "force")
    rows, ds, setup, paths = _comparison.run(
        None if out is None else _path(out, "out"),
        force=force,
        models=model,
        bandwidth=bandwidth,
        utilization=utilization,
        compressor=compressor,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        collective=collective,
        bucketing=bucketing,
        iterations_factor=iterations_factor,
        codec_cost=codec_cost,
        gpu=gpu,
        precision=precision,
        batch=batch,
        seq_len=seq_len,
        fabric=_fabric(fabric),
        **axes,
    )
    return Comparison(tuple(rows), ds, tuple(paths), float(setup["utilization"]), str(setup["assumed"]))


def _warn_at_the_callers_line(text: str) -> None:
    """A UserWarning shown at the first line outside netsweep that led to it (a hunt: a fixed stacklevel named
    the keyword checker's wrapper, sweep/core/keywords.py, not the user's ``open_cube`` line)."""
    import sys

    # each folder with its separator: a user's /work/main/sweep_demo.py is not netsweep's (a review)
    ours = tuple(str(Path(__file__).resolve().parents[1] / part) + os.sep for part in ("sweep", "kernels"))
    frame: Any = sys._getframe(1)
    level = 2  # this function's caller
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(ours):
        frame, level = frame.f_back, level + 1
    warnings.warn(text, UserWarning, stacklevel=level)


@refuse_unknown_keywords
def open_cube(path: str | Path, *, verify: bool = True) -> xr.Dataset:
    """A cube written by ``sweep grid``, ``plan``, ``need --out`` or a ``--reduce`` run, as an ``xarray.Dataset``.

    Args:
      path: the ``.h5`` file.
      verify: check the file against the checksums recorded as it was written first (its coordinates and
        profiles, every finished block or, for a cube written whole, every dataset), as ``select`` and
        ``plot`` do: this reads the data once. False opens it unchecked (a cube too large to read twice). An
        unfinished run's cube (``OUT.partial``) is read with a warning of how many blocks are not computed yet
        (their NaN are no results).

    Returns:
      ``xarray.Dataset`` (lazily loaded; close it, or use it in a ``with``) with named dims,
      coordinates, ``units`` and ``long_name`` on every variable, and the sweep's settings
      and provenance in ``attrs``.

    Raises:
      InputError: not a file, or not a cube netsweep wrote.
      Damaged: with ``verify``, the file no longer holds what was written (the message says what changed).
    """
    checked = _path(path, "path")
    verify = _flag(verify, "verify")  # "no" is truthy: it verified
    ds = _open_cube(checked)
    if verify:
        try:
            # An unfinished run's cube is read as select reads it: its NaN are no results, said (a hunt: 89% NaN
            # came back without a word).
            _check_selection(checked, ds, {}, say=_warn_at_the_callers_line)
        except BaseException:
            ds.close()
            raise
    return ds
