"""A layout sweep from the user's options: :func:`make_layout_grid` validates them into a
:class:`~sweep.engine.layout_grid.LayoutGrid` and names what it assumed that the user did not set.
"""

import dataclasses
import itertools
from collections.abc import Collection, Sequence
from typing import Any, TypedDict

import numpy as np

from netsweep_jax.sweep.core.axes import apart, show
from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.families import LAYOUTS
from netsweep_jax.sweep.core.layout_axes import (
    ATTENTIONS,
    AXES,
    COLLECTIVES_MODES,
    DEFAULT_ATTENTION,
    DEFAULT_COLLECTIVE,
    DEFAULT_GPU,
    DEFAULT_PRECISION,
    DEFAULT_SCHEDULE,
    FLAT_COLLECTIVES,
    LAYOUT_COLLECTIVES,
    LAYOUT_PRECISIONS,
    PARALLEL_DIMS,
    RECOMPUTE_HELP,
    SYSTEM_DIMS,
    recompute_mode,
    schedule_name,
    uses_nccl,
)
from netsweep_jax.sweep.core.sweep_settings import (
    NUMERIC,
    SETTINGS,
    TEXT_SETTINGS,
    SweepSettings,
    assumed_phrases,
    overlap_mode,
)
from netsweep_jax.sweep.core.values import digits12, flat_values, one_name, parse_names, parse_values
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid, parse_schedule
from netsweep_jax.sweep.engine.outputs import check_dtype, kept_outputs, store_dtype
from netsweep_jax.sweep.engine.reductions import parse_reductions
from netsweep_jax.sweep.model.compute import (
    EFFICIENCY,
    GPUS,
    PRECISIONS,
    VOLTA_PRECISION,
    die,
    refuse_on_volta,
    system_settings,
    volta,
)
from netsweep_jax.sweep.model.fabric_constants import UTILIZATION_ON_ETA, FabricConstants
from netsweep_jax.sweep.model.fabrics import FabricPreset, oversubscriptions
from netsweep_jax.sweep.model.llms import LLM, LLMS, parse_arch, resolve_llm
from netsweep_jax.sweep.model.nccl_fabric import ARCH, SHIPPED
from netsweep_jax.sweep.model.nccl_forcing import NEEDS, forced_algorithm, forced_protocol, nowhere
from netsweep_jax.sweep.model.stacks import CONSTANTS, DEFAULT_STACK, Stack, constants, stack_preset

# The settings only a mixture-of-experts model reads (the imbalance axis, and each setting declared moe): refused on
# dense models.
MOE_ONLY = ("imbalance", *(name for name, declared in SETTINGS.items() if declared.moe))


# Why a stack's setting takes one value: what a refusal of a list says.
ONE_PER_SWEEP = (
    "it is one per sweep, a property of the stack and not a dim (a layout cube has HDF5's 32 dims already); "
    "run a sweep per value"
)


def _values(name: str, given: object, default: str | None) -> np.ndarray:
    """The values of option ``name``: ``given`` (the user's: text, a number or numbers; an empty one is
    refused by :func:`parse_values`, never read as unset), else ``default``; ``[0.]``, the kernel's "derived
    or the GPU preset's", where both are None (None: no value a user can type)."""
    spec = AXES[name]
    text = given if given is not None else default
    if text is None:
        return np.zeros(1)
    if not isinstance(text, str):
        text = ",".join(show(v) for v in flat_values(text, name, spec.rule()))
    return parse_values(text, spec)


def make_layout_grid(
    model: str | None = None,
    *,
    arch: str | None = None,
    gpu: str = DEFAULT_GPU,
    precision: str | None = None,
    attention: str | None = None,
    mtp_layers: object = None,
    collectives: str | None = None,
    fabric: FabricConstants | FabricPreset | None = None,
    oversubscription: object = None,
    schedule: str | None = None,
    recompute: str | None = None,
    collective: str | None = None,
    dtype: str = "float32",
    search: dict[str, str] | None = None,
    variables: str | Sequence[str] | None = None,
    store: str | None = None,
    reduce: str | Sequence[str] | None = None,
    stack: str | None = None,
    **axes: object,
) -> LayoutGrid:
    """A validated :class:`LayoutGrid`. ``axes``: the numeric options by name (:data:`~sweep.core.layout_axes.AXES`:
    ``tp=8``, ``gpus="64,128"``), each in the value syntax (``1,2,4``, ``1..8``), a number or numbers; None or
    not given: its default (or "derived or the GPU preset's" for those without one). ``precision``,
    ``attention``, ``recompute``, ``schedule``: None is the default (bf16, flash, none, 1f1b; fp16 and unfused on
    V100s alone), or ``stack``'s. ``stack``: a stack preset (:data:`sweep.model.stacks.STACKS`): its defaults and
    its constants for the GPUs' die (:func:`sweep.model.stacks.constants`) for every setting not given
    (:func:`_stack_settings`); None: the default stack's constants alone (:func:`_default_constants`).
    ``search``: defaults for the layout dims the caller did not set (``sweep plan``'s search space).
    ``variables``, ``store``, ``reduce``: as ``sweep grid``'s ``--vars``, ``--store``, ``--reduce`` (the outputs
    a cube keeps, the dtype it stores them in, the dims it reduces on the device). ``fabric``: a preset
    (:data:`sweep.model.fabrics.FABRICS`: its cluster settings for those not given, its hosts a leaf, its
    constants) or a fabric file's constants, with NCCL's collectives; ``oversubscription``: the spine's."""
    texts: dict[str, Any] = {name: axes.pop(name, None) for name in TEXT_SETTINGS}  # None: not given
    given = _given_axes(axes)  # filled below by presets and defaults
    models, model_names = _models(model, arch, mtp_layers)
    preset = stack_preset(stack) if stack is not None else None
    precision, attention, volta_said = _chip_defaults(gpu, precision, attention, preset)
    attention, recompute, schedule, by_stack, defaults = _text_defaults(
        preset, attention, recompute, schedule
    )
    net, collectives_named = _network(fabric, collectives, collective, given)  # each name checked once, there
    names = _names(model_names, gpu, precision, attention, schedule, recompute, collectives_named)
    _refuse_unread_settings(models, model_names, names, {**given, **texts})
    _require_size(given)
    search = search or {}
    stacked, phrase, texts["overlap"] = _stacked(preset, names, models, given, texts, by_stack, search)
    text_given = {name for name, value in texts.items() if value}  # given or the stack's: the rest are said
    given.update({name: show(value) for name, value in stacked.items()})
    values = _numeric_values(given, search, stacked)
    per_sweep = _per_sweep(values, given, _moe_dispatcher(texts, models))
    spines = net.checked_spines(oversubscription, axes.get("latency"), values, names["gpu"])
    assumed = (
        *volta_said,
        *((phrase,) if preset is not None else ()),
        *_assumed(
            given, names, models, search, text_given, values, "" if preset else phrase, net.preset_name
        ),
        *(f"--{d} {value}" for d, value in defaults.items() if d not in search),
        *_model_said(names, models, mtp_layers is None),
        *net.said(None if oversubscription is None else spines, names["gpu"]),
        *_tp_comm_said(texts["overlap"], values),
    )
    dtype = check_dtype(dtype)
    return LayoutGrid(
        tuple(models),
        names,
        values,
        dtype,
        assumed,
        kept_outputs(LAYOUTS, variables),
        # The numbers (per_sweep) and the names (_text_settings) of the settings, each one's own kind.
        settings=SweepSettings(**per_sweep, **_text_settings(texts)),  # type: ignore[arg-type]
        collectives=net.mode,
        oversubscription=spines,
        store=store_dtype(store),
        reduction=parse_reductions(reduce, LAYOUTS),
        **net.grid_fields(),
    )


def _tp_comm_said(overlap: str | None, values: dict[str, np.ndarray]) -> tuple[str, ...]:
    """What the assumed line says of the ``tp_comm`` switch where sequence parallelism is off in some layout
    (``values``: the numeric dims' values): there it hides nothing, as Megatron-LM refuses --tp-comm-overlap
    without --sequence-parallel (a review: taken in silence)."""
    mode = overlap_mode(overlap) if overlap else None  # as the sweep spells it (any case, any order)
    if mode and "tp_comm" in mode.split("+") and (values["sequence_parallel"] == 0).any():
        return (
            "overlap tp_comm hides nothing where sequence parallelism is off (Megatron-LM refuses the pair)",
        )
    return ()


def _given_axes(axes: dict[str, object]) -> dict[str, object]:
    """The numeric options as given (None: not given), in the axes' order; a name that is no axis refused as
    Python refuses a keyword a function does not take."""
    unknown = sorted(set(axes) - set(AXES))
    if unknown:
        raise TypeError(f"make_layout_grid() got an unexpected keyword argument {unknown[0]!r}")
    return {name: axes.get(name) for name in AXES if name != "mtp_layers"}


def _stacked(
    preset: Stack | None,
    names: dict[str, tuple[str, ...]],
    models: list[LLM],
    given: dict[str, object],
    texts: dict[str, Any],
    by_stack: dict[str, str],
    search: dict[str, str],
) -> tuple[dict[str, float], str, str | None]:
    """What the stack (``preset``; None: the default stack's constants only) sets of the numeric settings not
    given, the ``assumed`` phrase saying so, and the overlap switches (``texts``' overlap where given:
    :func:`_stack_settings`, :func:`_default_constants`)."""
    overlap = texts["overlap"]
    if preset is not None:
        return _stack_settings(preset, names, models, given, overlap, by_stack, search)
    return (*_default_constants(names, given), overlap)


def _text_defaults(
    preset: Stack | None, attention: str | None, recompute: str | None, schedule: str | None
) -> tuple[str, str, str, dict[str, str], dict[str, str]]:
    """The attention kernel, recomputation and schedule: as given, else as ``preset`` sets them, else the
    defaults (flash, none, 1f1b); those the stack set (name -> value); and the layout's at their defaults, not
    the stack's (recompute, schedule: name -> value), which the assumed line says."""
    by_stack, defaults = {}, {}
    if attention is None:
        attention = by_stack["attention"] = preset.attention if preset else DEFAULT_ATTENTION
    if recompute is None:
        recompute = by_stack["recompute"] = preset.recompute if preset else "none"
        if preset is None:
            defaults["recompute"] = recompute
    if schedule is None:
        schedule = defaults["schedule"] = DEFAULT_SCHEDULE
    return attention, recompute, schedule, by_stack, defaults


def _chip_defaults(
    gpu: str, precision: str | None, attention: str | None, preset: Stack | None
) -> tuple[str, str | None, tuple[str, ...]]:
    """(precision, attention, the assumed line's phrases): as given (None: not), else what the GPUs run: bf16
    (and the stack's or the default attention, None here), but fp16 and unfused attention on V100s alone,
    which have no bf16 tensor cores and cannot run FlashAttention (:func:`sweep.model.compute.volta`)."""
    gpus = parse_names(gpu.lower(), "gpu", tuple(GPUS))
    old = [g for g in gpus if volta(g)]
    if old and attention is None and preset is not None:  # the stack's attention, on a V100
        refuse_on_volta(old[0], attention=preset.attention, whose=f" (stack {preset.name}'s)")
    if len(old) < len(gpus):  # the default bf16 where a V100 is swept beside newer GPUs: said as the default
        if old and precision is None:
            whose = " (the default beside newer GPUs; a sweep has one precision: give --precision fp16, or sweep it alone)"
            refuse_on_volta(old[0], precision=DEFAULT_PRECISION, whose=whose)
        return (DEFAULT_PRECISION if precision is None else precision), attention, ()  # '' is refused later
    said = []
    if precision is None:
        precision = VOLTA_PRECISION
        said.append("precision fp16 (the v100 has no bf16 tensor cores)")
    if attention is None and preset is None:
        attention = "unfused"
        said.append("attention unfused (the v100 cannot run FlashAttention)")
    return precision, attention, tuple(said)


def _models(model: str | None, arch: str | None, mtp_layers: object) -> tuple[list[LLM], list[str]]:
    """The transformers (``arch``'s first, then each preset of ``model``) and their coordinate names; with
    ``mtp_layers``, the MTP depth each trains in place of its own."""
    models: list[LLM] = []
    model_names: list[str] = []
    if arch is not None:
        models.append(parse_arch(arch))
        model_names.append("arch")
    if model is not None:
        for name in parse_names(model.lower(), "model", tuple(LLMS)):
            models.append(resolve_llm(name))
            model_names.append(name.lower())
    if not models:
        raise InputError("name a model (sweep models lists them) or give {0}", param="model", names=("arch",))
    if mtp_layers is not None:  # the MTP depths the run trains, in place of each model's own
        depth = _values("mtp_layers", mtp_layers, None)
        if depth.size != 1:
            raise InputError(
                f"{mtp_layers}: give one value: the depth of the model trained, one per sweep (a sweep per value)",
                param="mtp_layers",
            )
        models = [dataclasses.replace(m, mtp_layers=int(depth[0])) for m in models]
    return models, model_names


def _names(
    model_names: list[str],
    gpu: str,
    precision: str,
    attention: str,
    schedule: str,
    recompute: str,
    collective: tuple[str, ...],
) -> dict[str, tuple[str, ...]]:
    """The text dims' coordinates, each name checked (case-insensitive: presets are spelled in lower case);
    fp8 refused on a GPU without fp8 tensor cores."""
    names = {
        "model": tuple(model_names),
        "gpu": tuple(parse_names(gpu.lower(), "gpu", tuple(GPUS))),
        "precision": tuple(parse_names(precision.lower(), "precision", LAYOUT_PRECISIONS)),
        "attention": tuple(parse_names(attention.lower(), "attention", ATTENTIONS)),
        "schedule": tuple(_schedules(schedule)),
        "recompute": tuple(_recomputes(recompute)),
        "collective": collective,
    }
    for g in names["gpu"]:
        if "fp8" in names["precision"] and GPUS[g].fp8 == 0:
            raise InputError(
                f"fp8: the {g} has no fp8 tensor cores (fp8 needs h100 or newer)", param="precision"
            )
        for precision in names["precision"]:
            refuse_on_volta(g, precision=precision)
        for attention in names["attention"]:
            refuse_on_volta(g, attention=attention)
    return names


def _refuse_unread_settings(
    models: list[LLM], model_names: list[str], names: dict[str, tuple[str, ...]], given: dict[str, object]
) -> None:
    """Refuse a setting given (``given``: name -> value, None where not; ``names``: the text dims' names) that
    changes nothing: a setting is refused, never ignored (:func:`_refuse_moe_settings`,
    :func:`_refuse_unread_attention_efficiency`)."""
    _refuse_moe_settings(models, model_names, given, names["recompute"])
    _refuse_absent_modules(models, model_names, names["recompute"])
    _refuse_unread_attention_efficiency(names["attention"], given["attention_efficiency"])
    offload = given.get("offload_layers")
    # Clamped to the depth in silence (a hunt), where a runs file's row is refused; Megatron-Core takes fewer
    # than the model's layers (TransformerConfig).
    if offload is not None:
        _refuse_offload(_values("offload_layers", offload, None), models, model_names, names, given.get("pp"))


def _refuse_offload(
    offload: np.ndarray,
    models: list[LLM],
    model_names: list[str],
    names: dict[str, tuple[str, ...]],
    pp: object,
) -> None:
    """Refuse an activation offload (``offload``: the layers given) of as many layers as a model has, or where no
    layout could run it: every pp given above 1, or no recompute mode none (status rule 13, Megatron-Core's
    TransformerConfig; a review: a plan of them said only the rule most layouts broke)."""
    most = offload.max()
    shallow = min(models, key=lambda m: m.layers)
    if most >= shallow.layers:
        raise InputError(
            f"{show(most)}: must be fewer than {model_names[models.index(shallow)]}'s {shallow.layers} layers "
            "(Megatron-Core's rule)",
            param="offload_layers",
        )
    stages = _values("pp", pp, None) if pp is not None else np.ones(1)
    if most > 0 and ((stages > 1).all() or "none" not in names["recompute"]):
        raise InputError(
            f"{{0}} {show(most)}: activations are offloaded on one pipeline stage without recomputation alone "
            f"(Megatron-Core's rule): give {{1}} 1 and {{2}} none, or leave {{0}} out",
            names=("offload_layers", "pp", "recompute"),
        )


def _refuse_moe_settings(
    models: list[LLM], model_names: list[str], given: dict[str, object], recomputes: tuple[str, ...]
) -> None:
    """Refuse a mixture-of-experts setting given (``given``: name -> value, None where not; ``recomputes``: the
    recompute modes) for dense models only: a setting that changes nothing is refused, never ignored."""
    if any(m.experts > 0 for m in models):
        return
    dense = "is a dense model" if len(models) == 1 else "are dense models"
    for name, what in (("ep", "expert parallelism"), ("expert_tp", "expert tensor parallelism")):
        values = _values(name, given.get(name), None)
        if given.get(name) is not None and values.min() > 1:  # no layout could exist (a cube of masked cells)
            raise InputError(
                f"{','.join(map(show, values))}: {what} splits a mixture-of-experts model's experts; "
                f"{literal(', '.join(model_names))} {dense} (its {{0}} is 1)",
                param=name,
                names=(name,),
            )
    overlap = given.get("overlap")
    # None where not given, or refused where it is parsed
    mode = overlap_mode(overlap) if isinstance(overlap, str) and overlap else None
    if mode and "moe_a2a" in mode.split("+"):
        # no all-to-all to hide: the switch changed nothing, in silence (a hunt), as recompute moe is refused
        raise InputError(
            f"{overlap}: moe_a2a overlaps a mixture-of-experts layer's all-to-all; {', '.join(model_names)} "
            f"{dense}",
            param="overlap",
        )
    moe = [mode for mode in recomputes if {"moe", "moe_act"} & set(mode.split("+"))]
    if moe:  # a dense model has no MoE layer to recompute: the mode is the one without it, twice
        raise InputError(
            f"{moe[0]}: recomputes a mixture-of-experts layer (moe, moe_act); {', '.join(model_names)} {dense}",
            param="recompute",
        )
    for name in MOE_ONLY:
        value = given[name]
        if value is not None:
            shown = value if isinstance(value, str) else ",".join(map(show, flat_values(value, name, "")))
            raise InputError(
                f"{shown}: a mixture-of-experts setting; {', '.join(model_names)} {dense}", param=name
            )


def _refuse_absent_modules(models: list[LLM], model_names: list[str], recomputes: tuple[str, ...]) -> None:
    """Refuse a recompute mode (``recomputes``) naming a module none of ``models`` has: MLA's up-projection
    (``up_proj``) without multi-head latent attention (Megatron-Core refuses ``mla_up_proj`` without
    ``multi_latent_attention``), a dense layer's MLP (``mlp``) where every layer is a mixture of experts. Each had
    been priced as something else, or as nothing, in silence (a hunt)."""
    absent = (
        (
            "up_proj",
            lambda m: m.q_rank == 0 and m.kv_rank == 0,
            "multi-head latent attention's up-projection",
        ),
        ("mlp", lambda m: m.experts > 0 and m.moe_layers >= m.layers, "a dense layer's MLP"),
    )
    for module, lacks, what in absent:
        modes = [mode for mode in recomputes if module in mode.split("+")]
        if modes and all(lacks(m) for m in models):
            has = "has" if len(models) == 1 else "have"
            raise InputError(
                f"{modes[0]}: recomputes {what} ({module}); {', '.join(model_names)} {has} none",
                param="recompute",
            )


def _refuse_unread_attention_efficiency(attentions: tuple[str, ...], value: object) -> None:
    """Refuse ``--attention-efficiency`` given (``value``; None: not) where no flash kernel is swept: only the
    flash kernel's speed reads it, so it would change nothing (a setting that changes nothing is refused)."""
    if value is not None and "flash" not in attentions:
        shown = (
            value
            if isinstance(value, str)
            else ",".join(map(show, flat_values(value, "attention_efficiency", "")))
        )
        raise InputError(
            f"{shown}: the flash-attention kernel's efficiency, which the sweep's attention, "
            f"{', '.join(attentions)}, never reads: drop it",
            param="attention_efficiency",
        )


def _require_size(given: dict[str, object]) -> None:
    """Refuse a sweep without its GPU count (or data-parallel degree) or its global batch."""
    if given["gpus"] is None and given["dp"] is None:
        raise InputError(
            "is needed: the GPU count, as {0} 1024 (or {1}, the data-parallel degree)",
            param="gpus",
            names=("gpus", "dp"),
        )
    if given["global_batch"] is None:
        raise InputError(
            "is needed: the global batch in samples, as {0} 1024",
            param="global_batch",
            names=("global_batch",),
        )


class _FabricFields(TypedDict):
    """:class:`LayoutGrid`'s fields of the fabric."""

    fabric: FabricConstants
    fabric_name: str
    leaf_hosts: float
    sharp: float
    rail_only: float


@dataclasses.dataclass(frozen=True)
class _Network:
    """How a layout sweep prices its collectives: ``mode`` (flat or nccl), the ``--fabric`` given (``fabric``:
    a preset or a fabric file's constants), whether the fabric implied nccl (``implied``), whether nccl's
    full link rate was assumed (``full_rate``), whether the flat default collective was (``defaulted``), and
    the phrases of the NICs a fabric file set (``hosts``)."""

    mode: str
    fabric: FabricConstants | FabricPreset | None
    implied: bool
    full_rate: bool
    defaulted: bool = False
    hosts: tuple[str, ...] = ()
    # the collectives named that force an algorithm or protocol (nccl:ALGO, nccl:PROTO)
    forced: tuple[str, ...] = ()
    # the options given in place of a preset's settings, with the preset's values
    replaced: tuple[str, ...] = ()
    # a --util below 1 under NCCL's pricing: a share of the NICs on top of its fitted eta_net, said
    on_top: bool = False

    @property
    def preset(self) -> FabricPreset | None:
        """The fabric preset given (None: none, or a fabric file)."""
        return self.fabric if isinstance(self.fabric, FabricPreset) else None

    @property
    def preset_name(self) -> str:
        """The fabric preset's name ('' without one)."""
        return self.preset.name if self.preset is not None else ""

    @property
    def constants(self) -> FabricConstants | None:
        """The constants NCCL's pricing reads in place of the shipped fit (a preset's or a file's; None: none)."""
        return self.fabric.constants if isinstance(self.fabric, FabricPreset) else self.fabric

    def said(self, spines: tuple[float, ...] | None = None, gpus: Sequence[str] = ()) -> tuple[str, ...]:
        """The ``assumed`` line's phrases of it (``spines``: the oversubscriptions given, None: the preset's as
        built; ``gpus``: the GPU presets priced, against a fabric file's own)."""
        out: tuple[str, ...] = ()
        if self.defaulted:
            out = (
                f"--collective {DEFAULT_COLLECTIVE} (flat rings and trees, one bandwidth a group, where --collective nccl "
                "is NCCL's tuner)",
            )
        if self.mode == "nccl":
            out = (
                *(["--collective nccl (--fabric implies it)"] if self.implied else []),
                *(["utilization 1 (eta_net is the transport's efficiency)"] if self.full_rate else []),
                *([UTILIZATION_ON_ETA] if self.on_top else []),
                "collectives as NCCL's tuner prices them per group as placed "
                f"({(self.constants or SHIPPED).describe()})",
                *(
                    _forced_phrase(c, gpus, self.preset is not None and self.preset.collnet)
                    for c in self.forced
                ),
            )
        if isinstance(self.fabric, FabricConstants) and (taken := self.fabric.taken_for(gpus)):
            out = (*out, taken)
        if self.preset is not None:
            out = out + (self.preset.describe(spines),)
        if self.replaced:
            out = out + (f"given in place of the fabric's: {', '.join(self.replaced)}",)
        return out + self.hosts

    def grid_fields(self) -> _FabricFields:
        """:class:`LayoutGrid`'s fabric fields: its constants and, from a preset, its name and tier."""
        p = self.preset
        return {
            "fabric": self.constants or SHIPPED,
            "fabric_name": p.name if p is not None else "",
            "leaf_hosts": float(p.leaf_hosts) if p is not None else 0.0,
            "sharp": float(p is not None and p.collnet),
            "rail_only": float(p is not None and p.rail_only),
        }

    def checked_spines(
        self, oversubscription: object, latency: object, values: dict[str, np.ndarray], gpus: Sequence[str]
    ) -> tuple[float, ...]:
        """The spine's oversubscription values (:func:`~sweep.model.fabrics.oversubscriptions`), after refusing
        a fabric with flat collectives; then ``--latency`` and hosts of more GPUs than their NVLink domain
        (``values``' on ``gpus``) refused with NCCL's pricing."""
        _check_fabric(self)
        spines = oversubscriptions(oversubscription, self.fabric)
        _check_latency(self, latency)
        _check_nccl_hosts(self, values, gpus)
        return spines


def exact(value: float) -> str:
    """A fitted constant as the assumed line says it: to 12 significant digits, so that given back as an option
    it is the same sweep to 1e-12 (rounded to 4 digits, a plan's best layout changed)."""
    return digits12(value)


def _typed(value: object) -> str:
    """An option's value as the user gave it: text as typed (a range stays a range), numbers as a comma list."""
    return value if isinstance(value, str) else ",".join(show(v) for v in np.ravel(np.asarray(value, float)))


def _forced_phrase(collective: str, gpus: Sequence[str] = (), collnet: bool = False) -> str:
    """What a layout sweep says of ``collective``, ``nccl:ALGO``: the groups NCCL cannot run it on keep NCCL's own
    choice (:mod:`sweep.model.nccl_forcing`), and so do the all-to-alls and sends, which no algorithm forces, or
    that none can where no GPU of ``gpus`` (NVLS: Hopper or newer) or the fabric (CollNet: ``collnet``, SHARP)
    runs it, as a data-parallel sweep says (a hunt: said as run "on each group that can run it"); or
    ``nccl:PROTO``: NCCL's choice of the algorithms that run it, and Simple for the all-to-alls and sends."""
    protocol = forced_protocol(collective)
    if protocol is not None:
        return (
            f"{collective} on every all-reduce, all-gather and reduce-scatter (NCCL's choice of the algorithms "
            "that run it), Simple on every all-to-all and send (as the model prices NCCL's point-to-point)"
        )
    name = forced_algorithm(collective)
    assert name is not None, "a forcing of an algorithm"
    if name == "ring":
        return f"{collective} on every group, NCCL's own choice on every all-to-all and send"
    never_nvls = name.startswith("nvls") and gpus and all(ARCH[die(g)] < ARCH["h100"] for g in gpus)
    if never_nvls or (name.startswith("collnet") and not collnet):
        return nowhere(collective, name)
    return (
        f"{collective} on each group that can run it (it needs {NEEDS[name]}), NCCL's own choice on the others "
        "and on every all-to-all and send"
    )


def _host_of_fabric(fabric: FabricPreset | FabricConstants, given: dict[str, object]) -> dict[str, float]:
    """A fabric preset's NVLink domain and NICs, or a fabric file's NICs, for hosts of the ``--gpus-per-node``
    given, where it differs from the fabric's hosts and they are not both given (``host_for``)."""
    # what the fabric builds: a preset's domain and NICs, a file's NICs (its hosts' domain is the GPU's own)
    builds = ("nvlink_domain", "nics_per_node") if isinstance(fabric, FabricPreset) else ("nics_per_node",)
    if given["gpus_per_node"] is None or all(given[k] is not None for k in builds):
        return {}
    per_node = _values("gpus_per_node", given["gpus_per_node"], None)
    remedy = " and ".join(AXES[k].option for k in builds)
    return fabric.host_for(per_node, _typed(given["gpus_per_node"]), remedy)


def _network(
    fabric: FabricConstants | FabricPreset | None,
    collectives: str | None,
    collective: str | None,
    given: dict[str, object],
) -> tuple[_Network, tuple[str, ...]]:
    """The sweep's collective pricing and its ``collective`` names (:func:`_pricing`); a preset's cluster
    settings fill ``given`` where not given, and NCCL's pricing takes utilization 1 where it is not."""
    # The cluster as a preset builds it, or the hosts a fabric file was fitted on: where not given; a host of other
    # GPUs than a preset's has its NVLink domain and NICs as compute.host_system builds them from the preset's.
    built = _host_of_fabric(fabric, given) if fabric is not None else {}
    own = fabric.settings() if fabric else {}
    filled = {k: show(v) for k, v in {**own, **built}.items() if given[k] is None}
    replaced = tuple(  # a preset's settings given otherwise (a value other than its own), said with its own
        f"{AXES[k].option} {_typed(given[k])} (its {show(v)})"
        for k, v in (own.items() if isinstance(fabric, FabricPreset) else ())
        if given[k] is not None and (_values(k, given[k], None) != v).any()
    )
    made = [f"{AXES[k].option} {show(v)} (its {show(own[k])})" for k, v in built.items() if given[k] is None]
    # its host's domain and NICs, built for the GPUs given (not given by the user: said apart from those)
    built_said = (f"a host of --gpus-per-node GPUs built as the fabric's: {', '.join(made)}",) if made else ()
    given.update(filled)
    # a file's are said here (but a host built for other GPUs, said above), a preset's by it
    hosts = {k: v for k, v in filled.items() if k not in built} if isinstance(fabric, FabricConstants) else {}
    mode, names, implied = _pricing(collective, collectives, fabric is not None)
    full_rate = mode == "nccl" and given["utilization"] is None
    if full_rate:
        # NCCL's pricing has its own fitted transport efficiency (eta_net, in the assumed line): a stack's
        # utilization, fitted with flat collectives, would count the transport's losses twice.
        given["utilization"] = "1"
    defaulted = collective is None and mode == "flat" and collectives is None
    said = built_said + tuple(f"{AXES[k].option} {v} (the fabric file's hosts)" for k, v in hosts.items())
    forced = tuple(c for c in names if forced_algorithm(c) or forced_protocol(c))
    on_top = mode == "nccl" and not full_rate and _below_one(given["utilization"])
    return _Network(mode, fabric, implied, full_rate, defaulted, said, forced, replaced, on_top), names


def _below_one(utilization: object) -> bool:
    """Whether a --util given (text, a number or numbers, as every option) holds a value below 1 (a value it
    cannot read: no, its refusal comes later; a list had been read as text, "[0.5]", and never said, a review)."""
    try:
        return bool(np.any(_values("utilization", utilization, None) < 1))
    except InputError:
        return False


def _pricing(
    collective: str | None, collectives: str | None, fabric: bool
) -> tuple[str, tuple[str, ...], bool]:
    """(mode, the ``collective`` names, whether a fabric implied nccl): ``--collective nccl``, ``nccl:ALGO`` and
    ``nccl:PROTO`` (not with flat ones: one pricing a sweep) are NCCL's; ring, tree and ring-or-tree are flat; none given is nccl where ``--collectives
    nccl`` (the old spelling) or a fabric says so, else the flat default. A flat one given where NCCL's pricing
    is asked for is refused: it would change nothing."""
    old = _collectives(collectives) if collectives is not None else None
    listed = (
        parse_names(collective.lower(), "collective", LAYOUT_COLLECTIVES) if collective is not None else []
    )
    if uses_nccl(listed):
        if old == "flat":
            raise InputError(
                f"{collective}: NCCL's pricing, where --collectives flat asks for a flat one ("
                f"{', '.join(FLAT_COLLECTIVES)}: ring-or-tree is the cheaper of ring and tree, once called nccl)",
                param="collective",
            )
        if any(name in FLAT_COLLECTIVES for name in listed):
            raise InputError(
                f"{collective}: nccl (NCCL's tuner; nccl:ALGO, nccl:PROTO with one forced) prices every collective "
                f"of a sweep, so it is not listed with the flat ones ({', '.join(FLAT_COLLECTIVES)}): they are a "
                "sweep of their own",
                param="collective",
            )
        return "nccl", tuple(listed), False
    nccl = old == "nccl" or (old is None and fabric)  # a fabric implies NCCL's collectives
    if listed and nccl:
        raise InputError(
            f"{collective}: a flat collective (one bandwidth per group); "
            f"{'--fabric implies' if old is None else '--collectives nccl asks for'} NCCL's own choice by size "
            "(--collective nccl; nccl:ring or nccl:tree forces NCCL's own)",
            param="collective",
        )
    if nccl:
        return "nccl", ("nccl",), old is None
    return "flat", tuple(listed) if listed else (DEFAULT_COLLECTIVE,), False


def _check_fabric(net: _Network) -> None:
    """Refuse a fabric with flat collectives: its constants are NCCL's pricing's, never silently unused."""
    if net.fabric is not None and net.mode != "nccl":
        raise InputError(
            (
                f"{net.preset.name}: a fabric preset prices"
                if net.preset is not None
                else f"{net.constants.source if net.constants else ''}: a fabric file's constants price"
            )
            + f" collectives as NCCL runs them, not {net.mode}: drop --collectives flat (a --fabric implies "
            "--collective nccl), or --fabric for the flat collectives (they read --util and --latency instead)",
            param="fabric",
        )


def _check_nccl_hosts(net: _Network, values: dict[str, np.ndarray], gpus: Sequence[str]) -> None:
    """Refuse, with NCCL's pricing, a host of more GPUs than its NVLink domain (the domain given or a fabric's, else
    the one its GPU's system builds for hosts of that many GPUs): NCCL's node is a host or a multi-host NVLink
    domain, on NVLink, and a host's GPUs off its NVLink (PCIe between NVLink islands) are not priced (a hunt:
    --nvlink-domain 1 on 8-GPU hosts priced EP 8 on NVLink, where the flat collectives put 7/8 of it on the NICs
    and took 7 times as long)."""
    if net.mode != "nccl":
        return
    remedy = (
        "drop --fabric and give a flat --collective (ring-or-tree)"
        if net.fabric is not None
        else "give a flat --collective (ring-or-tree)"
    )
    for gpu in gpus:
        for per_node in sorted({float(v) for v in values["gpus_per_node"]}):
            system = system_settings(gpu, per_node)  # 0: the preset's host
            for given in sorted({float(v) for v in values["nvlink_domain"]}):
                domain = given if given > 0 else system["nvlink_domain"]
                if domain < system["gpus_per_node"]:
                    whose = (
                        f"(the {gpu} system's, for hosts of these GPUs) "
                        if given <= 0
                        else f"(given, or --fabric {net.preset_name}'s for hosts of these GPUs) "
                        if net.preset is not None
                        else ""
                    )
                    raise InputError(
                        f"{show(domain)} {whose}below --gpus-per-node {show(system['gpus_per_node'])} "
                        f"({gpu}): NCCL's pricing takes a host's GPUs on one NVLink domain (or a domain of several "
                        f"hosts); give --nvlink-domain of at least the host's GPUs, or {remedy}, which prices "
                        "GPUs off NVLink",
                        param="nvlink_domain",
                    )


def _check_latency(net: _Network, latency: object) -> None:
    """Refuse ``--latency`` (the flat model's per-step latency) with NCCL's pricing, which has its own."""
    if net.mode == "nccl" and latency is not None:
        raise InputError(
            f"{latency}: --latency is the flat collectives' per-step latency; with --collective nccl "
            f"{'(which --fabric implies) ' if net.implied else ''}the "
            "network's latency is the fitted lambda (results/validation-nccl)",
            param="latency",
        )


def _numeric_values(
    given: dict[str, object], search: dict[str, str], stacked: dict[str, float]
) -> dict[str, np.ndarray]:
    """Each numeric option's values in stored units: as given, else ``search``'s (``sweep plan``'s space), else
    its default; the fitted constants in ``stacked`` to the last bit (show's 15 digits may not be: validate
    --llm's); gradient and moment bytes checked."""
    values = {}
    for name, value in given.items():
        # An axis without a default ('' in the schema: the GPU count, the batch) is derived or required.
        default: str | None = search.get(name, AXES[name].default or None)
        if name in SYSTEM_DIMS:
            default = None  # the GPU preset's, resolved per cell
        if name == "efficiency":
            default = show(EFFICIENCY)
        values[name] = _values(name, value, default)
    for name in CONSTANTS:
        if name in stacked:
            values[name] = np.array([stacked[name]])
    return values


def _moe_dispatcher(texts: dict[str, Any], models: list[LLM]) -> str:
    """The MoE dispatcher of a sweep of a mixture-of-experts model ('' for dense models alone, whose
    ``--moe-dispatcher`` is refused as a MoE setting)."""
    if not any(m.experts > 0 for m in models):
        return ""
    return _text_settings({"moe_dispatcher": texts.get("moe_dispatcher")})["moe_dispatcher"]


def _per_sweep(values: dict[str, np.ndarray], given: dict[str, object], dispatcher: str) -> dict[str, float]:
    """The numeric settings of one value per sweep (:data:`~sweep.core.sweep_settings.NUMERIC`), taken out of
    ``values``: each must have one value (a property of the stack, not a dim); the MoE capacity checked, and the
    flex ``dispatcher`` as Megatron-Core's MoEFlexTokenDispatcher checks it: no padding to capacity, and tp x ep
    above 1 (a hunt: both had been priced, the second as alltoall)."""
    per_sweep = {}
    for name in NUMERIC:
        one = values.pop(name)
        if one.size != 1:
            raise InputError(f"{given[name]}: give one value: {ONE_PER_SWEEP}", param=name)
        per_sweep[name] = float(one[0])
    if 0 < per_sweep["capacity_factor"] < 1:
        raise InputError(
            f"{show(per_sweep['capacity_factor'])}: must be 0 (dropless) or at least 1",
            param="capacity_factor",
        )
    if per_sweep["pad_to_capacity"] and not per_sweep["capacity_factor"]:
        raise InputError(
            "1: padding needs a capacity (give {0})", param="pad_to_capacity", names=("capacity_factor",)
        )
    if dispatcher == "flex" and per_sweep["pad_to_capacity"]:
        raise InputError("flex: Megatron-Core's flex dispatcher does not pad to capacity (leave out {0})",
                         param="moe_dispatcher", names=("pad_to_capacity",))  # fmt: skip
    if dispatcher == "flex" and values["tp"].max() * values["ep"].max() <= 1:
        raise InputError("flex: Megatron-Core's flex dispatcher needs tp x ep above 1 (give {0} or {1})",
                         param="moe_dispatcher", names=("ep", "tp"))  # fmt: skip
    return per_sweep


def _model_said(names: dict[str, tuple[str, ...]], models: list[LLM], mtp_default: bool) -> tuple[str, ...]:
    """The ``assumed`` line's phrase of the models' own MTP depths they train (where ``--mtp-layers`` is not
    given)."""
    out: tuple[str, ...] = ()
    depths = {(n, m.mtp_layers) for n, m in zip(names["model"], models) if m.mtp_layers}
    if mtp_default and depths:  # the architecture's MTP, trained unless --mtp-layers says otherwise
        shown = ", ".join(f"{d} for {n}" for n, d in sorted(depths))
        out += (f"multi-token-prediction depths {shown} (the model's; --mtp-layers 0: none)",)
    return out


def _text_settings(texts: dict[str, Any]) -> dict[str, str]:
    """Each text setting's canonical name (its declaration's rule: :class:`~sweep.core.sweep_settings.Text`),
    or its default where not given."""
    return {name: TEXT_SETTINGS[name].parse(v) if v is not None else TEXT_SETTINGS[name].default
            for name, v in texts.items()}  # fmt: skip


def _collectives(text: str | None) -> str:
    return one_name(text, "collectives", COLLECTIVES_MODES)


def _recomputes(text: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        raise InputError(f"'': give a recompute mode ({RECOMPUTE_HELP})", param="recompute")
    modes = [recompute_mode(item) for item in items]
    for item, mode in zip(items, modes):
        if mode is None:
            raise InputError(f"{item!r}: unknown; known: {RECOMPUTE_HELP}", param="recompute")
    # One spelling per mode (moe_act+mlp is mlp+moe_act), so a repeat is found.
    if len(set(modes)) != len(modes):
        raise InputError(f"{text!r}: a recompute mode appears twice", param="recompute")
    return [str(mode) for mode in modes]


def _schedules(text: str) -> list[str]:
    items = [s.strip().lower() for s in str(text).split(",") if s.strip()]
    if not items:
        raise InputError("'': give a schedule (1f1b or interleaved:V)", param="schedule")
    # One spelling per schedule (interleaved:02 is interleaved:2), so a repeat is found.
    items = [schedule_name(parse_schedule(item)) for item in items]
    if len(set(items)) != len(items):
        raise InputError(f"{text!r}: a schedule appears twice", param="schedule")
    return items


def _unread_at_ep_one(given: dict, values: dict) -> tuple[str, ...]:
    """The ``assumed`` line's phrase where a MoE setting given meets a layout of EP 1, which reads it nowhere: a
    load imbalance above 1 (each GPU runs every expert: :func:`~sweep.engine.compiled.busiest_expert`) and the
    fp8 dispatch (no token is dispatched). Said, as a value that changes nothing must be (a hunt)."""
    if not (np.asarray(values.get("ep", np.ones(1))) <= 1).any():
        return ()
    unread = [
        *(["MoE load imbalance"] if (np.asarray(values.get("imbalance", np.ones(1))) > 1).any() else []),
        *(
            ["--moe-dispatch-fp8"]
            if given.get("dispatch_fp8") is not None and float(given["dispatch_fp8"])
            else []
        ),
    ]
    if not unread:
        return ()
    return (
        f"{' and '.join(unread)} read at EP > 1 alone (at EP 1 each GPU runs every expert, sending no token)",
    )


def _sequence_parallel_said(models: Sequence[LLM], values: dict) -> tuple[str, ...]:
    """The ``assumed:`` line's phrase where sequence parallelism rules out every TP above 1: it splits each CP
    rank's seq / cp tokens over the TP group (:data:`~kernels.layout_inputs.STATUS` rule 14), and where seq
    divides by tp x cp for no model, TP and CP given or searched, every layout at TP > 1 breaks it (a hunt: a plan
    at seq 2047 searched tp 1,2,4,8 and ranked only TP 1, in silence). Turning it off lifts the rule on a dense
    model; a mixture of experts at TP > 1 needs it (rule 11)."""
    tps = [t for t in np.asarray(values["tp"]) if t > 1]
    dense = any(m.experts == 0 for m in models)
    if not tps or (0 in values["sequence_parallel"] and dense):  # a mixture of experts needs it at TP > 1
        return ()
    # the cp that split the sequence at all (rule 8: seq divisible by 2 x cp; a review: --sequence-parallel 0
    # lifts nothing where cp rules every layout out)
    splits = [(m, c) for m in models for c in values["cp"] if c == 1 or m.seq % (2 * c) == 0]
    if not splits or any(m.seq % (c * t) == 0 for m, c in splits for t in tps):
        return ()
    lift = "; --sequence-parallel 0 lifts it" if dense and 0 not in values["sequence_parallel"] else ""
    seqs = ",".join(dict.fromkeys(show(m.seq) for m in models))
    return (
        f"tp {','.join(show(t) for t in tps)} ruled out: sequence parallelism splits each cp rank's tokens over "
        f"tp, and seq {seqs} divides by no tp x cp here{lift}",
    )


def _assumed(
    given: dict,
    names: dict,
    models: list[LLM],
    search: dict,
    text_given: Collection[str],
    values: dict,
    constants: str = "",
    built_by: str = "",
) -> tuple[str, ...]:
    out = []
    per_node = sorted({float(v) for v in values.get("gpus_per_node", [0]) if v > 0})
    for g in names["gpu"]:
        # A host of the GPUs given (one value): its NVLink domain and NICs as compute.host_system makes them.
        system = system_settings(g, per_node[0] if len(per_node) == 1 else 0)
        units = {"nvlink_bw": " GB/s", "bandwidth": " Gbit/s"}
        parts = [
            f"{AXES[d].option.lstrip('-')} {show(system[d])}{units.get(d, '')}"
            for d in ("nvlink_domain", "nvlink_bw", "gpus_per_node", "nics_per_node", "bandwidth")
            if given[d] is None and not (len(per_node) > 1 and d in ("nvlink_domain", "nics_per_node"))
        ]
        if per_node and per_node != [GPUS[g].gpus_per_node] and not built_by:
            # not the preset's host: how its domain and NICs follow the GPUs given
            parts += _host_made(g, given)
        if parts and built_by:  # the hosts are a fabric preset's: the system lends only these
            out.append(f"{g}: {', '.join(parts)} (as in a {GPUS[g].system}, on {built_by}'s hosts)")
        elif parts:
            out.append(f"{g}: {GPUS[g].system} ({', '.join(parts)})")
    if constants:  # the default stack's fitted constants (_default_constants)
        out.append(constants)
    if given["efficiency"] is None:
        out.append(f"matrix efficiency {show(EFFICIENCY)}")
    if given["utilization"] is None:
        out.append("utilization 1 (the links' full rate)")
    if given["grad_bytes"] is None:
        kinds: dict[str, list[str]] = {}  # gradient dtype -> the precisions whose default it is
        for p in names["precision"]:
            kinds.setdefault("fp32" if PRECISIONS[p].main_grad_bytes == 4 else p, []).append(p)
        out.append(
            "gradients "
            + ", ".join(
                f"{k} for {', '.join(ps)}{' (Megatron-LM main_grad)' if k == 'fp32' else ''}"
                for k, ps in kinds.items()
            )
        )
    moe = any(m.experts > 0 for m in models)
    # The stack's settings of one value per sweep, as each one's declaration says it (sweep.core.sweep_settings).
    set_here = {name for name in NUMERIC if given[name] is not None} | set(text_given)
    # No flash kernel swept (the unfused attention of 2021-22 stacks): its efficiency is read nowhere, not said.
    unread = set() if "flash" in names["attention"] else {"attention_efficiency"}
    out.extend(assumed_phrases(set_here | unread, moe))
    if moe:
        if given["imbalance"] is None:
            out.append("MoE load imbalance 1 (balanced routing)")
        out.extend(_unread_at_ep_one(given, values))
        if given["expert_tp"] is None and "expert_tp" not in search:
            out.append(f"{AXES['expert_tp'].option} {AXES['expert_tp'].default}")
    searched = [  # the numbers not given, and sweep plan's text ones (schedule, recompute) it fills
        f"{AXES[d].option.lstrip('-') if d in AXES else d} {search[d]}"
        for d in PARALLEL_DIMS
        if given.get(d) is None and d in search
    ]
    for d in ("tp", "pp", "cp", *(("ep",) if moe else ()), "micro_batch", "zero", "sequence_parallel"):
        if given[d] is None and d not in search:
            out.append(f"{AXES[d].option} {AXES[d].default}")
    if searched:
        out.append("searched: " + ", ".join(searched))
    return (*out, *_sequence_parallel_said(models, values))


def _host_made(gpu: str, given: dict) -> list[str]:
    """The ``assumed:`` line's phrase of a host of ``--gpus-per-node`` GPUs other than ``gpu``'s preset's: how
    its NVLink domain and NICs not given follow the GPUs (:func:`~sweep.model.compute.host_system`)."""
    g = GPUS[gpu]
    said = []
    if given["nvlink_domain"] is None:
        rack = g.domain > g.gpus_per_node
        said.append(
            f"the {g.domain}-GPU rack's NVLink domain"
            if rack
            else f"NVLink the host's, up to {g.domain} GPUs"
        )
    if given["nics_per_node"] is None:
        per_gpu = g.nics / g.gpus_per_node
        said.append(f"{show(per_gpu)} NIC a GPU" if per_gpu >= 1 else f"a NIC per {show(1 / per_gpu)} GPUs")
    return [f"a host of --gpus-per-node GPUs as in a {g.system}: {', '.join(said)}"] if said else []


def _default_constants(names: dict, given: dict) -> tuple[dict[str, float], str]:
    """The default stack's fitted constants (:data:`CONSTANTS` not given, name -> value) on the sweep's GPU die,
    and the ``assumed`` phrase saying what they are and where they come from ('' where every one is given).
    ``validate --llm`` predicts its runs with these (``sweep/data/llm_constants.json``), so a sweep without
    ``--stack`` plans as it validates. One value per sweep: GPUs of dies whose values differ are refused for each
    such constant not given."""
    wanted = [name for name in CONSTANTS if given[name] is None]
    if not wanted:
        return {}, ""
    dies = sorted({die(g) for g in names["gpu"]})
    per_die = {d: constants(DEFAULT_STACK, d) for d in dies}
    filled = {}
    for name in wanted:
        options = [float(getattr(per_die[d], name)) for d in dies]
        if len(set(options)) > 1:
            shown = ", ".join(f"{v} on {d}" for v, d in zip(apart(options), dies))
            raise InputError(
                f"not given, and the default stack {DEFAULT_STACK}'s differs by GPU die ({shown}) where a sweep "
                "holds one for every GPU; sweep one die, or give it",
                param=name,
            )
        filled[name] = options[0]
    label = {
        "efficiency": "matrix efficiency",
        "memory_efficiency": "memory efficiency",
        "utilization": "utilization",
    }
    said = ", ".join(f"{label[name]} {exact(value)}" for name, value in filled.items())
    sources = "; ".join(f"{d}: {per_die[d].source}" for d in dies)
    return (
        filled,
        f"{said}: the default stack {DEFAULT_STACK}'s fitted constants ({sources}; --stack names another)",
    )


def _stack_settings(
    stack: Stack,
    names: dict,
    models: list[LLM],
    given: dict,
    overlap: str | None,
    text: dict[str, str],
    search: dict[str, str],
) -> tuple[dict[str, float], str, str]:
    """What ``stack`` sets of the numeric settings not given (name -> value), the ``assumed`` phrase naming the
    stack and what it set (``text``: the text settings it set, ``recompute`` and ``attention``, name -> value),
    and the overlap switches (``overlap`` if given, else the stack's).

    Its constants (:data:`CONSTANTS`) and the flash kernel's efficiency follow the GPU's die: a sweep over GPUs
    of dies whose values differ is refused for each such setting not given (one value per sweep)."""
    dies = sorted({die(g) for g in names["gpu"]})
    per_die = {d: constants(stack.name, d) for d in dies}
    moe = any(m.experts > 0 for m in models)
    wanted: dict[str, list[float]] = {
        "zero": [stack.zero],
        "zero3_gather_once": [stack.zero3_gather_once],
        "sequence_parallel": [float(stack.sequence_parallel)],
        "grad_bytes": [stack.grad_bytes],
        "efficiency": [per_die[d].efficiency for d in dies],
        "memory_efficiency": [per_die[d].memory_efficiency for d in dies],
        "utilization": [per_die[d].utilization for d in dies],
    }
    if "flash" in names["attention"]:
        flash = [stack.attention_efficiency(d, "flash") for d in dies]
        wanted["attention_efficiency"] = [
            float(AXES["attention_efficiency"].default) if f is None else f[0] for f in flash
        ]
    if moe:
        wanted.update(imbalance=[stack.imbalance], expert_tp=[stack.expert_tp])
    if not stack.context_parallel:
        wanted["cp"] = [1.0]
    per_stage = _micro_batch_per_stage(stack, given, wanted, search)
    if per_stage is not None:
        wanted["micro_batch"] = [per_stage]
    recipes = [stack.moments(name) for name in names["model"]]
    if any(recipes):  # the moments' dtype where the stack's recipe for the model sets one (else fp32)
        wanted["moment_bytes"] = [r[0] if r else 4.0 for r in recipes]
    filled = _one_per_sweep(stack, wanted, given, names, dies)
    overlap_set = overlap is None
    if overlap is None:
        overlap = _stack_overlap(stack, given, filled, search)
    said = {
        "zero": f"ZeRO {show(filled.get('zero', 0))}",
        # said only where some layout runs ZeRO 3 under a pipeline (the fsdp stack's, else nothing)
        "zero3_gather_once": "under PP gathered once a step and reduced after the stage's backward (PyTorch's FSDP2)"
        if filled.get("zero3_gather_once") and _zero3_pipelined(stack, given, filled, search)
        else "",
        "sequence_parallel": f"sequence parallelism {'on' if filled.get('sequence_parallel') else 'off'}"
        + ("" if _tp_wide(given, search) else " (inert at TP 1)"),  # a hunt read it as a setting at TP 1
        "cp": "no context parallelism (CP 1)",
        "grad_bytes": "bf16 gradients" if filled.get("grad_bytes") == 2 else "the precision's gradients",
        "attention_efficiency": f"flash-attention efficiency {show(filled.get('attention_efficiency', 0))}",
        "imbalance": f"MoE load imbalance {show(filled.get('imbalance', 1))}",
        "expert_tp": f"{AXES['expert_tp'].option} {show(filled.get('expert_tp', 1))}",
        "efficiency": f"matrix efficiency {exact(filled.get('efficiency', 0))}",
        "memory_efficiency": f"memory efficiency {exact(filled.get('memory_efficiency', 0))}",
        "utilization": f"utilization {exact(filled.get('utilization', 0))}",
        "micro_batch": f"micro-batch {show(filled.get('micro_batch', 1))} (as many micro-batches as stages)",
        "moment_bytes": f"Adam moments of {show(filled.get('moment_bytes', 4))} bytes"
        + "".join(f" ({r[1]})" for r in dict.fromkeys(r for r in recipes if r)),
    }
    parts = [f"{name} {value}" for name, value in text.items()]
    parts += [said[name] for name in said if name in filled and said[name]]
    parts += [f"overlap {overlap}"] if overlap_set else []
    fitted = [name for name in CONSTANTS if name in filled]
    sources = "; ".join(f"{d}: {per_die[d].source}" for d in dies) if fitted else ""
    phrase = f"stack {stack.name} ({stack.title}; sweep/model/stacks.py): {', '.join(parts)}" + (
        f" (constants: {sources})" if sources else ""
    )
    unrun = _never_ran(stack, names, given)
    if unrun:
        phrase += f"; what {stack.name} never ran, priced as asked: {', '.join(unrun)}"
    return filled, phrase, overlap


def _never_ran(stack: Stack, names: dict, given: dict) -> list[str]:
    """What of the sweep ``stack``'s software never ran, each with why: its text settings' values
    (``Stack.never_ran``), and context parallelism given above 1 where the stack has none (megatron-2021's CP 2
    was priced unsaid, a hunt)."""
    unrun = [
        f"{setting} {value} ({why})"
        for setting, values in stack.never_ran.items()
        for value, why in values.items()
        if value in names.get(setting, ())
    ]
    cp = [float(v) for v in _values("cp", given["cp"], None) if v > 1] if given["cp"] is not None else []
    if not stack.context_parallel and cp:
        unrun.append(
            f"cp {', '.join(show(v) for v in cp)} ({stack.sources['context_parallel'].removeprefix('none: ')})"
        )
    return unrun


def _micro_batch_per_stage(
    stack: Stack, given: dict, wanted: dict[str, list[float]], search: dict[str, str]
) -> float | None:
    """The stack's micro-batch where it runs as many micro-batches as pipeline stages (torchtitan's
    ``Stack.micro_batch_per_stage``: global batch / (dp x pp), as a runs file's row without one is priced), where
    no micro-batch is given and the sweep's layouts with pp > 1 share one; None where none pipelines, and where
    ``search`` (``sweep plan``'s) searches the micro-batch or a dim it depends on (a hunt: ``grid --stack fsdp`` on
    a published run's layout kept micro-batch 1, 24% from what validate --llm predicted). Layouts that would run
    different ones are refused: a sweep holds one micro-batch (lists had kept 1 for every layout, a hunt)."""
    if not stack.micro_batch_per_stage or given["micro_batch"] is not None:
        return None
    if any(given[name] is None and name in search for name in ("micro_batch", "gpus", "tp", "pp", "cp")):
        return None
    # the layouts' data parallelism: --dp's, or the GPUs' over tp x pp x cp (a hunt: --dp without --gpus read
    # the empty --gpus, "give at least one value")
    by_dp = given["gpus"] is None and given.get("dp") is not None
    lists: dict[str, list[float]] = {}
    for name in ("dp" if by_dp else "gpus", "tp", "pp", "cp", "global_batch"):
        held = wanted.get(name) if given[name] is None else None  # the stack's own (its CP 1)
        lists[name] = [float(v) for v in (held or _values(name, given[name], AXES[name].default))]
    default = float(AXES["micro_batch"].default)  # what a layout that does not pipeline runs
    runs, pipelines = set(), False
    for first, tp, pp, cp, batch in itertools.product(*lists.values()):
        dp = first if by_dp else first / (tp * pp * cp)
        if dp.is_integer() and dp >= 1:  # one that cannot exist runs nothing
            micro = stack.micro_batch(batch, dp, pp)
            pipelines |= micro is not None
            runs.add(default if micro is None else float(micro))
    if len(runs) > 1:
        raise InputError(
            f"{stack.name}: it runs as many micro-batches as pipeline stages (global batch / (dp x pp); "
            f"{show(default)} where pp is 1), which is {', '.join(show(m) for m in sorted(runs))} across these "
            "layouts, and a sweep holds one micro-batch; give --micro-batch, or sweep one layout",
            param="stack",
        )
    return runs.pop() if runs and pipelines else None


def _one_per_sweep(
    stack: Stack, wanted: dict[str, list[float]], given: dict, names: dict, dies: list[str]
) -> dict[str, float]:
    """The stack's value of each setting not ``given`` (name -> value) from its ``wanted`` values (one per GPU
    die, or per model for Adam moments); a setting whose values differ is refused (a sweep holds one)."""
    filled: dict[str, float] = {}
    for name, options in wanted.items():
        if given[name] is not None:
            continue
        if len(set(options)) > 1 and name == "moment_bytes":
            shown = ", ".join(f"{show(v)} bytes for {m}" for v, m in zip(options, names["model"]))
            raise InputError(
                f"{stack.name}: its recipes' Adam moments differ by model ({shown}), and a sweep holds one; "
                f"sweep one model, or give {AXES[name].option}",
                param="stack",
            )
        if len(set(options)) > 1:
            shown = ", ".join(f"{v} on {d}" for v, d in zip(apart(options), dies))
            raise InputError(
                f"{stack.name}: its {name.replace('_', ' ')} differs by GPU die ({shown}), and a sweep holds one "
                f"for every GPU; sweep one die, or give {AXES[name].option}",
                param="stack",
            )
        filled[name] = float(options[0])
    return filled


def _tp_wide(given: dict, search: dict[str, str]) -> bool:
    """Whether some layout of the sweep may have TP over 1: TP given, else plan's searched values, else its
    default, 1 (a review: the default had been taken as wide)."""
    return _may_exceed_one("tp", given, search)


def _zero3_pipelined(stack: Stack, given: dict, filled: dict[str, float], search: dict[str, str]) -> bool:
    """Whether some layout of the sweep may run ZeRO 3 under a pipeline (PP over 1)."""
    return bool((_zero_stages(stack, given, filled, search) >= 3).any()) and _may_exceed_one(
        "pp", given, search
    )


def _zero_stages(stack: Stack, given: dict, filled: dict[str, float], search: dict[str, str]) -> np.ndarray:
    """The ZeRO stages the sweep's layouts may run: given, else plan's searched ones, else the stack's."""
    return _values("zero", given["zero"], search.get("zero", show(filled.get("zero", stack.zero))))


def _may_exceed_one(name: str, given: dict, search: dict[str, str]) -> bool:
    """Whether some layout of the sweep may have the degree ``name`` over 1: given, else plan's searched
    values, else its default."""
    return bool((_values(name, given[name], search.get(name, AXES[name].default)) > 1).any())


def _stack_overlap(stack: Stack, given: dict, filled: dict[str, float], search: dict[str, str]) -> str:
    """The stack's overlap switches at the sweep's sequence parallelism (given, else the stack's ``filled``)."""
    sp = given["sequence_parallel"]
    values = (
        {float(filled["sequence_parallel"])} if sp is None else set(_values("sequence_parallel", sp, None))
    )
    if len(values) > 1 and "tp_comm" in stack.overlap:
        raise InputError(
            f"{stack.name}: overlaps TP communication only with sequence parallelism, and overlap is one mode "
            f"per sweep; give one --sequence-parallel value or --overlap",
            param="stack",
        )
    # at TP 1 there is no TP communication to overlap: tp_comm kept where some layout's TP may exceed 1 (it is
    # inert at 1), dropped where every TP given is 1, as a runs file's row at TP 1 says it (a hunt)
    # (TP given, else plan's searched values, else its default, 1: a review, the default had been taken as wide)
    wide = _tp_wide(given, search)
    # and at ZeRO 0 no parameters are gathered: param_gather dropped where every ZeRO is 0 (Megatron-LM refuses
    # --overlap-param-gather without its distributed optimizer; a hunt read it in the assumed line of --zero 0)
    sharded = bool((_zero_stages(stack, given, filled, search) >= 1).any())
    return stack.overlap_with(2.0 if wide else 1.0, values.pop(), sharded=sharded)
