"""The layout family's settings of one value per sweep, each declared once, here.

These are properties of the training stack, not dims (a layout cube has HDF5's 32 dims already): the
usable memory, the matrix kernels' fixed time, the achieved memory bandwidth, the Adam moments' and main weights' bytes, the
MoE experts' capacity and padding, the overlap switches, the flash kernels' efficiency and the MoE
dispatch. Each is one key of :class:`SettingKeywords`, the public API's typed keywords (so mypy checks a
caller's), annotated with its declaration: a :class:`Number` (its option, units, bounds, default and SI factor:
an axis of :data:`~sweep.core.layout_axes.AXES` named as the key) or a :class:`Text` (its option, default,
canonical name of a text given and the kernel's code of a name). From this one table come the CLI's options and their ``--help``
(:data:`SETTING_AXES`, :data:`SETTING_OPTIONS`), the value checks, the API's keywords, a cube's attributes
(:meth:`SweepSettings.attrs`) and the columns of the GPU table the kernel's inputs are read from by name
(:meth:`SweepSettings.columns`, :data:`COLUMNS`; :func:`sweep.engine.compiled.layout_inputs`). A sweep
(:class:`~sweep.engine.layout_grid.LayoutGrid`) and a measured run (:class:`~sweep.engine.layout_rows.LayoutRow`)
each hold one :class:`SweepSettings`.

A new setting of one value per sweep is one key here, the kernel's field of the same name
(:mod:`kernels.layout_inputs`), its term, and its float64 twin. The vocabularies of the two text settings (the
overlap switches, the MoE dispatchers) are here too. Pure Python, as the rest of :mod:`sweep.core`.
"""

import dataclasses
from collections.abc import Callable, Collection
from typing import Annotated, Any, get_args

from typing_extensions import TypedDict, Unpack

from netsweep_jax.sweep.core.axes import AxisSpec, TextOption, unnamed
from netsweep_jax.sweep.core.errors import InputError


def plus_list(text: str, known: tuple[str, ...]) -> str | None:
    """``a+b`` with every part in ``known``, once each, spelled in ``known``'s order; else None."""
    parts = [part.strip() for part in text.split("+")]
    if any(part not in known for part in parts) or len(set(parts)) != len(parts):
        return None
    return "+".join(name for name in known if name in parts)


# The stack's overlap switches, named after Megatron-Core's: --overlap-grad-reduce, --overlap-param-gather,
# --tp-comm-overlap, --overlap-moe-expert-parallel-comm. A mode is none or a "+" list of them (one per sweep).
OVERLAP_BITS = {"grad_reduce": 1, "param_gather": 2, "tp_comm": 4, "moe_a2a": 8}
OVERLAP_SWITCHES = tuple(OVERLAP_BITS)
OVERLAP_DEFAULT = "grad_reduce+param_gather"  # what the model assumed before the switches existed
OVERLAP_HELP = "none or a + list of " + ", ".join(OVERLAP_SWITCHES)


def overlap_mode(text: str) -> str | None:
    """The canonical spelling of an overlap mode (switches in :data:`OVERLAP_SWITCHES` order), or None."""
    name = text.strip().lower()
    return name if name == "none" else plus_list(name, OVERLAP_SWITCHES)


def overlap_name(text: str) -> str:
    """``--overlap``'s canonical mode of ``text`` (:func:`overlap_mode`), or one line naming the rule."""
    mode = overlap_mode(str(text))
    if mode is None:
        raise InputError(f"{text!r}: one mode, {OVERLAP_HELP} (e.g. grad_reduce+tp_comm)", param="overlap")
    return mode


def overlap_code(mode: str) -> int:
    """The kernel's code of a canonical overlap mode: the sum of its bits."""
    return 0 if mode == "none" else sum(OVERLAP_BITS[part] for part in mode.split("+"))


# --moe-dispatcher, one per sweep, Megatron-Core's --moe-token-dispatcher-type names: alltoall sends each of a
# token's k copies to its expert's GPU by NCCL's all-to-all; flex sends it once per node (DeepEP, HybridEP) and
# forwards it over NVLink (kernels.layout_communication.hierarchical_copies).
MOE_DISPATCHERS = ("alltoall", "flex")


def moe_dispatcher_name(text: str) -> str:
    """``--moe-dispatcher``'s name of ``text`` (any case), or one line naming the rule."""
    from netsweep_jax.sweep.core.values import one_name  # at use: this layer's import loads no numpy

    return one_name(text, "moe_dispatcher", MOE_DISPATCHERS)


def moe_dispatcher_code(name: str) -> int:
    """The kernel's code of a MoE dispatcher: its place in :data:`MOE_DISPATCHERS` (0 alltoall, 1 flex)."""
    return MOE_DISPATCHERS.index(name)


@dataclasses.dataclass(frozen=True)
class Number:
    """A numeric setting's declaration: its axis (:class:`~sweep.core.axes.AxisSpec`, named by its key when
    collected), the name a cube's attribute keeps it under (``attr``; "": its own), and what the ``assumed:``
    line says where it is not given (``said``, ``{}`` its default: the choice's meaning where the axis has
    choices; "": nothing), and whether it is a mixture-of-experts model's only (``moe``: refused for dense models,
    said only for a MoE model). It reaches the kernel in SI units (``to_si``)."""

    axis: AxisSpec
    attr: str = ""
    said: str = ""
    moe: bool = False

    @property
    def default(self) -> float:
        """The default, in stored units."""
        return float(self.axis.default)

    def shown(self) -> str:
        """The default as the ``assumed:`` line names it."""
        named = dict(self.axis.choices).get(self.default)
        return named if named is not None else self.axis.default


@dataclasses.dataclass(frozen=True)
class Text:
    """A text setting's declaration: its option, its default (canonical), its canonical name of a text given
    (``parse``: the name, or one line naming the rule), the kernel's code of a name, and what the ``assumed:``
    line says where it is not given (as :class:`Number`'s)."""

    option: TextOption
    default: str
    parse: Callable[[str], str]
    code: Callable[[str], int]
    said: str = ""
    moe: bool = False

    def shown(self) -> str:
        """The default as the ``assumed:`` line names it."""
        return self.default


class SettingKeywords(TypedDict, total=False):
    """The settings of one value per sweep, in the CLI's units, each a keyword of the large-model API
    (:class:`sweep.large_models.LayoutOptions` holds them) annotated with its declaration, in cube order."""

    usable_memory: Annotated[
        float | str,
        Number(
            unnamed(
                "--usable-memory",
                "1",
                "fraction of the GPU's memory, as the driver reports it, that training can fill (the rest: driver "
                "reservation, CUDA context, NCCL buffers, fragmentation)",
                False,
                0.05,
                1,
                "0.95",
            ),
            said="usable memory {}",
        ),
    ]
    gemm_latency: Annotated[
        float | str,
        Number(
            unnamed(
                "--gemm-latency",
                "us",
                "fixed time of one matrix kernel: a GEMM of W FLOPs runs at efficiency x W / (W + W_half), W_half = "
                "latency x peak x efficiency (6.5: fitted to XLA's measured H100 GEMM table)",
                False,
                0,
                1e4,
                "6.5",
                1e-6,
            ),
            attr="gemm_latency_us",
            said="GEMM latency {} us",
        ),
    ]
    memory_efficiency: Annotated[
        float | str,
        Number(
            unnamed(
                "--memory-efficiency",
                "1",
                "achieved fraction of the GPU's HBM bandwidth in memory-bound work (norms, activations, casts, "
                "token permutation, the optimizer), on the bytes the layout model counts (1: the full rate)",
                False,
                1e-3,
                1,
                "1",
            ),
            said="memory efficiency {}",
        ),
    ]
    moment_bytes: Annotated[
        float | str,
        Number(
            unnamed(
                "--moment-bytes",
                "bytes",
                "bytes of each of Adam's two moments (2 or 1: Megatron-Core's --use-precision-aware-optimizer with "
                "--exp-avg-dtype and --exp-avg-sq-dtype bf16 or fp8)",
                True,
                1,
                4,
                "4",
                choices=((4, "fp32"), (2, "bf16"), (1, "fp8")),
            ),
            said="Adam moments {}",
        ),
    ]
    main_param_bytes: Annotated[
        float | str,
        Number(
            unnamed(
                "--main-param-bytes",
                "bytes",
                "bytes of each of the optimizer's main (master) weights (2: Megatron-Core's "
                "--use-precision-aware-optimizer with --main-params-dtype fp16)",
                True,
                2,
                4,
                "4",
                choices=((4, "fp32"), (2, "fp16")),
            ),
            said="main weights {}",
        ),
    ]
    capacity_factor: Annotated[
        float | str,
        Number(
            unnamed(
                "--moe-expert-capacity-factor",
                "1",
                "MoE: each expert's capacity over the mean tokens (Megatron-Core's switch of that name); the "
                "busiest expert's tokens beyond it are dropped. 0: dropless, else at least 1",
                False,
                0,
                100,
                "0",
            ),
            said="MoE dropless",
            moe=True,
        ),
    ]
    pad_to_capacity: Annotated[
        float | str,
        Number(
            unnamed(
                "--moe-pad-expert-input-to-capacity",
                "1",
                "MoE with a capacity factor: 1 pads every expert's input to its capacity (Megatron-Core's switch "
                "of that name), so the busiest runs at the capacity",
                True,
                0,
                1,
                "0",
            ),
            moe=True,
        ),
    ]
    overlap: Annotated[
        str,
        Text(
            TextOption(
                "--overlap",
                f"The stack's overlap switches, one mode per sweep: {OVERLAP_HELP} (Megatron-Core's "
                "--overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap, "
                f"--overlap-moe-expert-parallel-comm) (default {OVERLAP_DEFAULT}).",
            ),
            OVERLAP_DEFAULT,
            overlap_name,
            overlap_code,
            said="overlap {}",
        ),
    ]
    attention_efficiency: Annotated[
        float | str,
        Number(
            unnamed(
                "--attention-efficiency",
                "1",
                "achieved fraction of the half-precision peak in a causal flash-attention kernel (FLOPs it runs: "
                "half the scores)",
                False,
                1e-3,
                1,
                "0.5",
            ),
            said="flash-attention efficiency {}",
        ),
    ]
    dispatch_fp8: Annotated[
        float | str,
        Number(
            unnamed(
                "--moe-dispatch-fp8",
                "1",
                "MoE: 1 dispatches the tokens forward in MXFP8 (1 byte an element and a scale a 32: DeepEP's fp8 "
                "dispatch, Megatron-LM's moe_dispatch_fwd_dtype mxfp8); combines and the backward stay bf16",
                True,
                0,
                1,
                "0",
            ),
            said="MoE dispatch bf16",
            moe=True,
        ),
    ]
    moe_dispatcher: Annotated[
        str,
        Text(
            TextOption(
                "--moe-dispatcher",
                "MoE token dispatcher, one per sweep (Megatron-Core's names): alltoall (NCCL's all-to-all of "
                "each token's k copies) or flex (DeepEP / HybridEP: each token once over RDMA to the same-rank "
                "GPU of each node holding one of its experts, then NVLink) (default alltoall).",
                alias="--moe-token-dispatcher-type",
            ),
            MOE_DISPATCHERS[0],
            moe_dispatcher_name,
            moe_dispatcher_code,
            said="MoE dispatcher {} (NCCL's all-to-all of every copy)",
            moe=True,
        ),
    ]
    zero3_gather_once: Annotated[
        float | str,
        Number(
            unnamed(
                "--zero3-gather-once",
                "1",
                "ZeRO 3 under a pipeline (PP > 1): 1 gathers each stage's parameters once a step and holds them "
                "and their gradients whole until one reduce-scatter after the stage's backward (PyTorch's "
                "pipelining with FSDP2, torchtitan), 0 every micro-batch (Megatron-FSDP)",
                True,
                0,
                1,
                "0",
                choices=((0, "every micro-batch"), (1, "once a step")),
            ),
        ),
    ]


def _declared(name: str, annotation: Any) -> Number | Text:
    """A key's declaration (the first metadata of its ``Annotated``), a number's axis named by the key."""
    declaration = annotation.__metadata__[0]
    if isinstance(declaration, Number):
        return dataclasses.replace(declaration, axis=dataclasses.replace(declaration.axis, name=name))
    return declaration


# Every setting's declaration by name, in cube order; the numeric ones' axes (options, checks and defaults as
# every numeric axis's: sweep.core.layout_axes.AXES holds them) and the text ones' options (the CLI's parameters).
SETTINGS: dict[str, Number | Text] = {
    name: _declared(name, annotation) for name, annotation in SettingKeywords.__annotations__.items()
}
SETTING_AXES = {name: d.axis for name, d in SETTINGS.items() if isinstance(d, Number)}
TEXT_SETTINGS = {name: d for name, d in SETTINGS.items() if isinstance(d, Text)}
SETTING_OPTIONS = {name: d.option for name, d in TEXT_SETTINGS.items()}
# The GPU table's columns the settings fill (sweep.engine.compiled.GPU_FIELDS), and the numeric ones: each is
# an axis whose option takes value syntax and must give one value (sweep.engine.layout_options).
COLUMNS = tuple(SETTINGS)
NUMERIC = tuple(SETTING_AXES)
# The options that take one value per sweep (a list refused): the numeric settings, and the MTP depth of the
# model trained (a model's property, one per sweep as the model is; sweep.engine.layout_options refuses a list).
ONE_VALUE = (*NUMERIC, "mtp_layers")
assert all(get_args(SettingKeywords.__annotations__[name])[0] is str for name in SETTING_OPTIONS)


class SweepSettings:
    """The settings of one value per sweep, in stored units (as the options take them): numbers as floats,
    text as canonical names (:func:`overlap_mode`'s). Each is an attribute of its name
    (``settings.memory_efficiency``); one not given is its declaration's default. Immutable and hashable."""

    __slots__ = ("_values",)
    _values: tuple[float | str, ...]

    def __init__(self, **given: Unpack[SettingKeywords]) -> None:
        supplied: dict[str, Any] = dict(given)
        unknown = sorted(set(supplied) - set(SETTINGS))
        if unknown:
            raise TypeError(f"SweepSettings() got an unexpected keyword argument {unknown[0]!r}")
        values = {name: supplied.get(name, d.default) for name, d in SETTINGS.items()}
        kept = tuple(float(v) if isinstance(SETTINGS[k], Number) else str(v) for k, v in values.items())
        object.__setattr__(self, "_values", kept)

    def __getattr__(self, name: str) -> Any:
        if name in SETTINGS:
            return self._values[COLUMNS.index(name)]
        raise AttributeError(f"SweepSettings has no setting {name!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to setting {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SweepSettings):
            return NotImplemented
        return self._values == other._values

    def __hash__(self) -> int:
        return hash(self._values)

    def __reduce__(
        self,
    ) -> tuple[Any, ...]:  # pickle and copy rebuild it from its settings (immutable: no setattr)
        return (_rebuilt, (self.as_dict(),))

    def __repr__(self) -> str:
        return f"SweepSettings({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"

    def as_dict(self) -> dict[str, float | str]:
        """Every setting by name, in declaration order."""
        return dict(zip(COLUMNS, self._values))

    def replace(self, **changes: Unpack[SettingKeywords]) -> "SweepSettings":
        """These settings with ``changes``."""
        changed: dict[str, Any] = {**self.as_dict(), **changes}
        return SweepSettings(**changed)

    def attrs(self) -> dict[str, float | str]:
        """The settings as a cube's attributes keep them, in declaration order."""
        return {_attr(name): value for name, value in self.as_dict().items()}

    def columns(self) -> tuple[float, ...]:
        """The settings as the kernel reads them (SI units; text as codes), in :data:`COLUMNS` order."""
        return tuple(_code(SETTINGS[name], value) for name, value in self.as_dict().items())


def _rebuilt(values: dict[str, Any]) -> SweepSettings:
    """:class:`SweepSettings` from its :meth:`~SweepSettings.as_dict` (unpickling, copying)."""
    return SweepSettings(**values)


def assumed_phrases(given: Collection[str], moe: bool) -> tuple[str, ...]:
    """The ``assumed:`` line's phrases of the settings not ``given`` (names), in declaration order: each one's
    ``said`` with its default; a MoE setting's only for a MoE model (``moe``)."""
    return tuple(
        d.said.format(d.shown())
        for name, d in SETTINGS.items()
        if d.said and name not in given and (moe or not d.moe)
    )


def _attr(name: str) -> str:
    """The cube attribute a setting is kept as."""
    declaration = SETTINGS[name]
    return (isinstance(declaration, Number) and declaration.attr) or name


def _code(declaration: Number | Text, value: float | str) -> float:
    """A setting's value as the kernel reads it: a number in SI units, a name as its code."""
    if isinstance(declaration, Number):
        return float(value) * declaration.axis.to_si
    return float(declaration.code(str(value)))
