"""A layout sweep's grid: the outer product of its dims, and the constants its blocks read.

A :class:`LayoutGrid` is the outer product of its dims (:mod:`sweep.core.layout_axes`),
in two groups: the *outer* dims (what is trained and what it runs on: model, GPU,
GPU count, network, ...) and the *layout* dims (dp, tp, pp, cp, ep, micro-batch,
schedule, recompute, sequence parallelism, ZeRO), the ones ``sweep plan`` searches.
:func:`sweep.engine.layout_options.make_layout_grid` makes one from the user's options.

Values stored as 0 in ``gpus`` / ``dp`` mean "derived" (gpus = tp pp cp dp, or
dp = gpus / (tp pp cp)); 0 in ``nvlink_domain``, ``nvlink_bw``, ``gpus_per_node``,
``nics_per_node`` or ``bandwidth`` means "the GPU preset's system" (resolved per
cell, so a sweep over GPUs gets each one's own links), as the ``assumed`` line says.
"""

import dataclasses
import hashlib
import json
import math
from typing import ClassVar

import numpy as np

from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.families import LAYOUTS, Family
from netsweep_jax.sweep.core.layout_axes import (
    AXES,
    COLLECTIVES_MODES,
    DIMS,
    LAYOUT_COLLECTIVES,
    PARALLEL_DIMS,
    SETTING_DIMS,
    VARIABLES,
    recompute_code,
)
from netsweep_jax.sweep.core.schema import assumed_line
from netsweep_jax.sweep.core.sweep_settings import SweepSettings
from netsweep_jax.sweep.core.values import whole_number
from netsweep_jax.sweep.engine.reductions import Reduction
from netsweep_jax.sweep.model.compute import GPUS, PRECISIONS, die
from netsweep_jax.sweep.model.fabric_constants import FabricConstants
from netsweep_jax.sweep.model.llms import LLM
from netsweep_jax.sweep.model.nccl_fabric import ARCH as NCCL_ARCH
from netsweep_jax.sweep.model.nccl_fabric import SHIPPED


def precision_bytes(name: str) -> tuple[float, float, float, float, float]:
    """A layout precision's (param, gradient, activation, GEMM-input) bytes and whether its GEMMs run at the fp8
    peak: :data:`~sweep.model.compute.PRECISIONS`' one table, with Megatron-LM's fp32 ``main_grad`` as the
    gradients (its ``main_grad_bytes``; ``--grad-bytes`` overrides it)."""
    p = PRECISIONS[name]
    return p.param_bytes, p.main_grad_bytes, p.act_bytes, p.gemm_input_bytes, float(p.math == "fp8")


def parse_schedule(text: str) -> float:
    """``1f1b`` -> 1, ``interleaved:V`` -> V (model chunks per pipeline stage, V >= 2)."""
    name, _, chunks = text.strip().lower().partition(":")
    if name == "1f1b" and not chunks:
        return 1.0
    count = whole_number(chunks)
    if name == "interleaved" and count is not None and 2 <= count <= 1024:
        return float(count)
    raise InputError(f"{text!r}: must be 1f1b or interleaved:V with V from 2 to 1024", param="schedule")


@dataclasses.dataclass(frozen=True)
class LayoutGrid:
    """A validated layout sweep.

    Attributes:
      models: the transformers, one per ``model`` coordinate.
      names: {text dim: coordinate names} for model, gpu, precision, attention, schedule, recompute,
        collective.
      values: {numeric dim: float64 values in stored units}; 0 where derived or the GPU's.
      dtype: compute dtype.
      settings: the settings of one value per sweep (the stack's: :mod:`sweep.core.sweep_settings`).
      collectives: how collectives are priced, one of :data:`COLLECTIVES_MODES` (one per sweep): ``flat`` rings
        of one bandwidth per group, ``nccl`` NCCL's tuner for each group as placed (kernels.layout_collectives).
      fabric: the fabric's constants NCCL's pricing reads (the shipped fit, a ``--fabric`` preset's or a fabric
        file's; one per sweep; columns of the GPU table, so the fingerprint covers them).
      fabric_name: the ``--fabric`` preset's name ('' for none).  leaf_hosts: its hosts under one leaf (0: no
        tier above the hosts).  oversubscription: the spine's values (``--oversubscription``): one evaluates,
        several are planned one by one (:func:`by_oversubscription`); a layout cube already has HDF5's 32 dims.
      sharp, rail_only: 1 where the preset turns NCCL's CollNet on (SHARP) or is wired rail-only, else 0.
      assumed: what was assumed that the user did not set, one phrase each.
      variables: the outputs to keep, in cube order.
      store: the dtype a cube stores its float outputs in (empty: the compute dtype; ``status`` is int32).
      reduction: what ``--reduce`` reduces on the device (None: nothing).
    """

    family: ClassVar[Family] = LAYOUTS
    models: tuple[LLM, ...]
    names: dict[str, tuple[str, ...]]
    values: dict[str, np.ndarray]
    dtype: str = "float32"
    assumed: tuple[str, ...] = ()
    variables: tuple[str, ...] = tuple(VARIABLES)
    settings: SweepSettings = SweepSettings()
    collectives: str = COLLECTIVES_MODES[0]
    fabric: FabricConstants = SHIPPED
    fabric_name: str = ""
    leaf_hosts: float = 0.0
    oversubscription: tuple[float, ...] = (1.0,)
    sharp: float = 0.0
    rail_only: float = 0.0
    store: str = ""
    reduction: Reduction | None = None

    @property
    def store_dtype(self) -> str:
        """The dtype the cube stores its float outputs in."""
        return self.store or self.dtype

    @property
    def size(self) -> int:
        """Configurations in the sweep."""
        return self.outer_size * self.inner_size

    def label(self) -> str:
        """The models, as an output's default name holds them."""
        return "+".join(self.names["model"])

    def cube_attrs(self) -> dict[str, float | str]:
        """What a cube of this sweep says of it besides its coordinates: the family, what was assumed, the
        settings of one value per sweep, and each model's shape and source."""
        return {
            "family": self.family.name,
            "assumed": assumed_line(self.assumed),
            **self.per_sweep(),
            "models": "; ".join(
                f"{n}: {m.describe()} [{m.source}]" for n, m in zip(self.names["model"], self.models)
            ),
        }

    def variable_attrs(self, name: str) -> dict[str, str]:
        """``units`` and ``long_name`` of an output variable (and the status's ``rules``: code -> rule)."""
        units, long_name = VARIABLES[name]
        attrs = {"units": units, "long_name": long_name}
        if name == "status":
            attrs["rules"] = "; ".join(f"{i}: {rule}" for i, rule in enumerate(kernel.STATUS))
        return attrs

    def fingerprint(self) -> str:
        """SHA-256 of everything that determines the results (for --resume)."""
        payload: dict[str, object] = {
            "family": self.family.name,
            "models": [dataclasses.asdict(m) for m in self.models],
            "names": {k: list(v) for k, v in sorted(self.names.items())},
            "values": {k: np.asarray(v).tolist() for k, v in sorted(self.values.items())},
            "tables": {k: np.asarray(v).tolist() for k, v in sorted(self.tables().items())},
            "dtype": self.dtype,
            "variables": list(self.variables),
            "store": self.store_dtype,
            "per_sweep": self.per_sweep(),
        }
        if self.reduction is not None:
            r = self.reduction
            payload["reduce"] = [r.kind, list(r.dims), list(r.labelled)]
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    def per_sweep(self) -> dict[str, float | str]:
        """The settings that take one value per sweep, as a cube's attributes keep them."""
        return {
            **self.settings.attrs(),
            "collectives": self.collectives,
            # The tier above the hosts, said only where NCCL's pricing reads it (flat cubes' attributes unchanged).
            **(
                {
                    "fabric": self.fabric_name,
                    "leaf_hosts": self.leaf_hosts,
                    "sharp": self.sharp,
                    "rail_only": self.rail_only,
                    "oversubscription": self.oversubscription[0]
                    if len(self.oversubscription) == 1
                    else ",".join(f"{v:g}" for v in self.oversubscription),
                }
                if self.fabric_name
                else {}
            ),
        }

    def spine(self) -> float:
        """The one oversubscription a sweep evaluates (several are planned one by one: :func:`by_oversubscription`)."""
        if len(self.oversubscription) != 1:
            shown = ",".join(f"{v:g}" for v in self.oversubscription)
            raise InputError(
                f"{shown}: give one value here (a sweep evaluates one spine); the command sweep plan "
                "plans each value of a list",
                param="oversubscription",
            )
        return self.oversubscription[0]

    def spine_reachable(self) -> bool:
        """Whether a group of this grid can cross the spine, whose oversubscription then may change its results:
        a group's block of ranks is at most the world, so a world of at most L G GPUs (L hosts a leaf, G the
        fewest GPUs a host among the cells) keeps every group inside one leaf (kernels.layout_collectives).
        No tier above the hosts, rail-only wiring or flat collectives: none can; a GPU count not given (--dp):
        taken as able to."""
        if self.collectives != "nccl" or self.leaf_hosts <= 0 or self.rail_only:
            return False
        gpus, per_node = self.values["gpus"], self.values["gpus_per_node"]
        if np.min(gpus) <= 0 or np.min(per_node) <= 0:
            return True
        return float(np.max(gpus)) > self.leaf_hosts * float(np.min(per_node))

    @property
    def collectives_code(self) -> int:
        """The kernel's ``collectives`` (kernels.layout_collectives: 0 flat, 1 nccl)."""
        return COLLECTIVES_MODES.index(self.collectives)

    def coords(self) -> dict[str, np.ndarray]:
        """Each dim's coordinate values, in cube order."""
        return {d: np.asarray(self.names[d]) if d in self.names else self.values[d] for d in DIMS}

    @property
    def sizes(self) -> dict[str, int]:
        return {d: len(v) for d, v in self.coords().items()}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.sizes.values())

    @property
    def outer_size(self) -> int:
        return math.prod(self.sizes[d] for d in SETTING_DIMS)

    @property
    def inner_size(self) -> int:
        return math.prod(self.sizes[d] for d in PARALLEL_DIMS)

    def codes(self) -> dict[str, np.ndarray]:
        """Each dim's values as the kernel reads them (SI units; text dims as codes)."""
        out = {}
        for d in DIMS:
            if d == "model" or d == "gpu" or d == "precision":
                out[d] = np.arange(self.sizes[d], dtype=np.float64)
            elif d == "schedule":
                out[d] = np.array([parse_schedule(s) for s in self.names[d]])
            elif d == "recompute":
                out[d] = np.array([recompute_code(s) for s in self.names[d]], np.float64)
            elif d == "attention":
                out[d] = np.array([float(s == "flash") for s in self.names[d]])
            elif d == "collective":
                out[d] = np.array([LAYOUT_COLLECTIVES.index(s) for s in self.names[d]], np.float64)
            else:
                out[d] = self.values[d] * AXES[d].to_si
        return out

    def tables(self) -> dict[str, np.ndarray]:
        """Per-model, per-GPU and per-precision constants (rows in coordinate order) that blocks take their
        outer cells' columns from."""
        arch = np.array([[getattr(arch_row(m), f) for f in kernel.Arch._fields] for m in self.models])
        gpus = np.array(
            [
                (
                    *gpu_row(g),
                    *self.settings.columns(),
                    *self.fabric.columns(),
                    self.leaf_hosts,
                    self.spine(),
                    self.sharp,
                    self.rail_only,
                )
                for g in self.names["gpu"]
            ]
        )
        precision = np.array(
            [precision_bytes(p) for p in self.names["precision"]],
            np.float64,
        )
        return {"arch": arch, "gpu": gpus, "precision": precision}


def by_oversubscription(grid: LayoutGrid) -> list[LayoutGrid]:
    """One grid per value of ``grid``'s oversubscription, in order (each evaluates through one compile: the
    value is a column of the GPU table), its assumed line saying its own."""
    if len(grid.oversubscription) == 1:
        return [grid]
    from netsweep_jax.sweep.model.fabrics import fabric_preset  # several: a preset's, given

    preset = fabric_preset(grid.fabric_name)
    listed = preset.describe(grid.oversubscription)
    return [
        dataclasses.replace(
            grid,
            oversubscription=(v,),
            assumed=tuple(preset.describe((v,)) if a == listed else a for a in grid.assumed),
        )
        for v in grid.oversubscription
    ]


def arch_row(m: LLM) -> kernel.Arch:
    """The kernel's :class:`~kernels.layout.Arch` of a model (widths: heads x head dimensions)."""
    return kernel.Arch(
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        q_width=m.heads * m.head_dim,
        kv_width=m.kv_heads * m.head_dim,
        v_width=m.kv_heads * m.v_head_dim,
        q_rank=m.q_rank,
        kv_rank=m.kv_rank,
        rope_width=m.rope_dim,
        ffn=m.ffn,
        vocab=m.vocab,
        seq=m.seq,
        experts=m.experts,
        top_k=m.top_k,
        expert_ffn=m.expert_ffn,
        shared_experts=m.shared_experts,
        moe_layers=m.moe_layers,
        gated=float(m.mlp == "swiglu"),
        tied=float(m.tied),
        dropout=float(bool(m.dropout)),
        mtp_layers=m.mtp_layers,
        router_groups=float(m.router_groups),
        group_topk=float(m.group_topk),
    )


def gpu_row(name: str) -> tuple[float, ...]:
    """A GPU preset's columns of the GPU table, the first of :data:`sweep.engine.compiled.GPU_FIELDS`."""
    g = GPUS[name]
    nics = (g.nics, g.nic_gbps * 1e9, NCCL_ARCH[die(name)])
    return (g.half, g.fp8, g.hbm, g.memory, g.nvlink, g.domain, g.gpus_per_node, *nics)
