"""The profiles a sweep runs on, and the settings that follow their workload.

:func:`resolve_models` turns built-in names (the paper's CNNs, transformers with their
``gpu``, ``precision``, ``batch`` and ``seq_len``), profile files and :class:`Profile`
objects into the profiles of a sweep. The settings of :data:`FOLLOWING`, when the user leaves
them unset, follow those profiles (:func:`workload_defaults`: a transformer's stack, its GPU's
NVLink), and :func:`assumed_text` says what was filled in; the default reduce-cost table follows
their GPU's memory (:func:`workload_reduce_table`).
"""

import itertools
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from netsweep_jax.sweep.core.axes import show
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DEFAULTS
from netsweep_jax.sweep.core.textfile import not_a_file
from netsweep_jax.sweep.core.values import decimal, flat_values, parse_names, real_scalar, refuse_empty_item
from netsweep_jax.sweep.engine.grid_options import Models, Table, WorkloadValues
from netsweep_jax.sweep.model.builtin import builtin_names, builtin_profile, refuse_large_model
from netsweep_jax.sweep.model.compute import (
    GPUS,
    TRANSFORMER_SOURCE,
    Workload,
    gpu_named,
    named_memory_differs,
    refuse_on_volta,
    stated_gb,
    transformer_profile,
)
from netsweep_jax.sweep.model.profile import MAX_SECONDS, MIN_SECONDS, Profile, load_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS
from netsweep_jax.sweep.model.vector_add import V100_HBM_BYTES_PER_S, default_table

FOLLOWING = ("intra_bandwidth", "collective", "bucketing")  # None: follow the workload (workload_defaults)
FLAGS = {"intra_bandwidth": "--intra-bw", "collective": "--collective", "bucketing": "--bucketing"}


def gpu_of(profile: Profile) -> str | None:
    """The GPU preset a profile ran on (by its device's name, :func:`~sweep.model.compute.gpu_named`), or None."""
    return gpu_named(str(profile.device or ""))


PAPER_GPU = "v100"  # the paper's hardware, on which a profile of no known GPU is priced


def priced_gpu(profile: Profile) -> str:
    """The GPU preset a profile is priced on: the one it ran on (:func:`gpu_of`), else :data:`PAPER_GPU`."""
    return gpu_of(profile) or PAPER_GPU


def is_transformer(profile: Profile) -> bool:
    """A built-in transformer's profile (``gpt2-xl@h100-bf16-b8``, or one saved and loaded back): its name and
    its source both say so; a trace a user named ``gpt2@mine`` is not one."""
    named = "@" in profile.model and profile.model.split("@")[0] in TRANSFORMERS
    return named and str(profile.source).startswith(TRANSFORMER_SOURCE)


def workload_defaults(profiles: Sequence[Profile]) -> tuple[dict[str, Any], str]:
    """The settings that follow the workload, and what they rest on (text).

    ``intra_bandwidth``: the NVLink of the models' GPU preset (:data:`sweep.model.compute.GPUS`,
    one direction, in Gbit/s; the lowest where the models' GPUs differ; the V100's 1200 for a
    profile on an unknown GPU); ``collective`` and ``bucketing``: ``nccl-ring`` and PyTorch
    ``ddp`` buckets when every model is a transformer (what their stacks use), else the paper's
    ``ring`` and Horovod fusion (the paper's CNNs keep the paper's model).
    """
    gpus = [priced_gpu(p) for p in profiles]
    links = {g: gpu_links(g) for g in gpus}
    gpu = min(links, key=lambda g: links[g]) if links else "v100"
    transformers = bool(profiles) and all(is_transformer(p) for p in profiles)
    values = {
        "intra_bandwidth": links.get(gpu, DEFAULTS.intra_bandwidth),
        "collective": "nccl-ring" if transformers else DEFAULTS.collective,
        "bucketing": "ddp" if transformers else DEFAULTS.bucketing,
    }
    names = sorted({p.model.split("@")[0] for p in profiles})
    where = f"{','.join(names)} on {','.join(dict.fromkeys(gpus))}"
    # and a transformer's precision and batch (a hunt: fp32, then the default, priced on a B200 fabric unsaid
    # but in the model's label)
    runs = [p for p in profiles if is_transformer(p)]
    if runs:
        precisions = ",".join(dict.fromkeys(str(p.dtype) for p in runs))
        said = f"in {precisions} at batch {','.join(dict.fromkeys(str(p.batch_size) for p in runs))}"
        # beside the paper's CNNs (their own runs: fp32, batch 32) said of the transformers alone (a review)
        where += f" {said}" if len(runs) == len(profiles) else f" (the transformers {said})"
    return values, where


def refuse_mixed_stacks(profiles: Sequence[Profile], unset: Collection[str]) -> None:
    """Refuse a sweep of the paper's CNNs and transformers together that leaves ``--collective`` or
    ``--bucketing`` to follow the workload (in ``unset``): each kind's default differs (:func:`workload_defaults`)
    and a sweep takes one, so one kind would silently take the other's."""
    kinds = {is_transformer(p): p.model for p in profiles}
    missing = [key for key in ("collective", "bucketing") if key in unset]
    if len(kinds) < 2 or not missing:
        return
    key = missing[0]
    ours = {"collective": ("nccl-ring", DEFAULTS.collective), "bucketing": ("ddp", DEFAULTS.bucketing)}[key]
    raise InputError(
        f"not given, and its default follows the workload: {ours[0]} for {kinds[True]} (a transformer's stack), "
        f"{ours[1]} for {kinds[False]} (the paper's); a sweep of both holds one: give {FLAGS[key]}"
        f"{' and --bucketing' if len(missing) > 1 else ''}, or sweep each alone",
        param=key,
    )


def gpu_links(gpu: str) -> float:
    """A GPU preset's NVLink rate, Gbit/s one direction, as ``--intra-bw`` takes it."""
    return GPUS[gpu].nvlink * 8 / 1e9


def own_links(profile: Profile) -> float:
    """The NVLink rate (Gbit/s, one direction) of the GPU ``profile`` is priced on (:func:`priced_gpu`)."""
    return gpu_links(priced_gpu(profile))


def own_table(profile: Profile) -> Table:
    """The model reduce-cost table (:func:`sweep.model.vector_add.default_table`) at the HBM rate of the GPU
    ``profile`` is priced on: a sweep of several GPUs prices each profile's reductions with its own GPU's."""
    return default_table(GPUS[priced_gpu(profile)].hbm)


def several_gpus(profiles: Sequence[Profile], rate: str) -> bool:
    """Whether ``profiles`` are priced on GPUs of more than one ``rate`` (``"nvlink"`` or ``"hbm"``)."""
    return len({getattr(GPUS[priced_gpu(p)], rate) for p in profiles}) > 1


def own_gpu(profiles: Sequence[Profile], links: bool, table: bool) -> tuple[str, ...]:
    """What each of ``profiles`` takes of its own GPU (:attr:`~sweep.engine.grid.Grid.own_gpu`, and a fit's rows
    alike): ``"intra"`` its NVLink (``links``: no ``--intra-bw`` given), ``"reduce"`` its reduce table (``table``:
    none given), each where the profiles' GPUs differ in it."""
    return (
        *(("intra",) if links and several_gpus(profiles, "nvlink") else ()),
        *(("reduce",) if table and several_gpus(profiles, "hbm") else ()),
    )


def _each_gpu(profiles: Sequence[Profile], value: Any) -> str:
    """``v100 1200, h100 3600``: each GPU of ``profiles`` and ``value(gpu)``, once each, in order."""
    return ", ".join(f"{g} {value(g)}" for g in dict.fromkeys(priced_gpu(p) for p in profiles))


def workload_reduce_table(profiles: Sequence[Profile]) -> tuple[Table, str, str]:
    """The default reduce-cost table of a sweep of ``profiles``: the model table
    (:func:`sweep.model.vector_add.default_table`) at the HBM rate of their GPU (the V100's for a profile on an
    unknown GPU, as the paper's CNNs), its source (text), and what the sweep says of it where it is not the
    V100's (else ""). Where their GPUs' HBM differs, each profile is priced with its own GPU's table
    (:func:`own_table`, :attr:`~sweep.engine.grid.Grid.own_gpu`; a hunt: an H100 beside a V100 reduced at the
    V100's HBM), and the table returned, the slowest's, is the sweep's record."""
    gpus = [priced_gpu(p) for p in profiles] or [PAPER_GPU]
    gpu = min(gpus, key=lambda g: GPUS[g].hbm)
    hbm = GPUS[gpu].hbm
    if several_gpus(profiles, "hbm"):
        rates = _each_gpu(profiles, lambda g: f"{GPUS[g].hbm / 1e12:g}")
        return (
            default_table(hbm),
            f"default model at each GPU's HBM ({rates} TB/s)",
            (f"reductions at each GPU's HBM ({rates} TB/s)"),
        )
    if hbm == V100_HBM_BYTES_PER_S:
        return default_table(), "default V100 model", ""
    said = f"reductions at the {gpu}'s HBM ({hbm / 1e12:g} TB/s)"
    return default_table(hbm), f"default model at the {gpu}'s HBM, {hbm / 1e12:g} TB/s", said


def reads_intra(collectives: Sequence[str]) -> bool:
    """Whether a sweep's collectives read ``--intra-bw``: ``hierarchical``, the ``nccl-*`` rings and trees and
    NCCL's own (``nccl``, ``nccl:...``); the flat ``ring``, ``tree`` and ``ps`` cross the nodes' links alone."""
    return any(c == "hierarchical" or c.startswith("nccl") for c in collectives)


def assumed_text(
    profiles: Sequence[Profile],
    chosen: Mapping[str, Any],
    always: bool = False,
    collectives: Sequence[str] = (),
) -> str:
    """One line of what a sweep assumed that the user did not set (``chosen``: setting -> value
    filled in), empty where nothing departs from the paper's defaults (its CNNs on a V100) unless ``always``
    (a fit, whose values hold for the collective it assumed) or the intra-node rate is chosen and one of the
    sweep's ``collectives`` reads it (a hunt: nccl-ring's answer moved with an --intra-bw the line never named).
    Where the profiles' NVLinks differ, each is priced at its own GPU's (:attr:`~sweep.engine.grid.Grid.own_gpu`),
    and the line names each."""
    if not chosen:
        return ""
    always = always or ("intra_bandwidth" in chosen and reads_intra(collectives))
    values, where = workload_defaults(profiles)
    paper = {
        "intra_bandwidth": DEFAULTS.intra_bandwidth,
        "collective": DEFAULTS.collective,
        "bucketing": DEFAULTS.bucketing,
    }
    gpus = [priced_gpu(p) for p in profiles]
    # A profile on a GPU with no preset (a CSV, a trace, "NVIDIA H100 PCIe") is priced as the paper's V100: said,
    # where it was silent (a hunt), as the user's hardware is likelier anything but a 2017 V100.
    unknown = {p.model: str(p.device or "unknown") for p in profiles if gpu_of(p) is None}
    taken = (
        f"; {', '.join(f'{m} on {d!r}' for m, d in unknown.items())}: no GPU preset, taken as a V100 (the "
        "paper's hardware and collective); give --intra-bw, --collective and --bucketing for your own"
        if unknown
        else ""
    )
    # Nothing to say where the paper's defaults hold for every profile: not where a faster GPU takes the
    # slowest's NVLink (v100 and h100 in one sweep).
    mixed = several_gpus(profiles, "nvlink")  # an H100 and an H200 share one NVLink (a review)
    paper_defaults = all(values[k] == paper[k] for k in chosen) and not mixed
    if paper_defaults and not taken and not always:
        return ""
    parts = []
    for key in (k for k in FOLLOWING if k in chosen):
        value = chosen[key]
        if key == "intra_bandwidth" and mixed:
            parts.append(
                f"{FLAGS[key]} each GPU's NVLink ({_each_gpu(profiles, lambda g: show(gpu_links(g)))} Gbit/s)"
            )
        elif key == "intra_bandwidth":
            parts.append(f"{FLAGS[key]} {value:g} ({gpus[0].upper()} NVLink)")
        else:
            parts.append(f"{FLAGS[key]} {value:g}" if isinstance(value, float) else f"{FLAGS[key]} {value}")
    return f"{where}: {', '.join(parts)}{taken}"


# A backward pass under this share of T1 reads as a T1 in another unit (a hunt: --iteration-time 50, meant as
# 50 ms, put a profile's 2.5 ms backward at 0.005% of its step, and every scaling factor near 1, unsaid); the
# built-in models' backward passes are 51-67% of their T1.
LEAST_BACKWARD_SHARE = 0.01


def profiles_said(
    profiles: Sequence[Profile], compresses: bool, bucketings: Sequence[str], values: Mapping[str, Any]
) -> list[str]:
    """What a sweep says of its profiles' own numbers: a T1 that dwarfs the backward (:func:`t1_said`), where
    it compresses a gradient element's size taken from the dtype alone (:func:`elements_said`), and weights and
    Adam states over a GPU's memory on the sweep's fewest GPUs (``values``' nodes x gpus_per_node:
    :func:`memory_said`)."""
    least_gpus = int(np.min(values["nodes"]) * np.min(values["gpus_per_node"]))
    return (
        t1_said(profiles)
        + elements_said(profiles, compresses)
        + memory_said(profiles, bucketings, least_gpus)
    )


def t1_said(profiles: Sequence[Profile], given_in: str = "--iteration-time") -> list[str]:
    """What a sweep says of a profile whose backward pass is under :data:`LEAST_BACKWARD_SHARE` of its iteration
    time T1 (the network overlaps the backward, so such a T1 leaves it almost nothing to slow), or whose compute
    a T1 given scaled by more than 1 / :data:`LEAST_BACKWARD_SHARE` either way (a built-in model's or a JSON
    profile's T1 scales its backward with it: a review). ``given_in``: where the T1 was given."""
    said = []
    for p in profiles:
        backward = float(p.wait.sum())
        if 0 < backward < LEAST_BACKWARD_SHARE * p.t1:  # none at all: nothing overlapped, no unit to doubt
            said.append(
                f"{p.model}'s iteration time {p.t1:g} s is {p.t1 / backward:,.0f} times its backward pass "
                f"({backward:.3g} s), which the network overlaps: T1 is in seconds ({given_in})"
            )
        elif not LEAST_BACKWARD_SHARE <= p.compute_scale <= 1 / LEAST_BACKWARD_SHARE:
            said.append(
                f"{p.model}'s compute scaled x{p.compute_scale:.4g} to T1 = {p.t1:g} s from its own "
                f"{p.t1 / p.compute_scale:.4g} s: T1 is in seconds ({given_in})"
            )
    return said


# Bytes a parameter that Adam's training keeps on the GPU that updates it: mixed precision's 2 (half-precision
# weights) + 2 (their gradients) + 12 (fp32 weights, momentum and variance), Rajbhandari et al., "ZeRO: Memory
# Optimizations Toward Training Trillion Parameter Models", SC'20, Sec. 3.1; fp32 training's 4 + 4 + 8 the same.
ADAM_BYTES_PER_PARAMETER = 16
GIB = 2**30


def memory_said(profiles: Sequence[Profile], bucketings: Sequence[str], least_gpus: int) -> list[str]:
    """What a data-parallel sweep says of a profile on a GPU preset whose weights, gradients and Adam states
    alone, :data:`ADAM_BYTES_PER_PARAMETER` a parameter (parameters: each tensor's gradient bytes over its
    element's), exceed the GPU's memory: under every GPU a copy (``ddp``, ``horovod``), or under ``fsdp`` sharded
    over the sweep's fewest GPUs ``least_gpus`` (a hunt: DDP of a 6.7B model on 80 GB H100s priced at a scaling
    factor of 0.9996, 108 GB a GPU before activations, unsaid). The sweep models no memory otherwise. A card whose
    name states another memory than its preset's (``A100-SXM-64GB``) is held to the stated, read as GiB as the
    presets read theirs (a review);
    a profile whose element size is a guess (no shapes, no dtype: :func:`elements_said`) is not counted."""
    said = []
    for p in profiles:
        gpu = gpu_of(p)
        if gpu is None or (p.shape is None and p.dtype == Profile.dtype):
            continue
        stated = stated_gb(str(p.device))  # GiB, as the presets read "40GB"
        own = stated is not None and named_memory_differs(str(p.device), gpu)
        capacity = stated * GIB if stated is not None and own else GPUS[gpu].memory
        states = ADAM_BYTES_PER_PARAMETER * float(np.sum(p.grad_bytes / p.element_bytes))
        held = (
            f"{p.model}'s weights, gradients and Adam states alone (16 bytes a parameter: ZeRO, SC'20) take"
        )
        over = f"over the {repr(str(p.device)) if own else gpu}'s {capacity / GIB:.0f} GiB before activations"
        copies = [b for b in bucketings if b != "fsdp"]
        if copies and states > capacity:
            said.append(
                f"{held} {states / GIB:,.1f} GiB on every GPU under {', '.join(copies)}, {over}: not as priced (a "
                "run that shards, offloads or shrinks them holds less)"
            )
        if "fsdp" in bucketings and states / least_gpus > capacity:
            said.append(
                f"{held} {states / least_gpus / GIB:,.1f} GiB on "
                + ("its one GPU" if least_gpus == 1 else f"each of {least_gpus:,} GPUs")
                + f" under fsdp, {over}: "
                "more GPUs shard them thinner"
            )
    return said


def elements_said(profiles: Sequence[Profile], compresses: bool) -> list[str]:
    """What a sweep that compresses says of a profile whose gradients' element size is the default dtype's, with
    no tensor shapes nor a dtype of its own to tell it (a CSV profile without a shape column: fp32, 4 bytes,
    whatever the model trains in; a hunt: a bf16 model's fp16 cast priced as halving its payload)."""
    if not compresses:
        return []
    return [
        f"{p.model}'s gradients taken as float32, 4 bytes an element (no tensor shapes; a JSON profile's dtype "
        "or a CSV shape column says otherwise)"
        for p in profiles
        if p.shape is None and p.dtype == Profile.dtype
    ]


def check_models(model: object) -> None:
    """Refuse a ``model`` that is not a built-in name, a comma list, a Profile or a list of them."""
    if not (
        isinstance(model, (str, Profile))
        or isinstance(model, (list, tuple))
        and all(isinstance(m, (str, Profile)) for m in model)
    ):
        raise InputError(
            f"{model!r}: expected a built-in name, a comma list, a Profile or a list of them", param="model"
        )
    # none at all, as evaluate's grid says it (a hunt: compare's had been an error of xarray's concat)
    if isinstance(model, (list, tuple)) and not model:
        raise InputError("[]: give at least one model or profile", param="model")
    for m in [model] if isinstance(model, Profile) else model if isinstance(model, (list, tuple)) else []:
        if isinstance(m, Profile):
            m.checked()  # before a name is read (a hunt: a model of 5 was a TypeError deep in the grid)


def _named(model: Models) -> list[str | Profile]:
    """The models named: built-in names (checked) or profiles as given (unchecked)."""
    check_models(model)
    if isinstance(model, str):
        for name in model.split(","):
            refuse_large_model(name)
        return list(parse_names(model, "model", builtin_names() + tuple(TRANSFORMERS)))
    return list([model] if isinstance(model, Profile) else model)


def _model_names(model: Models) -> list[str | Profile]:
    """The models named: built-in names or profiles, each checked."""
    # A Profile built or edited in Python (dataclasses.replace) is checked as a file's is: by make_profile's rules.
    return [m.checked() if isinstance(m, Profile) else m for m in _named(model)]


def _has_transformer(names: Sequence[str | Profile]) -> bool:
    return any(isinstance(n, str) and n in TRANSFORMERS for n in names)


def takes_workload(model: Models) -> bool:
    """Whether some model named is a transformer, whose workload (``gpu``, ``precision``, ...) it takes (a
    profile's own checks are :func:`resolve_models`')."""
    return _has_transformer(_named(model))


def resolve_models(
    model: Models = DEFAULTS.model,
    profile: str | Path | None = None,
    iteration_time: float | None = None,
    *,
    gpu: WorkloadValues = None,
    precision: WorkloadValues = None,
    batch: WorkloadValues = None,
    seq_len: WorkloadValues = None,
) -> tuple[Profile, ...]:
    """The profiles a sweep runs on: a profile file, or built-in names.

    Args:
      model: a built-in name or comma list of them (the paper's CNNs, or a
        transformer of :data:`sweep.model.transformers.TRANSFORMERS`), a :class:`Profile`,
        or a sequence of either (ignored when ``profile`` is given).
      profile: a profile file (.json, .csv, .bk.log), or None.
      iteration_time: T1 in seconds: for a profile file that has none, or to put a built-in model or a profile
        file with a T1 of its own on other hardware (its compute scaled to this T1:
        :func:`~sweep.model.profile.load_profile`).
      gpu, precision, batch, seq_len: for transformers, each a value or a comma list
        (every combination becomes a profile, named like ``gpt2-xl@h100-bf16-b8``);
        see :mod:`sweep.model.compute`.
    """
    if iteration_time is not None:  # checked as the option it is, before a profile file's own rules
        iteration_time = _checked_iteration_time(iteration_time)
    workload = {"gpu": gpu, "precision": precision, "batch": batch, "seq_len": seq_len}
    given = {k: v for k, v in workload.items() if v is not None}
    if profile is not None:
        if given:  # a profile file is measured on its own GPU, precision and batch: they were dropped
            raise InputError(
                f"{_text(next(iter(given.values())))}: only for built-in transformer models, not with a profile "
                "file (measured on its own GPU, precision and batch; --iteration-time scales its compute)",
                param=next(iter(given)),
            )
        if not Path(profile).is_file():  # named with the option (an empty one is the current directory)
            raise InputError(f"{profile}: {not_a_file(Path(profile), 'profile file')}", param="profile")
        return (load_profile(profile, t1=iteration_time),)  # its compute scaled to it, as a built-in's
    names = _model_names(model)
    if given and not _has_transformer(names):
        raise InputError(
            f"{_text(next(iter(given.values())))}: only for transformer models "
            f"({', '.join(TRANSFORMERS)}); the CNN profiles are the paper's V100 runs "
            f"(sweep grid's --iteration-time scales them)",
            param=next(iter(given)),
        )
    found: list[Profile] = []
    for n in names:
        if isinstance(n, str) and n in TRANSFORMERS:
            found += _workloads(n, given)
        else:
            found.append(builtin_profile(n) if isinstance(n, str) else n)
    models = tuple(found)
    if iteration_time is None:
        return models
    return tuple(p.scaled_to(iteration_time, "--iteration-time") for p in models)


def _checked_iteration_time(iteration_time: object) -> float:
    """A T1 as a float (NumPy's numbers too), refused unless a number of seconds in [:data:`MIN_SECONDS`,
    :data:`MAX_SECONDS`]."""
    seconds = real_scalar(iteration_time)
    if seconds is None or not MIN_SECONDS <= seconds <= MAX_SECONDS:
        shown = repr(iteration_time) if seconds is None else show(seconds)
        raise InputError(f"{shown}: must be a number of seconds in [1e-6, 1e4]", param="iteration_time")
    return seconds


def _text(value: object) -> str:
    return (
        value
        if isinstance(value, str)
        else ",".join(map(str, value))
        if isinstance(value, (list, tuple))
        else str(value)
    )


def _names(value: object, param: str) -> list[str]:
    """Names given as a list, a tuple, a NumPy array or a pandas Series (each item text) -> list; anything else,
    one name; a set or a mapping, or an item that is not text, refused by name."""
    if isinstance(value, (set, frozenset, Mapping)):
        raise InputError(f"{value!r}: give the names as a comma list or a list, in order", param=param)
    listed = hasattr(value, "tolist") and not isinstance(value, (bytes, bytearray))  # NumPy, pandas
    items: list[Any] = (
        list(value) if isinstance(value, (list, tuple)) else _flat(value) if listed else [value]
    )
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"{item!r}: give a name, as text (such as h100 or bf16)", param=param)
    return [str(item) for item in items]


def _flat(value: Any) -> list[Any]:
    """A NumPy array's or a pandas Series' items, flattened (a 0-d array: its one item)."""
    items = value.tolist()
    return items if isinstance(items, list) else [items]


def _values(value: object, param: str, integer: bool) -> list[Any]:
    """A comma list or a sequence -> list; integers checked; names (GPUs, precisions) as text, a NumPy array's or a
    pandas Series' too (a hunt: they reached a preset lookup and raised "unhashable type")."""
    items = (
        value.split(",")
        if isinstance(value, str)
        # NumPy's too; a bool refused, as an axis refuses it (a string here is a comma list, never a range)
        else flat_values(value, param, "whole numbers", "a comma list such as 8,16")
        if integer
        else _names(value, param)
    )
    if not items:  # an empty value is refused by name, never an empty sweep of this setting
        raise InputError(f"{value!r}: give at least one value", param=param)
    # a doubled or trailing comma, as every list says it (a Workload's "" precision would be its GPU's default)
    refuse_empty_item(items, value, param)
    out: list[Any] = []
    for item in items:
        item = item.strip().lower() if isinstance(item, str) else item  # presets: H100 is h100, BF16 is bf16
        if integer:
            try:
                # anything: what decimal() or float() refuses is reported
                number = decimal(item) if isinstance(item, str) else float(item)
            except (TypeError, ValueError):
                raise InputError(f"{item!r}: not a number", param=param) from None
            if not number.is_integer():
                raise InputError(f"{show(number)}: must be an integer", param=param)
            item = int(number)
        if item in out:  # it made two profiles of one name, refused as "--model ...: names repeat"
            raise InputError(f"{_text(value)}: {item} is given twice", param=param)
        out.append(item)
    return out


def _workloads(name: str, given: Mapping[str, object]) -> list[Profile]:
    """Every combination of the transformer workload settings, as profiles."""
    axes = {k: _values(v, k, k in ("batch", "seq_len")) for k, v in given.items()}
    # bf16 on the default GPU, which the user never named (a fabric preset may name none): said so
    if "gpu" not in axes:
        for precision in axes.get("precision", []):
            refuse_on_volta(
                Workload.gpu,
                precision=precision,
                whose=" on the default GPU (no GPU given; give one, e.g. h100)",
            )
    keys = list(axes)
    return [
        transformer_profile(Workload(name, **dict(zip(keys, combo))))
        for combo in itertools.product(*(axes[k] for k in keys))
    ]
