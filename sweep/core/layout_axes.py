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

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

from typing_extensions import TypedDict

from netsweep_jax.sweep.core.axes import NUMERIC_AXES, OVERSUBSCRIPTION, AxisSpec, TextOption, unnamed
from netsweep_jax.sweep.core.sweep_settings import SETTING_AXES, SETTING_OPTIONS, plus_list
from netsweep_jax.sweep.core.wording import rounded

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

    import numpy as np

    Values: TypeAlias = float | str | Sequence[float | str] | np.ndarray  # a number, numbers, or value syntax
else:
    Values = object  # only a type checker reads it (this layer imports no numpy)

SCHEDULES_HELP = "1f1b, or interleaved:V (V model chunks per stage, V >= 2)"
# The text settings a layout sweep takes where the user gives none (the API's, the CLI's and a runs file's; a
# --fabric preset's GPU and a --stack preset's attention kernel come before these).
DEFAULT_GPU = "h100"
DEFAULT_PRECISION = "bf16"
DEFAULT_SCHEDULE = "1f1b"
DEFAULT_COLLECTIVE = "ring-or-tree"
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


def recompute_mode(text: str) -> str | None:
    """The canonical spelling of a recompute mode (modules in :data:`RECOMPUTE_MODULES` order, so
    ``moe_act+mlp`` is ``mlp+moe_act``), or None when it is not one."""
    name = text.strip().lower()
    if name in RECOMPUTES:
        return name
    mode = plus_list(name, RECOMPUTE_MODULES)
    return "selective" if mode == "core_attn" else mode


def recompute_code(mode: str) -> int:
    """The kernel's code of a canonical recompute mode: the sum of its bits."""
    return sum(RECOMPUTE_BITS[part] for part in mode.split("+"))


# Megatron-LM's names for the layout axes whose values mean the same here, accepted as aliases so a launch
# line's settings can be pasted: --tensor-model-parallel-size 8 is --tp 8 (a text option's is its TextOption's).
MEGATRON_ALIASES = {
    "tp": "--tensor-model-parallel-size",
    "pp": "--pipeline-model-parallel-size",
    "cp": "--context-parallel-size",
    "ep": "--expert-model-parallel-size",
    "expert_tp": "--expert-tensor-parallel-size",
    "micro_batch": "--micro-batch-size",
    "global_batch": "--global-batch-size",
}

ATTENTIONS = (
    "flash",
    "unfused",
)  # flash: scores never stored (today's stacks); unfused: Megatron-LM of 2021-22
# --collective, the same words as a data-parallel sweep's (sweep.core.schema.COLLECTIVES) where they mean the same:
# nccl is NCCL's tuner for each group as placed (kernels.layout_collectives, kernels.nccl), its choice of
# algorithm and protocol by size; nccl:ALGO the same with NCCL's algorithm forced as NCCL_ALGO=ALGO does, and
# nccl:PROTO with its protocol forced as NCCL_PROTO=PROTO does (kernels.nccl.FORCINGS' names and order: the
# kernel's code of nccl:... is NCCL's code + its index there); ring, tree and ring-or-tree (the cheaper of the
# two per message) are the flat collectives, one bandwidth per group. A sweep prices every collective one way,
# so the flat ones and NCCL's are not listed together.
NCCL_ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
NCCL_PROTOCOLS = ("ll", "ll128", "simple")
FLAT_COLLECTIVES = ("ring", "tree", "ring-or-tree")
NCCL_COLLECTIVES = ("nccl", *(f"nccl:{name}" for name in (*NCCL_ALGORITHMS, *NCCL_PROTOCOLS)))
LAYOUT_COLLECTIVES = (*FLAT_COLLECTIVES, *NCCL_COLLECTIVES)


def is_nccl(collective: str) -> bool:
    """Whether ``collective`` is NCCL's own (``nccl``, or ``nccl:ALGO`` / ``nccl:PROTO`` with its algorithm or
    protocol forced), in either family."""
    return collective in NCCL_COLLECTIVES


def uses_nccl(collectives: Iterable[str]) -> bool:
    """Whether any of ``collectives`` is NCCL's own (:func:`is_nccl`)."""
    return any(is_nccl(c) for c in collectives)


LAYOUT_PRECISIONS = ("bf16", "fp16", "fp8")
# A sweep's pricing of its collectives, one per sweep (the kernel's static ``collectives``: a compile each): flat
# for ring, tree and ring-or-tree, nccl for nccl. --collectives flat|nccl is its old spelling, still read.
COLLECTIVES_MODES = ("flat", "nccl")
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


class LayoutAxisKeywords(TypedDict, total=False):
    """The layout family's own numeric options that take a list (a dim of a layout cube, or the model's MTP
    depths), each a keyword of the large-model API (:class:`sweep.large_models.LayoutOptions` holds them: a
    number, a sequence or the CLI's value syntax) annotated with its axis (:class:`~sweep.core.axes.AxisSpec`:
    option, units, long name, bounds or choices, default, SI factor), in the CLI's order. Its settings of one value
    per sweep are :class:`~sweep.core.sweep_settings.SettingKeywords`; a dim's place in a cube is
    :data:`SETTING_DIMS` or :data:`PARALLEL_DIMS` below."""

    gpus: Annotated[Values, unnamed("--gpus", "1", "GPUs in the job", True, 1, 1e7, "")]
    dp: Annotated[
        Values,
        unnamed(
            "--dp",
            "1",
            "data-parallel degree (instead of --gpus: gpus = tp x pp x cp x dp)",
            True,
            1,
            1e7,
            "",
        ),
    ]
    tp: Annotated[Values, unnamed("--tp", "1", "tensor-parallel degree", True, 1, 4096, "1")]
    pp: Annotated[Values, unnamed("--pp", "1", "pipeline-parallel degree (stages)", True, 1, 4096, "1")]
    cp: Annotated[Values, unnamed("--cp", "1", "context-parallel degree", True, 1, 4096, "1")]
    ep: Annotated[Values, unnamed("--ep", "1", "expert-parallel degree", True, 1, 4096, "1")]
    expert_tp: Annotated[
        Values,
        unnamed(
            "--expert-tp",
            "1",
            "expert tensor-parallel degree: GPUs each expert's matrices are split over (NVIDIA's MoE recipes: 1)",
            True,
            1,
            4096,
            "1",
        ),
    ]
    micro_batch: Annotated[
        Values, unnamed("--micro-batch", "1", "samples per micro-batch", True, 1, 1e6, "1")
    ]
    # at most 2^24, float32's last run of consecutive integers: the kernel's divisibility rules (global batch by
    # micro-batch x dp) hold in the compute dtype (a hunt: 16777217, rounded, passed for divisible by 8)
    global_batch: Annotated[Values, unnamed("--global-batch", "1", "samples per step", True, 1, 2**24, "")]
    zero: Annotated[
        Values,
        unnamed(
            "--zero",
            "1",
            "ZeRO stage: 0 none, 1 distributed optimizer, 2 gradients too, 3 FSDP",
            True,
            0,
            3,
            "0",
        ),
    ]
    sequence_parallel: Annotated[
        Values,
        unnamed("--sequence-parallel", "1", "sequence parallelism with TP: 0 off, 1 on", True, 0, 1, "1"),
    ]
    nvlink_domain: Annotated[
        Values,
        unnamed(
            "--nvlink-domain", "1", "GPUs per NVLink domain (default: the GPU's system)", True, 1, 1e6, ""
        ),
    ]
    nvlink_bw: Annotated[
        Values,
        unnamed(
            "--nvlink-bw",
            "GB/s",
            "NVLink bandwidth per GPU, one direction (default: the GPU's)",
            False,
            1e-3,
            1e6,
            "",
            1e9,
        ),
    ]
    efficiency: Annotated[
        Values,
        unnamed("--efficiency", "1", "achieved fraction of the GPU's matrix peak", False, 1e-3, 1, "0.6"),
    ]
    grad_bytes: Annotated[
        Values,
        unnamed(
            "--grad-bytes",
            "bytes",
            "bytes per gradient element as kept and reduced: 4 (fp32), 2 "
            "(bf16: --grad-reduce-in-bf16, FSDP2 reduce_dtype bf16); 0: the precision's (4 for bf16 and fp8, as "
            "Megatron-LM reduces them in fp32; 2 for fp16)",
            True,
            0,
            4,
            "0",
            choices=((0, "the precision's"), (2, "bf16"), (4, "fp32")),
        ),
    ]
    offload_layers: Annotated[
        Values,
        unnamed(
            "--cpu-offloading-num-layers",
            "1",
            "layers per pipeline stage whose activations "
            "are offloaded to the host (Megatron-Core's switch; at least one layer stays; the copies are taken to "
            "hide behind compute)",
            True,
            0,
            1e6,
            "0",
        ),
    ]
    mtp_layers: Annotated[
        Values,
        unnamed(
            "--mtp-layers",
            "1",
            "multi-token-prediction depths the run trains (DeepSeek-V3's MTP modules on the last pipeline stage; "
            "Megatron-Core's --mtp-num-layers); not given: the model's (deepseek-v3-like 1, others 0)",
            True,
            0,
            16,
            "",
        ),
    ]
    imbalance: Annotated[
        Values,
        unnamed(
            "--imbalance",
            "1",
            "MoE load imbalance: the busiest expert's tokens over the mean",
            False,
            1,
            100,
            "1",
        ),
    ]


LAYOUT_AXES: dict[str, AxisSpec] = {
    name: dataclasses.replace(annotation.__metadata__[0], name=name)
    for name, annotation in LayoutAxisKeywords.__annotations__.items()
}


# The layout family's own numeric options (those that take a list, then its settings of one value per sweep), and
# with them the data-parallel network axes it shares: every numeric option of a layout sweep.
OWN_AXES: dict[str, AxisSpec] = {**LAYOUT_AXES, **SETTING_AXES}
AXES: dict[str, AxisSpec] = {**OWN_AXES, **{name: NUMERIC_AXES[name] for name in SHARED_AXES}}


ARCH = TextOption(
    "--arch",
    "A transformer by shape: layers=96,hidden=12288,heads=96,seq=2048,vocab=51200 (also ffn=, kv_heads=, "
    "head_dim=, v_head_dim=, q_rank=, kv_rank=, rope_dim= (multi-head latent attention), mlp=gelu|swiglu, "
    "experts=, top_k=, expert_ffn=, shared_experts=, moe_every=, first_dense=, router_groups=, group_topk= "
    "(group-limited routing), mtp_layers= (multi-token prediction), tied=0|1, dropout=0|1).",
)
# The layout family's options read as text, after --arch and one per layout axis (the CLI's parameters, the
# large-model commands' checks and the public API take their names from here).
TEXT_OPTIONS: dict[str, TextOption] = {
    "attention": TextOption(
        "--attention",
        f"Attention kernel(s): {', '.join(ATTENTIONS)} (flash: scores never stored, today's stacks; unfused: "
        "stored, as Megatron-LM in 2021-22); comma list (default flash).",
    ),
    "schedule": TextOption(
        "--schedule",
        f"Pipeline schedule(s): {SCHEDULES_HELP}; comma list (default 1f1b; sweep plan: searched).",
    ),
    "launch": TextOption(
        "--launch",
        "A Megatron-LM launch command (a script or the command line): its parallel sizes, batch sizes, "
        "recomputation, sequence parallelism, distributed optimizer, overlap switches and precision, as if "
        "given here (the model comes from --model or --arch).",
        metavar="FILE",
        file=True,
    ),
    "virtual_stages": TextOption(
        "--virtual-pipeline-model-parallel-size",
        "Megatron-Core's name for the schedule: V model chunks per stage, interleaved:V (1: 1f1b); comma list "
        "of whole numbers. Give it or --schedule.",
        metavar="VALUES",
    ),
    "recompute": TextOption(
        "--recompute",
        f"Activation recomputation: {RECOMPUTE_HELP}; comma list (default none; sweep plan: searched).",
        alias="--recompute-granularity",
    ),
    **SETTING_OPTIONS,  # the overlap switches and the MoE dispatcher (sweep.core.sweep_settings)
    "collectives": TextOption(
        "--collectives",
        "The old spelling of the pricing --collective now names: flat (--collective ring-or-tree) or nccl "
        "(--collective nccl).",
        hidden=True,
    ),
    "stack": TextOption(
        "--stack",
        "The training software, one per sweep: {stacks} (sweep/model/stacks.py). Sets what you do not give as "
        "that stack does (recomputation, ZeRO, sequence parallelism, gradients, attention, overlap switches; "
        "sweep plan then searches the rest of the layout) and the constants validate --llm fits for it on the "
        "GPU's die (efficiency, memory efficiency, utilization: sweep/data/llm_constants.json) (default: "
        "{default_stack}'s constants, none of its other settings).",
        metavar="NAME",
    ),
    "fabric": TextOption(
        "--fabric",
        "The fabric (implies --collective nccl; refused with a flat one: ring, tree, ring-or-tree): a preset ({fabrics}: sweep/model/fabrics.py; sets GPUs and NICs per node, NIC rate, NVLink "
        "domain and GPU you do not give, and the hosts a leaf) or a fabric file (sweep calibrate "
        "--nccl-tests) whose constants (transport efficiencies, network latency, fixed cost, pipeline fill) "
        "replace the shipped fit's, and whose logs' hosts and GPU it sets where it records them. sweep plan takes a list (dgx-h100-superpod,aws-p5) and plans each.",
        metavar="NAME|FILE",
    ),
    "oversubscription": TextOption(
        OVERSUBSCRIPTION.option,
        f"{OVERSUBSCRIPTION.help} Needs a --fabric preset (its hosts a leaf). One value, but sweep plan takes a "
        "list (1,2,4) and plans each value.",
        metavar="VALUES",
    ),
}
LAYOUT_OPTIONS = ("arch", *OWN_AXES, *TEXT_OPTIONS)

# Cube order: the setting dims (what is trained and what it runs on; `sweep plan` keeps them), then the
# parallel dims, the layout's own choices (`sweep plan` searches them). A block of a sweep is R setting cells
# by C layouts. (The data-parallel family's STRUCTURAL, WORKERS and INNER, in sweep.core.schema, are other sets.)
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
# HDF5 holds at most 32 dims a dataset (H5S_MAX_RANK), and a layout cube has them all: a new dim replaces one, or
# the setting takes one value per sweep (sweep.core.sweep_settings) instead.
assert len(DIMS) <= 32, f"a layout cube of {len(DIMS)} dims: HDF5 holds 32"
# The dims `sweep plan` searches when they are not given (its search space: sweep.analysis.planning), and those
# of them it holds at one value: sequence parallelism on (with tp > 1 it moves the same bytes as tp's all-reduce
# and stores a tp-th of the activations: never a slower or larger layout).
PLAN_SEARCHED = ("tp", "pp", "cp", "ep", "expert_tp", "micro_batch", "zero", "sequence_parallel")
PLAN_HELD = {"sequence_parallel": "1"}
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
    "network_fraction": ("1", "share of the step spent waiting on the NICs (their bandwidth's share of it)"),
    "ep_on_nics": ("1", "1 if the expert all-to-all is paced by the NICs, else 0"),
}
# The step's breakdown terms (they sum to its iteration time), in cube order, and how each reads where a step is
# said to wait on it. The kernel names the same terms (kernels.layout.BREAKDOWN: the bottom floor cannot import
# this one); sweep.engine.compiled refuses to load if the two differ.
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
BREAKDOWN = tuple(WAITS_ON)


def waits_on(terms: dict[str, float], total: float, count: int = 2) -> str:
    """The ``count`` largest breakdown terms as shares of ``total``: ``compute 66%, DP sync 21%``."""
    ranked = sorted(BREAKDOWN, key=lambda k: -terms[k])[:count]
    return ", ".join(f"{WAITS_ON[k]} {rounded(terms[k] / total, percent=True)}" for k in ranked)


def schedule_name(chunks: float) -> str:
    """The schedule of ``chunks`` model chunks per pipeline stage as ``--schedule`` spells it (1: ``1f1b``, V:
    ``interleaved:V``): :func:`sweep.engine.layout_grid.parse_schedule`'s inverse, one spelling per schedule."""
    return "1f1b" if chunks == 1 else f"interleaved:{int(chunks)}"
