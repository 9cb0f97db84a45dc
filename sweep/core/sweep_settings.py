"""The layout family's settings of one value per sweep, declared once.

These are properties of the training stack, not dims (a layout cube has HDF5's 32 dims already): the
usable memory, the matrix kernels' fixed time, the achieved memory bandwidth, the Adam moments' bytes, the
MoE experts' capacity and padding, the overlap switches, the flash kernels' efficiency and the MoE
dispatch. Each is one field of :class:`SweepSettings`: its name is the option's (an axis of
:data:`~sweep.core.layout_axes.AXES`, or a text option) and the column of the GPU table the kernel's
inputs are read from (:func:`sweep.engine.compiled.layout_inputs`); its metadata says the cube attribute
it is kept as and how a value reaches the kernel. A sweep (:class:`~sweep.engine.layout_grid.LayoutGrid`)
and a measured run (:class:`~sweep.engine.layout_rows.LayoutRow`) each hold one, so the cube's
attributes (:meth:`SweepSettings.attrs`), the kernel's columns (:meth:`SweepSettings.columns`,
:data:`COLUMNS`) and the option checks (:data:`NUMERIC`) come from this one list.

A new setting of one value per sweep is one field here (with its axis in :mod:`sweep.core.axes` when it
is a number), its kernel input and its float64 twin. Pure Python, as the rest of :mod:`sweep.core`.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

from netsweep_jax.sweep.core.layout_axes import (
    AXES,
    MOE_DISPATCHERS,
    OVERLAP_DEFAULT,
    moe_dispatcher_code,
    overlap_code,
)


def _numeric(name: str, *, attr: str = "") -> Any:
    """A numeric setting's field: its default is its axis's (in the axis's stored units), it reaches the
    kernel times the axis's SI factor, and a cube keeps it as ``attr`` (default: its name)."""
    spec = AXES[name]
    return dataclasses.field(
        default=float(spec.default),
        metadata={"attr": attr or name, "code": lambda v, k=spec.to_si: float(v) * k, "numeric": True},
    )


def _text(default: str, code: Callable[[str], int]) -> Any:
    """A text setting's field: a canonical name, which reaches the kernel as ``code(name)``."""
    return dataclasses.field(default=default, metadata={"code": lambda v: float(code(v)), "numeric": False})


@dataclasses.dataclass(frozen=True)
class SweepSettings:
    """The settings of one value per sweep, in stored units (as the options take them).

    Attributes:
      usable_memory: the fraction of each GPU's memory training can fill.
      gemm_latency: the fixed time of one matrix kernel, us (a cube's ``gemm_latency_us``).
      memory_efficiency: the achieved fraction of HBM bandwidth in memory-bound work.
      moment_bytes: bytes of each Adam moment, 4, 2 or 1.
      capacity_factor, pad_to_capacity: MoE experts' capacity over the mean tokens (0: dropless) and whether
        their inputs are padded to it.
      overlap: the stack's overlap switches on, canonical (:func:`~sweep.core.layout_axes.overlap_mode`).
      attention_efficiency: the flash-attention kernel's fraction of the half-precision peak.
      dispatch_fp8: 1 where MoE tokens are dispatched forward in MXFP8.
      moe_dispatcher: the MoE token dispatcher, one of :data:`~sweep.core.layout_axes.MOE_DISPATCHERS`.
    """

    usable_memory: float = _numeric("usable_memory")
    gemm_latency: float = _numeric("gemm_latency", attr="gemm_latency_us")
    memory_efficiency: float = _numeric("memory_efficiency")
    moment_bytes: float = _numeric("moment_bytes")
    capacity_factor: float = _numeric("capacity_factor")
    pad_to_capacity: float = _numeric("pad_to_capacity")
    overlap: str = _text(OVERLAP_DEFAULT, overlap_code)
    attention_efficiency: float = _numeric("attention_efficiency")
    dispatch_fp8: float = _numeric("dispatch_fp8")
    moe_dispatcher: str = _text(MOE_DISPATCHERS[0], moe_dispatcher_code)

    def attrs(self) -> dict[str, float | str]:
        """The settings as a cube's attributes keep them, in declaration order."""
        return {f.metadata.get("attr", f.name): getattr(self, f.name) for f in dataclasses.fields(self)}

    def columns(self) -> tuple[float, ...]:
        """The settings as the kernel reads them (SI units; text as codes), in :data:`COLUMNS` order."""
        return tuple(f.metadata["code"](getattr(self, f.name)) for f in dataclasses.fields(self))


# The GPU table's columns the settings fill (sweep.engine.compiled.GPU_FIELDS), and the numeric ones: each is
# an axis whose option takes value syntax and must give one value (sweep.engine.layout_options).
COLUMNS = tuple(f.name for f in dataclasses.fields(SweepSettings))
NUMERIC = tuple(f.name for f in dataclasses.fields(SweepSettings) if f.metadata["numeric"])
