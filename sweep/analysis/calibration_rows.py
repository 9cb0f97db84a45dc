"""The measured runs of a calibration as the kernel's rows, and the model settings they run under.

Each row of a measurements file (:mod:`sweep.io.measurements`) names its model (a built-in, a
transformer, or a profile file next to the CSV) and may give its own settings in columns;
:class:`Settings` holds those the file does not give, and the ones left None follow the
workload as ``sweep grid``'s do. :func:`build_rows` makes the :class:`kernels.fit.Rows` the fit
and the predictions run on.
"""

import dataclasses
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.fit import Rows
from netsweep_jax.kernels.overlap import Features
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, default_value
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import is_nccl
from netsweep_jax.sweep.core.schema import BUCKETINGS, COLLECTIVES, INNER, assumed_line
from netsweep_jax.sweep.engine.grid import (
    FSDP_ACCUMULATION,
    check_intra_bandwidth,
    nics_said,
    one_node_flat_said,
)
from netsweep_jax.sweep.engine.grid_options import Table
from netsweep_jax.sweep.engine.inputs import row_inputs
from netsweep_jax.sweep.engine.workloads import (
    FOLLOWING,
    assumed_text,
    own_gpu,
    own_links,
    own_table,
    refuse_mixed_stacks,
    resolve_models,
    t1_said,
    workload_defaults,
    workload_reduce_table,
)
from netsweep_jax.sweep.io.measurements import Measurements
from netsweep_jax.sweep.model.builtin import builtin_names
from netsweep_jax.sweep.model.profile import Profile, load_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS


@dataclasses.dataclass(frozen=True)
class Settings:
    """Model settings for rows whose file does not give them (each may also be a column).
    ``collective``, ``bucketing`` and ``intra_bandwidth`` None: they follow the workload, as
    ``sweep grid``'s (:func:`sweep.engine.workloads.workload_defaults`)."""

    collective: str | None = None
    bucketing: str | None = None
    reduce_table: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None
    intra_bandwidth: float | None = None
    # None: not given, the default's 1 a node (said where the rows' GPU comes in a system of more)
    nics_per_node: float | None = None
    fusion_buffer: float = default_value("fusion_buffer")
    fusion_timeout: float = default_value("fusion_timeout")


# The collectives calibrate fits (NCCL's own is fitted from nccl-tests logs: sweep calibrate --nccl-tests).
CALIBRATED = tuple(c for c in COLLECTIVES if not is_nccl(c))


def check_settings(settings: Settings) -> None:
    """Refuse settings ``sweep grid`` would refuse (one line naming the option)."""
    if settings.intra_bandwidth is not None:
        check_intra_bandwidth(settings.intra_bandwidth)
    for name, values, said in (
        ("collective", COLLECTIVES, CALIBRATED),  # NCCL's own: refused after, saying why
        ("bucketing", BUCKETINGS, BUCKETINGS),
    ):
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, str) or _lower(value) not in values):
            raise InputError(f"{value!r}: calibrate takes one of {', '.join(said)}", param=name)
    for name in ("nics_per_node", "fusion_buffer", "fusion_timeout"):
        value = getattr(settings, name)
        if value is None and name == "nics_per_node":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{value!r}: expected one number", param=name)
        NUMERIC_AXES[name].check(float(value))


def _profile_for(
    meas: Measurements, i: int, known: dict[Any, Profile], default_model: str, iteration_time: float | None
) -> Profile:
    """Row ``i``'s profile: its ``model`` (a built-in, a transformer, or a profile file, read with
    ``iteration_time`` as ``--profile``'s files are), its compute scaled to the row's own ``t1`` if it has one,
    exactly as for built-ins (a profile file with an iteration time of its own is scaled from it; one without,
    as .csv and .bk.log, takes the row's ``t1`` as its T1)."""
    name = meas.column("model", default_model)[i]
    if (  # ResNet50 is resnet50, unless a profile file of that name lies next to the CSV
        isinstance(name, str)
        and name.lower() in builtin_names() + tuple(TRANSFORMERS)
        and not (Path(meas.path).parent / name).is_file()
    ):
        name = name.lower()
    t1 = meas.column("t1", None)[i]
    if name not in known and name in TRANSFORMERS:  # a transformer named plainly: its resolved workload
        matches = [p for key, p in known.items() if isinstance(key, str) and key.startswith(f"{name}@")]
        known[name] = matches[0] if len(matches) == 1 else resolve_models(name)[0]
    if name not in known:
        # A folder: said where, not as a model name (a hunt: "model name must be ... without '/'", no line).
        if isinstance(name, str) and ("/" in name or "\\" in name):
            raise InputError(
                f"{meas.where(i)}: model {name!r}: a profile file is named by its file name alone, next to "
                f"{Path(meas.path).name} (a model name holds no '/')"
            )
        path = Path(meas.path).parent / name
        if not path.is_file():
            raise InputError(
                # every built-in named (a hunt: the models met so far, "among resnet50", read as the only one)
                f"{meas.where(i)}: model {name!r} is neither a built-in "
                f"({', '.join((*builtin_names(), *TRANSFORMERS))}) nor a profile file next to {Path(meas.path).name}"
            )
        try:
            known[name] = load_profile(path, t1=iteration_time, model=name)  # at --iteration-time, as grid
        except InputError as e:
            if e.param != "t1":  # anything but a format without an iteration time
                raise
            if t1 is None:
                raise InputError(
                    f"{meas.where(i)}: profile {name} has no single-GPU iteration time; give this "
                    f"row's in a t1 column, or --iteration-time"
                ) from None
            if (name, t1) not in known:
                known[(name, t1)] = load_profile(path, t1=t1, model=name)
            return known[(name, t1)]
    return known[name] if t1 is None else known[name].at_run_t1(t1, meas.where(i))


def build_rows(
    meas: Measurements,
    profiles: Sequence[Profile],
    default_model: str,
    settings: Settings,
    assumed: list[str] | None = None,
    iteration_time: float | None = None,
) -> tuple[Rows, list[str], Features]:
    """The measured runs as :class:`kernels.fit.Rows` (float64, built by the engine's
    :func:`~sweep.engine.inputs.row_inputs`), the models' names per row, and the
    :class:`~kernels.overlap.Features` they need. Settings left None follow the rows'
    workload; ``assumed`` (a list) receives the line saying so, if any. ``iteration_time``: T1 (s) of a profile
    file a ``model`` cell names (``--iteration-time``)."""
    n = len(meas)
    if iteration_time is not None and all(t is not None for t in meas.column("t1", None)):  # a hunt: unsaid
        raise InputError(
            f"{iteration_time:g}: every row of {meas.path} gives its own T1 in its t1 column, which is taken; give "
            "one or the other (--iteration-time is the T1 of rows with a blank or no t1)",
            param="iteration_time",
        )
    known: dict[Any, Profile] = {p.model: p for p in profiles}
    runs = [_profile_for(meas, i, known, default_model, iteration_time) for i in range(n)]
    for name in ("collective", "bucketing"):  # an option given and a column of other values: which one holds?
        given = getattr(settings, name)
        other = [i for i, v in enumerate(meas.column(name, given)) if _lower(v) != _lower(given)]
        if given is not None and other:
            raise InputError(
                f"{given}: {meas.where(other[0])} gives {meas.columns[name][other[0]]} in its {name} column; "
                "give one or the other",
                param=name,
            )
    distinct = list({p.model: p for p in runs}.values())  # a profile per model, not per row
    intra_rows, table_rows = _each_at_its_gpu(settings, distinct, runs)
    settings, text = _following(settings, distinct, set(meas.columns))
    # The reductions' memory rate as grid's default table says it (the GPU of the rows' models).
    table, _, reduce_said = (
        workload_reduce_table(distinct) if settings.reduce_table is None else (settings.reduce_table, "", "")
    )
    # Names in any case, as the options' (the guide's rule).
    collectives = [_lower(c) for c in meas.column("collective", settings.collective)]
    # one NIC a node, the default, said as grid says it (a review: fitted at 1 NIC on H100 rows, unsaid)
    nics = settings.nics_per_node
    defaulted = nics is None and "nics_per_node" not in meas.columns
    text = assumed_line(
        (
            text,
            nics_said(collectives, distinct, defaulted, meas.columns["gpus_per_node"]),
            reduce_said,
            *_rows_said(meas, runs, collectives),
        )
    )
    if text and assumed is not None:
        assumed.append(text)
    for i, c in enumerate(collectives):
        if c not in COLLECTIVES:
            raise InputError(f"{meas.where(i)}: collective {c!r} unknown; known: {', '.join(COLLECTIVES)}")
    bucketing = [_lower(b) for b in meas.column("bucketing", settings.bucketing)]
    accum = meas.column("accum", 1.0)
    for i, b in enumerate(bucketing):
        if b not in BUCKETINGS:
            raise InputError(f"{meas.where(i)}: bucketing {b!r} unknown; known: {', '.join(BUCKETINGS)}")
        if b == "fsdp" and accum[i] > 1:  # as sweep grid refuses it
            raise InputError(f"{meas.where(i)}: {FSDP_ACCUMULATION}")
    rows, features = row_inputs(
        runs,
        bucketing=bucketing,
        collective=collectives,
        fusion_buffer=meas.column("fusion_buffer", settings.fusion_buffer),
        fusion_timeout=meas.column("fusion_timeout", settings.fusion_timeout),
        nodes=meas.columns["nodes"],
        gpus_per_node=meas.columns["gpus_per_node"],
        nics_per_node=meas.column("nics_per_node", default_value("nics_per_node") if nics is None else nics),
        inner={d: meas.column(d, None if d == "bandwidth" else default_value(d)) for d in INNER},
        reduce_tables=table_rows or [table] * len(runs),
        intra_bandwidths=intra_rows or [float(settings.intra_bandwidth)] * len(runs),  # type: ignore[arg-type]
    )
    return rows, [p.model for p in runs], features


def _each_at_its_gpu(
    settings: Settings, distinct: Sequence[Profile], runs: Sequence[Profile]
) -> tuple[list[float] | None, list[Table] | None]:
    """Each row's NVLink (Gbit/s) and reduce table where its rows' GPUs differ in them and none is given (else
    None: the one of the settings): a fit prices rows on several GPUs each at its own GPU's, as a sweep does
    (:attr:`~sweep.engine.grid.Grid.own_gpu`; a review: a fit had priced an H100's rows at a V100's beside
    them). ``distinct``: the rows' profiles, one a model."""
    own = own_gpu(distinct, settings.intra_bandwidth is None, settings.reduce_table is None)
    return (
        [own_links(p) for p in runs] if "intra" in own else None,
        [own_table(p) for p in runs] if "reduce" in own else None,
    )


def _rows_said(meas: Measurements, runs: Sequence[Profile], collectives: Sequence[str]) -> list[str]:
    """What a fit says of its rows as grid says it of a sweep: a flat collective pricing one node of several GPUs
    at --bw (a hunt: such rows pulled a fitted network utilization, unsaid), and a T1 in other units than
    seconds, 250 for 250 ms, once a model (a hunt: a fitted utilization of 0.00037, unsaid; ``runs``: each row's
    profile, scaled to its own T1)."""
    hosts = zip(collectives, meas.columns["nodes"], meas.columns["gpus_per_node"])
    said = [one_node_flat_said([c for c, nodes, gpus in hosts if nodes == 1 < gpus], "the row's bandwidth")]
    odd_t1: dict[str, str] = {}
    for p, t1 in zip(runs, meas.column("t1", None)):
        for line in t1_said([p], "its t1 column" if t1 is not None else "--iteration-time"):
            odd_t1.setdefault(p.model, line)
    return said + list(odd_t1.values())


def _lower(name: Any) -> Any:
    """A name as the registries spell it (any case given); anything else as it is."""
    return name.strip().lower() if isinstance(name, str) else name


def _following(
    settings: Settings, profiles: Sequence[Profile], columns: Collection[str]
) -> tuple[Settings, str]:
    """``settings`` with those left None set as the workload has them, and the line that says so; the paper's
    CNNs and transformers together are refused where one kind's default would stand for the other's
    (:func:`~sweep.engine.workloads.refuse_mixed_stacks`), unless the file's ``columns`` give it per row."""
    values, _ = workload_defaults(profiles)
    chosen = {k: values[k] for k in FOLLOWING if getattr(settings, k) is None}
    # A transformer's rows took a CNN's ring and Horovod fusion, in silence.
    refuse_mixed_stacks(profiles, [k for k in chosen if k not in columns])
    # Said for the paper's CNNs too, which a sweep leaves unsaid: a fitted utilization is the collective's, and
    # compare's defaults are a transformer stack's (a hunt: 0.17 carried into compare answered another question).
    return dataclasses.replace(settings, **chosen), assumed_text(profiles, chosen, always=True)
