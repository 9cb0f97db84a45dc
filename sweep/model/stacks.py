"""The software stacks large models train on, each declared once as data: a stack's defaults for the settings a
run does not state, and where each default comes from.

A stack preset is what ``--stack NAME`` (``sweep grid --model ...``, ``sweep plan``) and a runs file's ``stack``
column (:mod:`sweep.io.runs`, ``validate --llm``) name: the same defaults for both, but for the micro-batch, a
layout choice a sweep is given (``sweep plan`` searches it) where a runs file's row may leave it unstated. A runs file may also name the
stack family with its year, as the shipped file does (:func:`stack_of`): ``megatron`` of 2022 or before is
``megatron-2021``, of 2023 on ``megatron-core``; ``fsdp`` is ``fsdp``.

Each preset sets, where a run does not state them: the micro-batch (1, or with pipelining as many micro-batches
as stages), activation recomputation, sequence parallelism (with TP > 1), ZeRO, the attention kernel and its
efficiency per GPU die, the gradients' dtype (0: the precision's, as ``--grad-bytes`` reads it; 2: bf16), the
overlap switches (``tp_comm`` only where TP > 1 with sequence parallelism), the MoE load imbalance and expert
TP, and Adam's moment dtype where the stack's recipe for a model sets one (``moment_bytes``: Megatron-Bridge's
DeepSeek-V3 recipe keeps them in bf16). The software-speed constants fitted per stack and GPU die (matrix efficiency, memory efficiency, NIC
utilization) are data too: ``sweep/data/llm_constants.json`` (:func:`constants`), written by
``python -m netsweep_jax.sweep.analysis.llm_constants`` from ``validate --llm``'s fit; a large-model sweep with no
``--stack`` takes :data:`DEFAULT_STACK`'s constants (only those: its other settings keep their documented defaults).
"""

import dataclasses
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.errors import InputError

CONSTANTS_FILE = Path(__file__).resolve().parents[1] / "data" / "llm_constants.json"

# FlashAttention-2's fraction of an H100's half-precision peak: 333-335 TFLOP/s forward (causal) and 318-322
# backward at head dim 128, 8k-16k tokens, of the H100 SXM5's 989 (Shah et al., FlashAttention-3, arXiv
# 2407.08608, Figures 5-6).
FA2_ON_HOPPER = 0.33


@dataclasses.dataclass(frozen=True)
class Stack:
    """One stack preset: its defaults and each one's source (``sources``: setting name -> why).

    Fields (the settings' names and units are the layout options'):
      name, title: the preset's name (``--stack``) and the software it stands for.
      family: ``megatron`` or ``fsdp``, the runs file's older ``stack`` values (the report groups by it).
      micro_batch_per_stage: with pipelining and no micro-batch given, global batch / (dp x pp) (as many
        micro-batches as stages); else 1.
      recompute: the recompute mode.  sequence_parallel: on where TP > 1.  zero: the ZeRO stage.
      zero3_gather_once: 1 where ZeRO 3 under a pipeline gathers once a step (PyTorch's FSDP2), 0 where it
        gathers every micro-batch (Megatron-FSDP).
      attention: ``flash`` or ``unfused``.  flash_efficiency: die -> (the flash kernel's fraction of the
        die's peak, why), where it is not the documented default.
      grad_bytes: bytes of a gradient as kept and reduced (0: the precision's).
      overlap: the overlap switches (``tp_comm`` dropped where TP is 1 or sequence parallelism off).
      imbalance: the MoE load imbalance (busiest expert's tokens over the mean).  expert_tp: expert TP.
      moment_bytes: model preset -> (bytes of each Adam moment, why), where the stack's recipe for that model
        sets the moments' dtype (Megatron-Core's --exp-avg-dtype, --exp-avg-sq-dtype); other models: fp32 (4).
      context_parallel: whether the stack has context parallelism (off: CP 1 where --cp is not given, and
        sweep plan does not search it).
      never_ran: text setting -> {value: why}, the values the stack's software never ran (fp8 on Megatron-LM
        of 2021-22): priced as asked, and the ``assumed:`` line says so.
    """

    name: str
    title: str
    family: str
    micro_batch_per_stage: bool
    recompute: str
    sequence_parallel: bool
    zero: int
    attention: str
    flash_efficiency: Mapping[str, tuple[float, str]]
    grad_bytes: int
    overlap: str
    imbalance: float
    expert_tp: int
    sources: Mapping[str, str]
    zero3_gather_once: int = 0
    moment_bytes: Mapping[str, tuple[int, str]] = dataclasses.field(default_factory=dict)
    context_parallel: bool = True
    never_ran: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)

    def overlap_with(self, tp: float, sequence_parallel: float, sharded: bool = True) -> str:
        """The overlap switches of a layout of TP ``tp`` with sequence parallelism ``sequence_parallel``, its
        optimizer ``sharded`` (ZeRO >= 1: else no parameter gather to overlap)."""
        dropped = set() if tp > 1 and sequence_parallel else {"tp_comm"}
        dropped |= set() if sharded else {"param_gather"}
        kept = [s for s in self.overlap.split("+") if s not in dropped]
        return "+".join(kept) or "none"

    def micro_batch(self, global_batch: float, dp: float, pp: float) -> int | None:
        """The micro-batch this stack runs where none is given: global batch / (dp x pp), at least 1, where it
        runs as many micro-batches as stages (``micro_batch_per_stage``) and pipelines (pp > 1); else None."""
        if not self.micro_batch_per_stage or pp <= 1:
            return None
        return max(1, int(global_batch // (dp * pp)))

    def moments(self, model: str) -> tuple[int, str] | None:
        """The bytes of each Adam moment this stack's recipe for preset ``model`` keeps, and why (None: fp32)."""
        return self.moment_bytes.get(model)

    def attention_efficiency(self, die: str, attention: str) -> tuple[float, str] | None:
        """The flash kernel's efficiency on ``die`` and why, where this stack sets one (else None)."""
        return self.flash_efficiency.get(die) if attention == "flash" else None


_MEGATRON_2021 = Stack(
    name="megatron-2021",
    title="Megatron-LM and DeepSpeed of 2021-22",
    family="megatron",
    micro_batch_per_stage=False,
    recompute="full",
    sequence_parallel=False,
    zero=0,
    attention="unfused",
    flash_efficiency={},
    grad_bytes=0,
    overlap="none",
    imbalance=1.0,
    expert_tp=1,
    sources={
        "micro_batch": "the smallest; SC'21 Table 1 does not state it",
        "recompute": "Megatron-LM recomputed every layer then; SC'21's eq. 3 assumes it",
        "sequence_parallel": "it came with Korthikanti et al., 2022",
        "zero": "Megatron-LM's optimizer of 2021-22 is not distributed",
        "attention": "Megatron-LM of 2021-22 stored the attention scores",
        # Megatron-LM of 2021-22 kept the precision's gradients (fp16 ones in fp16: 0 says so).
        "grad_bytes": "the precision's gradients (Megatron-LM's main_grad)",
        # Megatron-LM of 2021-22 all-reduced the gradients after the pipeline flush and ran TP's collectives
        # blocking (DDP-impl local; training.py at f32a638 and 3f4e71d).
        "overlap": "gradients all-reduced after the flush, TP blocking (Megatron-LM training.py at f32a638, "
        "3f4e71d)",
        # Context parallelism came with Megatron-Core (--context-parallel-size, 2023-24): a plan of this stack
        # searched CP 2 and 4 (a hunt).
        "context_parallel": "none: it came with Megatron-Core",
    },
    context_parallel=False,
    # What came to Megatron-LM at the end of 2022, after the runs this stack stands for: FlashAttention (Dao et al.,
    # NeurIPS 2022; --use-flash-attn, Megatron-LM d693034 of 2022-12-08) and fp8 (Transformer Engine's
    # integration, 3499542 of 2022-12-21). A plan of this stack with either priced it silently (a hunt): said,
    # not refused (a what-if the user asked for).
    never_ran={
        "precision": {"fp8": "Transformer Engine's fp8 came to Megatron-LM in December 2022"},
        "attention": {"flash": "FlashAttention came to Megatron-LM in December 2022"},
    },
)
_MEGATRON_CORE = Stack(
    name="megatron-core",
    title="Megatron-Core recipes (NeMo, Megatron-Bridge) of 2023 on",
    family="megatron",
    micro_batch_per_stage=False,
    recompute="none",
    sequence_parallel=True,
    zero=1,
    attention="flash",
    flash_efficiency={},
    grad_bytes=2,
    overlap="grad_reduce+param_gather+tp_comm",
    imbalance=1.0,
    expert_tp=1,
    sources={
        "micro_batch": "the smallest",
        "recompute": "the recipes say when they recompute",
        "sequence_parallel": "the recipes turn it on with TP",
        "zero": "the distributed optimizer the recipes turn on",
        "attention": "Transformer Engine's fused attention",
        # The recipes keep and reduce the gradients in bf16: Megatron-Bridge's performance recipes set
        # grad_reduce_in_fp32 False, as NeMo's do for fp8; Megatron-LM's Llama 3 script passes
        # --grad-reduce-in-bf16.
        "grad_bytes": "bf16 gradients (Megatron-Bridge's grad_reduce_in_fp32 False)",
        # Megatron-Core's recipes overlap the gradient reduce and the parameter gather, and TP communication
        # where TP >= 2 with SP (Megatron-Bridge's CommOverlapConfig at 00b7660).
        "overlap": "Megatron-Bridge's CommOverlapConfig at 00b7660",
        # NVIDIA's performance recipes force balanced routing (moe_router_force_load_balancing=True in
        # Megatron-Bridge's scripts/performance/*_llm_pretrain.py at 953aabf: deepseek 54, qwen3 76, gpt_oss 40),
        # so the busiest expert's tokens equal the mean's.
        "imbalance": "balanced routing, as the recipes force it (Megatron-Bridge@953aabf)",
        # Megatron-Bridge's performance recipes set expert_tensor_parallel_size 1 for every MoE model they
        # publish (qwen3, deepseek and gpt_oss presets at 00b7660 and 0a25f91), where Megatron-Core would default
        # it to the TP size.
        "expert_tp": "the recipes' expert_tensor_parallel_size 1 (Megatron-Bridge@00b7660)",
    },
    # Megatron-Bridge's DeepSeek-V3 recipe turns on the precision-aware optimizer with both moments in bf16
    # (src/megatron/bridge/recipes/deepseek/deepseek_v3.py at 00b7660, lines 275-276: exp_avg_dtype and
    # exp_avg_sq_dtype torch.bfloat16; at v0.1.0rc4, 6725f70, lines 240-244), as Megatron-LM's DeepSeek-V3
    # GB200 guide does (--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16, reproduce guide at 79e8592); its Llama
    # and Qwen3 recipes keep fp32 moments.
    moment_bytes={"deepseek-v3-like": (2, "Megatron-Bridge@00b7660's DeepSeek-V3 recipe: bf16 Adam moments")},
)
_FSDP = Stack(
    name="fsdp",
    title="PyTorch FSDP and FSDP2 (torchtitan, llm-foundry)",
    family="fsdp",
    micro_batch_per_stage=True,
    recompute="none",
    sequence_parallel=True,
    zero=3,
    attention="flash",
    # PyTorch's SDPA ran FlashAttention-2 on Hopper in the FSDP stacks' runs (torchtitan calls
    # F.scaled_dot_product_attention with no backend forced, models/llama/model.py at 9dec370; PyTorch made cuDNN
    # attention opt-in in 2.5.1, pytorch/pytorch#138522, and its default reached 329 TFLOP/s at head dim 128 on an
    # H100 in Dec 2024, #142132; llm-foundry's attn_impl flash is the flash-attn package, no faster on Hopper).
    # Elsewhere the documented default (Transformer Engine's fused attention, FlashAttention-2 on the A100).
    flash_efficiency={"h100": (FA2_ON_HOPPER, "FlashAttention-2 on Hopper")},
    grad_bytes=0,
    overlap="grad_reduce+param_gather",
    imbalance=1.0,
    expert_tp=1,
    zero3_gather_once=1,
    sources={
        # torchtitan splits each data-parallel rank's batch into as many micro-batches as pipeline stages
        # (pipeline_parallel_microbatches unset).
        "micro_batch": "as many micro-batches as stages (torchtitan's default)",
        "recompute": "as stated, else none",
        "sequence_parallel": "torchtitan's TP plan shards the norms",
        "zero": "full sharding",
        # torchtitan keeps the gathered parameters after each forward where PP is on (reshard_after_forward =
        # not pp_enabled, pytorch/torchtitan@018740b torchtitan/models/llama3/infra/parallelize.py), and PyTorch's
        # pipeline stage reduces and reshards once after the stage's last backward (pytorch/pytorch@0138610
        # torch/distributed/pipelining/stage.py): kernels.layout_data_parallel.as_pipelines_run_zero3
        "zero3_gather_once": "under PP gathered once a step, as PyTorch's pipelining runs FSDP2",
        "attention": "PyTorch's SDPA",
        # FSDP2's default mixed precision (torchtitan) and PyTorch FSDP's (llm-foundry) reduce in fp32: the
        # precision's gradients.
        "grad_bytes": "FSDP2's and llm-foundry's fp32 reduce dtype",
        "overlap": "FSDP overlaps its per-layer gathers and reduce-scatters",
        "attention_efficiency": "Shah et al., FlashAttention-3, arXiv 2407.08608, Figures 5-6",
        "imbalance": "balanced routing",
        "expert_tp": "1",
    },
)
STACKS: dict[str, Stack] = {s.name: s for s in (_MEGATRON_2021, _MEGATRON_CORE, _FSDP)}
FAMILIES = ("megatron", "fsdp")  # a runs file's older stack values, read with the run's year
STACKS_HELP = ", ".join(STACKS)
# The stack whose fitted constants (:func:`constants`) the large-model commands take where no --stack is given:
# Megatron-Core's recipes, today's common stack and the one NVIDIA's published large runs use.
DEFAULT_STACK = "megatron-core"
# The software-speed constants a stack sets per GPU die (:func:`constants`), by their settings' names.
CONSTANTS = ("efficiency", "memory_efficiency", "utilization")
FITTED_DEFAULT = (
    f"{DEFAULT_STACK}'s for the GPU's die, as validate --llm fits it (sweep/data/llm_constants.json; --stack "
    "names another stack)"
)


def stack_of(column: str, year: int) -> str:
    """The preset of a runs file's ``stack`` cell (lower case; empty: ``megatron``) and ``year``: a preset's name
    as is; ``fsdp``; ``megatron`` by its year (2022 or before: ``megatron-2021``, else ``megatron-core``)."""
    name = column or "megatron"
    if name in STACKS:
        return name
    if name == "megatron":
        return "megatron-2021" if year <= 2022 else "megatron-core"
    known = ", ".join(dict.fromkeys((*STACKS, *FAMILIES)))
    raise InputError(f"stack {name!r} must be one of {known} (empty: megatron)")


def stack_preset(name: str) -> Stack:
    """The preset ``name`` (any case); an unknown name is refused naming the presets."""
    key = str(name).strip().lower()
    if "," in key:
        raise InputError(f"{name}: give one stack (one per sweep); stacks: {STACKS_HELP}", param="stack")
    if key not in STACKS:
        raise InputError(f"{name!r}: not a stack; stacks: {STACKS_HELP}", param="stack")
    return STACKS[key]


@dataclasses.dataclass(frozen=True)
class Constants:
    """The software-speed constants of one stack on one GPU die, and where they come from.

    efficiency: the matrix efficiency (fraction of the die's dense peak);  memory_efficiency: the achieved
    fraction of HBM bandwidth in memory-bound work;  utilization: the NICs' achieved fraction of line rate;
    source: how they were obtained (fitted on which rows, or a default), the file and its date."""

    efficiency: float
    memory_efficiency: float
    utilization: float
    source: str


@cache
def _constants_file(path: Path = CONSTANTS_FILE) -> dict[str, Any]:
    return json.loads(path.read_text())


def constants(stack: str, die: str) -> Constants:
    """The shipped constants (:data:`CONSTANTS_FILE`) of preset ``stack`` on GPU die ``die``."""
    data = _constants_file()
    entry = data["stacks"][stack][die]
    return Constants(
        float(entry["efficiency"]),
        float(data["memory_efficiency"]),
        float(data["utilization"]),
        f"{entry['from']}; {'/'.join(CONSTANTS_FILE.parts[-3:])} of {data['date']}",
    )
