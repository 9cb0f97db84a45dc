"""The vocabulary of the layout family (large transformers under TP, PP, CP, EP and DP), defined once.

A layout sweep (``sweep grid --model llama3-70b --tp ...`` and ``sweep plan``) has
its own dims: what is trained (``model``, ``gpu``, ``precision``), how it is laid
out (``tp``, ``pp``, ...: :data:`LAYOUT_DIMS`, the dims ``sweep plan`` searches) and
what it runs on (the network, shared with the data-parallel family: ``bandwidth``,
``utilization``, ``nics_per_node``, ``latency``, ``collective``). Numeric axes reuse
:class:`~sweep.core.axes.AxisSpec` (option, units, bounds, default, SI factor) and
the shared ones are the data-parallel family's own specs. Pure Python, so ``--help``
stays fast.
"""

from netsweep_jax.sweep.core import schema
from netsweep_jax.sweep.core.axes import LAYOUT_AXES, NUMERIC_AXES, AxisSpec

SCHEDULES_HELP = "1f1b, or interleaved:V (V model chunks per stage, V >= 2)"
# The text settings a layout sweep takes where the user gives none (the API's, the CLI's and a runs file's; a
# --fabric preset's GPU and a --stack preset's attention kernel come before these).
DEFAULT_GPU = "h100"
DEFAULT_PRECISION = "bf16"
DEFAULT_SCHEDULE = "1f1b"
DEFAULT_COLLECTIVE = "nccl"
DEFAULT_ATTENTION = "flash"
RECOMPUTES = ("none", "selective", "full", "op")
# Activation recomputation, as the stacks name it. A mode is a policy (none; selective: Megatron-Core's default
# recompute-modules, the attention core; full: every layer; op: torchtitan's per-op selective checkpointing)
# or a "+" list of Megatron-Core's --recompute-modules (up_proj stands for mla_up_proj: the QKV projection).
# The kernel reads a mode as a sum of these bits (kernels.layout's docstring).
RECOMPUTE_MODULES = ("core_attn", "layernorm", "up_proj", "mlp", "moe_act", "moe")
RECOMPUTE_BITS = {
    "none": 0,
    "selective": 1,
    "full": 2,
    "op": 4,
    "core_attn": 1,
    "layernorm": 8,
    "up_proj": 16,
    "mlp": 32,
    "moe_act": 64,
    "moe": 128,
}
RECOMPUTE_HELP = "none, selective, full, op, or a + list of " + ", ".join(RECOMPUTE_MODULES)


def _plus_list(text: str, known: tuple[str, ...]) -> str | None:
    """``a+b`` with every part in ``known``, once each, spelled in ``known``'s order; else None."""
    parts = [part.strip() for part in text.split("+")]
    if any(part not in known for part in parts) or len(set(parts)) != len(parts):
        return None
    return "+".join(name for name in known if name in parts)


def recompute_mode(text: str) -> str | None:
    """The canonical spelling of a recompute mode (modules in :data:`RECOMPUTE_MODULES` order, so
    ``moe_act+mlp`` is ``mlp+moe_act``), or None when it is not one."""
    name = text.strip().lower()
    if name in RECOMPUTES:
        return name
    mode = _plus_list(name, RECOMPUTE_MODULES)
    return "selective" if mode == "core_attn" else mode


def recompute_code(mode: str) -> int:
    """The kernel's code of a canonical recompute mode: the sum of its bits."""
    return sum(RECOMPUTE_BITS[part] for part in mode.split("+"))


# Megatron-LM's names for the layout options whose values mean the same here, accepted as aliases so a launch
# line's settings can be pasted: --tensor-model-parallel-size 8 is --tp 8.
MEGATRON_ALIASES = {
    "tp": "--tensor-model-parallel-size",
    "pp": "--pipeline-model-parallel-size",
    "cp": "--context-parallel-size",
    "ep": "--expert-model-parallel-size",
    "expert_tp": "--expert-tensor-parallel-size",
    "micro_batch": "--micro-batch-size",
    "global_batch": "--global-batch-size",
    "recompute": "--recompute-granularity",
    "moe_dispatcher": "--moe-token-dispatcher-type",
}

# The stack's overlap switches, named after Megatron-Core's: --overlap-grad-reduce, --overlap-param-gather,
# --tp-comm-overlap, --overlap-moe-expert-parallel-comm. A mode is none or a "+" list of them (one per sweep).
OVERLAP_BITS = {"grad_reduce": 1, "param_gather": 2, "tp_comm": 4, "moe_a2a": 8}
OVERLAP_SWITCHES = tuple(OVERLAP_BITS)
OVERLAP_DEFAULT = "grad_reduce+param_gather"  # what the model assumed before the switches existed
OVERLAP_HELP = "none or a + list of " + ", ".join(OVERLAP_SWITCHES)


def overlap_mode(text: str) -> str | None:
    """The canonical spelling of an overlap mode (switches in :data:`OVERLAP_SWITCHES` order), or None."""
    name = text.strip().lower()
    return name if name == "none" else _plus_list(name, OVERLAP_SWITCHES)


def overlap_code(mode: str) -> int:
    """The kernel's code of a canonical overlap mode: the sum of its bits."""
    return 0 if mode == "none" else sum(OVERLAP_BITS[part] for part in mode.split("+"))


ATTENTIONS = (
    "flash",
    "unfused",
)  # flash: scores never stored (today's stacks); unfused: Megatron-LM of 2021-22
LAYOUT_COLLECTIVES = (
    "ring",
    "tree",
    "nccl",
)  # nccl: the cheaper of ring and tree per message, as NCCL's tuner
LAYOUT_PRECISIONS = ("bf16", "fp16", "fp8")
# --collectives, one per sweep: flat prices every collective as a ring (or tree: --collective) of one bandwidth per
# group; nccl as NCCL's tuner does for the group as placed (kernels.layout_collectives, kernels.nccl).
COLLECTIVES_MODES = ("flat", "nccl")
# --moe-dispatcher, one per sweep, Megatron-Core's --moe-token-dispatcher-type names: alltoall sends each of a
# token's k copies to its expert's GPU by NCCL's all-to-all; flex sends it once per node (DeepEP, HybridEP) and
# forwards it over NVLink (kernels.layout_communication.hierarchical_copies).
MOE_DISPATCHERS = ("alltoall", "flex")


def moe_dispatcher_code(name: str) -> int:
    """The kernel's code of a MoE dispatcher: its place in :data:`MOE_DISPATCHERS` (0 alltoall, 1 flex)."""
    return MOE_DISPATCHERS.index(name)


SHARED_AXES = (
    "gpus_per_node",
    "nics_per_node",
    "bandwidth",
    "utilization",
    "latency",
    "overhead",
    "slowdown",
    "jitter",
)
AXES: dict[str, AxisSpec] = {**LAYOUT_AXES, **{name: NUMERIC_AXES[name] for name in SHARED_AXES}}
# The layout family's own options: --arch, one per layout axis, and those it reads as text (declared once: the
# CLI's parameters, the large-model commands' checks and the public API take their names from here).
LAYOUT_TEXT_OPTIONS = (
    "attention",
    "schedule",
    "launch",
    "virtual_stages",
    "recompute",
    "overlap",
    "collectives",
    "moe_dispatcher",
    "stack",
    "fabric",
    "oversubscription",
)
LAYOUT_OPTIONS = ("arch", *LAYOUT_AXES, *LAYOUT_TEXT_OPTIONS)

# Cube order: the setting dims (what is trained and what it runs on; `sweep plan` keeps them), then the
# parallel dims, the layout's own choices (`sweep plan` searches them). A block of a sweep is R setting cells
# by C layouts. (The data-parallel family's STRUCTURAL, LAYOUT and INNER, in sweep.core.schema, are other sets.)
TEXT_DIMS = ("model", "gpu", "precision", "attention", "schedule", "recompute", "collective")
SETTING_DIMS = (
    "model",
    "gpu",
    "precision",
    "grad_bytes",
    "attention",
    "offload_layers",
    "gpus",
    "global_batch",
    "gpus_per_node",
    "nvlink_domain",
    "nvlink_bw",
    "nics_per_node",
    "bandwidth",
    "utilization",
    "latency",
    "collective",
    "efficiency",
    "imbalance",
    "overhead",
    "slowdown",
    "jitter",
)
PARALLEL_DIMS = (
    "dp",
    "tp",
    "pp",
    "cp",
    "ep",
    "expert_tp",
    "micro_batch",
    "schedule",
    "recompute",
    "sequence_parallel",
    "zero",
)
DIMS = SETTING_DIMS + PARALLEL_DIMS
# The dims `sweep plan` searches when they are not given (its search space: sweep.analysis.planning).
PLAN_SEARCHED = ("tp", "pp", "cp", "ep", "expert_tp", "micro_batch", "zero", "sequence_parallel")
SYSTEM_DIMS = (
    "gpus_per_node",
    "nvlink_domain",
    "nvlink_bw",
    "nics_per_node",
    "bandwidth",
)  # 0: the GPU's system
LONG_NAMES = {
    "model": "transformer",
    "gpu": "GPU preset",
    "precision": "training precision",
    "attention": "attention kernel (flash: scores never stored; unfused: stored)",
    "schedule": "pipeline schedule",
    "recompute": "activation recomputation",
    "collective": "collective algorithm",
}

# Output variables: name -> (units, long name), in cube order.
VARIABLES: dict[str, tuple[str, str]] = {
    "iteration_time": ("s", "time of one training step"),
    "tokens_per_s": ("1/s", "tokens trained per second"),
    "mfu": ("1", "model FLOPs utilization: model FLOPs / (time x peak x GPUs)"),
    "tflops_per_gpu": ("TFLOP/s", "model FLOPs per second per GPU"),
    "hardware_tflops_per_gpu": ("TFLOP/s", "FLOPs per second per GPU, the recomputed forward included"),
    "memory_gb": ("GB", "memory per GPU: weights, gradients, optimizer states, activations"),
    "memory_free_gb": ("GB", "usable memory the layout leaves free (negative: what it lacks)"),
    "fits": ("1", "1 if the memory fits the GPU, else 0"),
    "status": ("1", "0 if the layout can exist, else the rule it breaks (attribute 'rules')"),
    "compute": ("s", "forward and backward compute of the slowest stage"),
    "recompute_time": ("s", "recomputed forward"),
    "bubble": ("s", "pipeline fill and drain"),
    "tp_exposed": ("s", "tensor-parallel communication"),
    "cp_exposed": ("s", "context-parallel exchange not hidden behind attention"),
    "ep_exposed": ("s", "expert-parallel all-to-alls"),
    "pp_exposed": ("s", "pipeline point-to-point activations"),
    "dp_exposed": ("s", "data-parallel synchronisation not hidden behind the backward pass"),
    "optimizer": ("s", "optimizer step"),
    "overhead_time": ("s", "time per step nothing overlaps"),
    "network_fraction": ("1", "share of the step spent waiting on traffic that leaves the NVLink domain"),
    "ep_on_nics": ("1", "1 if the expert all-to-all is paced by the NICs, else 0"),
}
BREAKDOWN = (
    "compute",
    "recompute_time",
    "bubble",
    "tp_exposed",
    "cp_exposed",
    "ep_exposed",
    "pp_exposed",
    "dp_exposed",
    "optimizer",
    "overhead_time",
)
# How a breakdown term reads where a step is said to wait on it.
WAITS_ON = {
    "compute": "compute",
    "recompute_time": "recompute",
    "bubble": "pipeline bubble",
    "tp_exposed": "TP comm",
    "cp_exposed": "CP comm",
    "ep_exposed": "EP all-to-all",
    "pp_exposed": "PP sends",
    "dp_exposed": "DP sync",
    "optimizer": "optimizer",
    "overhead_time": "overhead",
}


def waits_on(terms: dict[str, float], total: float, count: int = 2) -> str:
    """The ``count`` largest breakdown terms as shares of ``total``: ``compute 66%, DP sync 21%``."""
    ranked = sorted(BREAKDOWN, key=lambda k: -terms[k])[:count]
    return ", ".join(f"{WAITS_ON[k]} {terms[k] / total:.0%}" for k in ranked)


def coordinate_attrs(dim: str) -> dict[str, str]:
    """``units`` and ``long_name`` of a layout cube's coordinate."""
    return schema.coordinate_attrs(dim, AXES, LONG_NAMES)


def schedule_name(chunks: float) -> str:
    """The schedule of ``chunks`` model chunks per pipeline stage as ``--schedule`` spells it (1: ``1f1b``, V:
    ``interleaved:V``): :func:`sweep.engine.layout_grid.parse_schedule`'s inverse, one spelling per schedule."""
    return "1f1b" if chunks == 1 else f"interleaved:{int(chunks)}"
