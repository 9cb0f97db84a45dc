"""The public API of the large-model family: every layout of a transformer on a cluster, and the best ones.

:func:`evaluate_layouts` is ``sweep grid --model llama3-70b ...``: the layout model
(:mod:`netsweep_jax.kernels.layout`) over the outer product of the values given, as an
``xarray.Dataset`` with the dims, coordinates and variables of a layout cube. :func:`plan` is
``sweep plan``: the layout options not given are searched, and the ``keep`` fastest layouts
that can exist and fit in memory are kept per network setting, with what the network costs the
best one against an ideal network. Both take their options by keyword, named as the CLI's short
options (``tp``, ``micro_batch``, ``bandwidth``, ...; a few are shorter: ``offload_layers`` is
``--cpu-offloading-num-layers``, ``capacity_factor``, ``pad_to_capacity`` and ``dispatch_fp8`` are
``--moe-expert-capacity-factor``, ``--moe-pad-expert-input-to-capacity`` and ``--moe-dispatch-fp8``; a CLI
name is refused naming its keyword), each a number, a sequence, or the CLI's value
syntax (``"1..8"``); network options not given follow the GPU's usual system, and what was
assumed is the result's ``assumed`` attribute. Bad input raises
:class:`~netsweep_jax.sweep.core.errors.InputError`, naming the keyword.

Units are the CLI's: bandwidth in Gbit/s per NIC, latency in us, overhead in ms, NVLink in
GB/s, GEMM latency in us, memory fractions and efficiencies as plain numbers.
"""

import math
import os
from collections.abc import Sequence
from typing import Any

import xarray as xr
from typing_extensions import Unpack

from netsweep_jax.sweep.analysis.layout_jobs import layout_cube, layout_grid_from
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, OVERSUBSCRIPTION, show
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords
from netsweep_jax.sweep.core.layout_axes import AXES, LayoutAxisKeywords, Values
from netsweep_jax.sweep.core.sweep_settings import SettingKeywords
from netsweep_jax.sweep.core.values import flat_values, real_scalar
from netsweep_jax.sweep.engine.outputs import check_dtype
from netsweep_jax.sweep.model.fabrics import FABRICS, FabricPreset

__all__ = ["LayoutOptions", "evaluate_layouts", "plan"]


class LayoutOptions(LayoutAxisKeywords, SettingKeywords, total=False):
    """The keywords of :func:`evaluate_layouts` and :func:`plan`, each optional, named (as the module says) and
    in the units of the CLI's options (``sweep grid --help``'s "Large models" panel gives each one's meaning and default).

    Keys:
      The layout family's numeric options, each a number, numbers or the CLI's value syntax:
        :class:`~sweep.core.layout_axes.LayoutAxisKeywords` (the layout: ``gpus``, ``dp``, ``tp``, ``pp``, ``cp``,
        ``ep``, ``expert_tp``, ``micro_batch``, ``global_batch``, ``zero``, ``sequence_parallel``; the NVLink
        domain and rate; the model's constants: ``efficiency``, ``grad_bytes``, ...).
      nodes: nodes x GPUs per node, instead of ``gpus``.
      schedule, recompute, attention: the pipeline schedule(s), recomputation and attention kernel, as the CLI's
        text (``"1f1b,interleaved:2"``).
      gpu, precision: GPU preset(s), precision(s).
      collective: ``"nccl"`` (NCCL's tuner for each group as placed; a fabric's default), ``"nccl:ALGO"`` (its
        algorithm forced, as NCCL_ALGO: ``"nccl:ring"``, ``"nccl:tree"``, ...) and ``"nccl:PROTO"`` (its protocol
        forced, as NCCL_PROTO: ``"nccl:ll"``, ``"nccl:ll128"``, ``"nccl:simple"``), or flat ones (``"ring"``,
        ``"tree"``, ``"ring-or-tree"``: the default); a list of either kind sweeps each, ``--collective``.
      collectives: the old spelling of the pricing, ``"flat"`` or ``"nccl"`` (``--collectives``).
      stack: a stack preset (``"megatron-core"``: :data:`sweep.model.stacks.STACKS`, ``--stack``): its defaults
        and fitted constants for whatever is not given; None: the default stack's fitted constants
        (:data:`sweep.model.stacks.DEFAULT_STACK`'s efficiency, memory efficiency and utilization on the GPU's
        die), nothing else of it.
      fabric: with collective "nccl" (which it implies), a fabric preset's name (:data:`sweep.model.fabrics.FABRICS`) or a fabric
        file's path (``sweep calibrate --nccl-tests``): its constants replace the shipped fit's (``--fabric``).
      oversubscription: with a fabric preset, the spine's oversubscription (``--oversubscription``; one value:
        the command ``sweep plan`` plans each value of a list).
      gpus_per_node, nics_per_node, bandwidth, utilization, latency: the cluster (not given: the GPU's usual
        system; the utilization the default stack's fit holds on the GPU's die, as ``--util``'s help says, 1
        under NCCL's pricing; no latency).
      overhead, slowdown, jitter: as a data-parallel sweep's.
      dtype: ``"float32"`` (default) or ``"float64"``.
      And the stack's settings of one value per sweep, each a number (or value syntax) or a name:
        :class:`~sweep.core.sweep_settings.SettingKeywords` (``usable_memory``, ``overlap``, ...).
    """

    nodes: Values
    schedule: Values
    recompute: Values
    attention: Values
    collectives: str
    stack: str
    fabric: str | os.PathLike[str]
    oversubscription: Values
    gpu: Values
    precision: Values
    collective: Values
    gpus_per_node: Values
    nics_per_node: Values
    bandwidth: Values
    utilization: Values
    latency: Values
    overhead: Values
    slowdown: Values
    jitter: Values
    dtype: str


def _text(name: str, value: object) -> str:
    """A keyword's value as the CLI's text. A numeric option's (a number, Python's or NumPy's, a 0-d array, a
    flat sequence or 1-D array) by :func:`~sweep.core.values.flat_values`'s rule, the one the data-parallel
    axes keep: nesting and empties refused, never flattened or joined into an empty value. A name option's
    (``model``, ``schedule``, ...): a string or a flat sequence of them."""
    if isinstance(value, str):
        return value
    if name == "fabric" and isinstance(value, os.PathLike):
        return os.fspath(value)
    if name == "fabric" and isinstance(
        value, FabricPreset
    ):  # a preset as evaluate takes it, by its name (a hunt:
        if FABRICS.get(value.name) == value:  # its 2,000-character repr was the refusal)
            return value.name
        raise InputError(
            f"FabricPreset {value.name!r} changed in Python: the large-model functions take a preset's name or a "
            "fabric file's path",
            param=name,
        )
    spec = AXES.get(name) or {"nodes": NUMERIC_AXES["nodes"], "oversubscription": OVERSUBSCRIPTION}.get(name)
    if spec is not None:
        numbers = flat_values(value, name, spec.rule())
        for number in numbers:
            # refused as a number, never read back as the text "nan" (a hunt: told to write digits 0-9)
            if not math.isfinite(number):
                raise InputError(f"{number}: {spec.rule()}", param=name)
        return ",".join(_exact(v) for v in numbers)
    if isinstance(value, Sequence) and value and all(isinstance(item, str) for item in value):
        return ",".join(value)
    raise InputError(f"{value!r}: give a name, a comma list or a sequence of names", param=name)


def _exact(value: float) -> str:
    """A number as text that reads back as the same float: as the CLI shows it where that is exact (``8``,
    ``0.5``), else every digit (``np.geomspace(25, 400, 4)[1]``: its coordinate is the value given)."""
    shown = show(value)
    return shown if float(shown) == float(value) else repr(float(value))


def _grid(
    model: str | Sequence[str] | None,
    arch: str | None,
    options: dict[str, Any],
    search: bool,
    **kept: Any,
) -> Any:
    """The layout grid of ``model`` (or ``arch``) and the options, as the CLI builds it (``kept``: what the cube
    keeps, :func:`~sweep.analysis.layout_jobs.layout_grid_from`'s)."""
    if model is None and arch is None:
        raise InputError("name a large-model preset (sweep models lists them) or give arch", param="model")
    options = {k: v for k, v in options.items() if v is not None}  # None: not given, as evaluate's axes
    dtype = check_dtype(options.pop("dtype", "float32"))  # any case, as every name
    settings: dict[str, Any] = {name: _text(name, value) for name, value in options.items()}
    given = set(settings)
    if model is not None:
        settings["model"] = _text("model", model)
        given.add("model")
    settings["arch"] = arch
    settings["x64"] = dtype == "float64"
    return layout_grid_from(settings, given, search=search, **kept)


@refuse_unknown_keywords
def evaluate_layouts(
    model: str | Sequence[str] | None = None,
    *,
    arch: str | None = None,
    vars: str | Sequence[str] | None = None,  # noqa: A002 (the public keyword, as --vars)
    store: str | None = None,
    reduce: str | Sequence[str] | None = None,
    **options: Unpack[LayoutOptions],
) -> xr.Dataset:
    """Every layout of a large model on a cluster (``sweep grid --model llama3-70b ...``).

    Args:
      model: a large-model preset or several (``"llama3-70b"``, ``["llama3-8b", "llama3-70b"]``).
      arch: instead, a transformer by shape (``"layers=32,hidden=4096,heads=32,seq=4096,vocab=32000"``).
      vars, store, reduce: as ``sweep grid``'s ``--vars``, ``--store`` and ``--reduce`` (``"argmax:tp,pp"``: the
        Dataset then has the dims not reduced, and each extreme's coordinates).
      **options: :class:`LayoutOptions`.

    Returns:
      A layout cube: every layout option a dim, every output (``tokens_per_s``, ``iteration_time``,
      ``memory_gb``, ``fits``, ``status``, what the step waits on, ...) a variable over all of them;
      ``status`` 0 where the layout can exist (its ``rules`` attribute says what the others break).
    """
    return layout_cube(
        _grid(model, arch, dict(options), search=False, variables=vars, store=store, reduce=reduce)
    )


@refuse_unknown_keywords
def plan(
    model: str | Sequence[str] | None = None,
    *,
    arch: str | None = None,
    keep: int = 3,
    **options: Unpack[LayoutOptions],
) -> xr.Dataset:
    """The ``keep`` fastest layouts of a large model per network setting (``sweep plan``).

    The layout options not given are searched (tp 1, 2, 4, 8; pp in powers of two; cp 1, 2, 4; for MoE
    models ep in powers of two up to the experts and expert tp 1, 2, 4, 8; micro-batch 1, 2, 4, 8; 1f1b and
    interleaved:2; recompute none, selective and full; ZeRO 0, 1 and 3; sequence parallelism held on); those
    given are searched among their values (a list is part of the search, not a dim).
    The dims are the settings (model, GPU, bandwidth, ...: one each or a list), ``rank`` and ``switch``.

    Args:
      model, arch, **options: as :func:`evaluate_layouts`.
      keep: layouts kept per setting, fastest first (1 to 100).

    Returns:
      A cube over the kept dims and ``rank``: each ranked layout's coordinates and outputs, and per
      setting ``network_cost`` (the share of the best step an ideal network would save) and
      ``switch_change`` (what flipping each overlap switch would do to the best step).
    """
    from netsweep_jax.sweep.analysis.planning import check_size
    from netsweep_jax.sweep.analysis.planning import plan as best

    value = real_scalar(keep)  # NumPy's numbers and a 0-d array too, never a bool; 2.0 as gpus=8.0 is taken
    if value is None or not math.isfinite(value) or value != int(value) or not 1 <= value <= 100:
        raise InputError(
            f"{show(value) if value is not None else repr(keep)}: an integer from 1 to 100", param="keep"
        )
    keep = int(value)
    grid = _grid(model, arch, dict(options), search=True)
    grid.spine()  # one oversubscription a call (the command plans a list value by value)
    check_size(grid)
    return best(grid, keep=keep)
