"""A compute model for transformer profiles: GPU presets, precisions, and per-tensor backward times.

For a :class:`~sweep.model.transformers.Transformer` trained on one GPU with B samples of
S tokens (T = B S tokens per step), each parameter tensor's work (its forward
matrix-product FLOPs f and memory-bound activation elements a per token,
:mod:`sweep.model.transformers`) costs

    forward  = T f / (peak_matmul * efficiency) + T a bytes_act / hbm + w bytes_param / hbm + launch
    backward = 2 T f / (peak_matmul * efficiency) + 2 T a bytes_act / hbm + 2 w bytes_param / hbm + 2 launch

(the backward pass computes the input gradient and the weight gradient: twice the
products, and reads and writes about twice the activations), and the optimizer step
(Adam, fp32 master weights) moves 16 bytes per parameter twice: 32 w / hbm. Then

    T1 = sum(forward) + sum(backward) + 32 W / hbm

and tensor i's gradient is ready when the backward pass, walking the tensors in
reverse parameter order, has finished it. ``efficiency`` (default 0.6) is the
achieved fraction of the matrix-product peak; it is an assumption, checked below.

Precisions (``PRECISIONS``, one table for both families): what the math runs in and what
each tensor is stored in, its gradient dtype explicit:

- ``fp32``: fp32 math, 4-byte gradients.
- ``amp``: PyTorch automatic mixed precision (fp16/bf16 autocast): half-precision
  matrix products, but parameters and their ``.grad`` stay fp32, so DDP all-reduces
  4-byte gradients.
- ``bf16`` / ``fp16``: the model itself in that type (``model.to(torch.bfloat16)``):
  half-precision math and 2-byte gradients.
- ``fp8``: the matrix products in fp8 (Transformer Engine) with bf16 weights and
  activations, each GEMM's input kept as its 1-byte cast for the backward (large models).

A precision's ``grad_bytes`` is its own dtype's. Megatron-LM's mixed precision, which the
large-model family models, keeps each gradient in an fp32 ``main_grad`` instead for bf16 and
fp8 models (``main_grad_bytes``; ``--grad-bytes`` overrides it).

GPU presets (dense peaks from NVIDIA's datasheets: "NVIDIA Tesla V100 GPU
Architecture" whitepaper, 2017; "NVIDIA A100 Tensor Core GPU" datasheet, SXM4 80 GB;
"NVIDIA H100 Tensor Core GPU" datasheet, SXM5; "NVIDIA H200 Tensor Core GPU"
datasheet; B200, GB200, B300 and GB300 below): fp32 FLOP/s, half-precision and fp8 tensor-core
FLOP/s (without sparsity), HBM bandwidth and capacity, and the NVLink domain and NICs
of the system each usually comes in (used by the layout model, :mod:`kernels.layout`).

Check against published single-GPU throughput: BERT-base, fp32, batch 32, sequence
128 on a V100 trains at 107-145 sequences/s across frameworks (OneFlow DLPerf report
v1.0, BERT-base fp32 tables); this model gives the value tested in
``tests/test_transformers.py`` (within 20% of that range's middle). BERT-large in mixed
precision on one A100 80GB, batch 256, sequence 128, trains at 694 sequences/s (NVIDIA
DeepLearningExamples, PaddlePaddle/LanguageModeling/BERT/README.md, pre-training table
for DGX A100); this model gives 657 (-5%). No comparable single-GPU H100 figure was found.
"""

import dataclasses
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import DEFAULT_PRECISION
from netsweep_jax.sweep.model.profile import MAX_SECONDS, Profile, make_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS, Tensor


@dataclasses.dataclass(frozen=True)
class GPU:
    """A GPU preset and the system it usually comes in.

    Attributes:
      name: the GPU.
      fp32, half, fp8: dense matrix-product peaks, FLOP/s (fp8 0: none).
      hbm: memory bandwidth, bytes/s.
      memory: memory capacity, bytes.
      nvlink: NVLink bandwidth per GPU, one direction, bytes/s.
      domain: GPUs in one NVLink domain of the usual system.
      gpus_per_node: GPUs that share a node's NICs.
      nics, nic_gbps: the node's NICs and each one's rate (Gbit/s).
      system: the usual system, for the line that says what was assumed.
      die: the preset whose fitted matrix efficiency this one shares ("" = its own): the same chip
        with other memory or power (an H200 is an H100).
    """

    name: str
    fp32: float
    half: float
    hbm: float
    memory: float = 0.0
    fp8: float = 0.0
    nvlink: float = 0.0
    domain: int = 8
    gpus_per_node: int = 8
    nics: int = 8
    nic_gbps: float = 100.0
    system: str = ""
    die: str = ""


# The systems: DGX-1 (V100: NVLink 2, 6 links of 25 GB/s per direction, 4 x 100 Gbit/s EDR),
# DGX A100 (NVLink 3, 300 GB/s per direction, 8 x 200 Gbit/s HDR), DGX H100/H200 (NVLink 4,
# 450 GB/s, 8 x 400 Gbit/s NDR), DGX B200 (NVLink 5, 900 GB/s, 8 x 400 Gbit/s) and GB200 NVL72
# (72 GPUs in one NVLink 5 domain, trays of 4 GPUs with one 400 Gbit/s NIC each), from each
# system's NVIDIA datasheet. B200 and GB200 peaks: NVIDIA's Blackwell datasheets (HGX B200 at
# 1000 W: 2.25 PFLOP/s dense BF16; GB200 at 1200 W: 2.5), as tabulated by G. Lockwood's
# "B200" notes (glennklockwood.com/garden/processors/B200).
# Memory: the total nvidia-smi reports (MiB; the driver's own reservation, a few hundred MiB, included:
# the usable fraction of the layout family takes it out), from nvidia-smi output published in issues:
# V100 16384 and 32768 (drivers R525+; 1CatAI/1Cat-vLLM#85, Wan-Video/Wan2.1#5), A100 40960 and 81920
# (modal-labs/modal-client#2797; thamada/nvidia-smi gls/A100SXMx4_smi.py), H100 SXM5 81559
# (NVIDIA/nccl#1264), H200 143771 (sgl-project/sglang#3196), B200 183359 (NVIDIA/TensorRT-LLM#10278),
# GB200 189471 (nvidia-smi logs of GB200 trays in public repositories; 13.4 TB / 72 on the datasheet).
# Blackwell Ultra (B300, GB300): dense peaks, HBM capacity and bandwidth from NVIDIA's Blackwell Ultra datasheets
# as Verda tabulates them per GPU ("NVIDIA GB300 NVL72: GPU Architecture & Performance",
# verda.com/blog/gb300-nvl72-architecture, performance without sparsity): GB300 at 1.4 kW 2.5 PFLOP/s BF16,
# 5 FP8, 80 TFLOP/s FP32, 279 GB at 8 TB/s (its rack aggregate: 180 PFLOP/s BF16, 360 FP8, 20 TB at 576 TB/s
# over 72 GPUs, as NVIDIA advertises the GB300 NVL72, glennklockwood.com/garden/processors/B300); B300 (HGX)
# 2.25 PFLOP/s BF16, 4.5 FP8, 75 TFLOP/s FP32, 270 GB at 7.7 TB/s (Lockwood's HGX B300 table: the same peaks).
# NVLink 5 at 900 GB/s a GPU each way (1.8 TB/s bidirectional), the GB300 NVL72 one 72-GPU domain of 18 trays
# of 4 GPUs (as sweep/model/nccl_fabric.py reads GB300 rows: 18 hosts a domain) and DGX B300 8 GPUs; one
# ConnectX-8 SuperNIC of 800 Gbit/s per GPU in both (the NVL72's 72 ConnectX-8 NICs, Lockwood; DGX B300's
# eight). Memory: the datasheets' capacities, not nvidia-smi's totals (none published for either yet).
MIB = 2.0**20
GPUS = {
    "v100": GPU(
        "NVIDIA V100 SXM2 32GB", 15.7e12, 125e12, 900e9, 32768 * MIB, 0.0, 150e9, 8, 8, 4, 100.0, "DGX-1"
    ),
    "v100-16": GPU(
        "NVIDIA V100 SXM2 16GB",
        15.7e12,
        125e12,
        900e9,
        16384 * MIB,
        0.0,
        150e9,
        8,
        8,
        4,
        100.0,
        "DGX-1",
        "v100",
    ),
    "a100": GPU(
        "NVIDIA A100 SXM4 80GB", 19.5e12, 312e12, 2039e9, 81920 * MIB, 0.0, 300e9, 8, 8, 8, 200.0, "DGX A100"
    ),
    "a100-40": GPU(
        "NVIDIA A100 SXM4 40GB",
        19.5e12,
        312e12,
        1555e9,
        40960 * MIB,
        0.0,
        300e9,
        8,
        8,
        8,
        200.0,
        "DGX A100",
        "a100",
    ),
    "h100": GPU(
        "NVIDIA H100 SXM5", 67e12, 989e12, 3350e9, 81559 * MIB, 1979e12, 450e9, 8, 8, 8, 400.0, "DGX H100"
    ),
    # torchtitan's benchmark machines (Meta's Grand Teton): H100s with 96 GB of HBM2e held to 500 W. No
    # datasheet: the half-precision peak is taken midway between the H100 NVL's 835 and the SXM5's 989 TFLOP/s
    # (torchtitan's performance notes say the true peak lies between the two), HBM bandwidth at the H100 PCIe's
    # HBM2e rate per stack (2.0 TB/s over 5 stacks) for 6 stacks, and the memory at the 96 GB the source states;
    # NVLink within the 8-GPU host and 400 Gbit/s RDMA per GPU, as the source describes them.
    "h100-hbm2e": GPU(
        "NVIDIA H100 96GB HBM2e at 500 W",
        67e12,
        912e12,
        2400e9,
        96e9,
        1824e12,
        450e9,
        8,
        8,
        8,
        400.0,
        "Grand Teton",
        "h100",
    ),
    "h200": GPU(
        "NVIDIA H200 SXM",
        67e12,
        989e12,
        4800e9,
        143771 * MIB,
        1979e12,
        450e9,
        8,
        8,
        8,
        400.0,
        "DGX H200",
        "h100",
    ),
    "b200": GPU(
        "NVIDIA B200", 80e12, 2250e12, 8000e9, 183359 * MIB, 4500e12, 900e9, 8, 8, 8, 400.0, "DGX B200"
    ),
    "gb200": GPU(
        "NVIDIA GB200 (B200 at 1200 W)",
        90e12,
        2500e12,
        8000e9,
        189471 * MIB,
        5000e12,
        900e9,
        72,
        4,
        4,
        400.0,
        "GB200 NVL72",
    ),
    "b300": GPU(
        "NVIDIA B300 (Blackwell Ultra, HGX)",
        75e12,
        2250e12,
        7700e9,
        270e9,
        4500e12,
        900e9,
        8,
        8,
        8,
        800.0,
        "DGX B300",
    ),
    "gb300": GPU(
        "NVIDIA GB300 (Blackwell Ultra at 1400 W)",
        80e12,
        2500e12,
        8000e9,
        279e9,
        5000e12,
        900e9,
        72,
        4,
        4,
        800.0,
        "GB300 NVL72",
    ),
}


class Precision(NamedTuple):
    """What a precision runs its matrix products at and stores, in bytes per element.

    Attributes:
      math: the matrix peak its GEMMs run at: ``fp32``, ``half`` or ``fp8``.
      param_bytes: the weights as the GEMMs read them.
      grad_bytes: the gradients in the precision's own dtype (autocast keeps fp32 ones).
      act_bytes: the activations.
      gemm_input_bytes: a GEMM's input as kept for the backward (fp8: its cast).
      main_grad_bytes: the gradients as Megatron-LM's mixed precision keeps and reduces them, the large-model
        family's default (bf16 and fp8 in an fp32 ``main_grad``: ``accumulate_allreduce_grads_in_fp32`` is on
        for bf16 unless --grad-reduce-in-bf16, megatron/training/arguments.py; fp16's stay 2 bytes);
        ``--grad-bytes`` overrides it.
    """

    math: str
    param_bytes: float
    grad_bytes: float
    act_bytes: float
    gemm_input_bytes: float
    main_grad_bytes: float


PRECISIONS = {
    "fp32": Precision("fp32", 4.0, 4.0, 4.0, 4.0, 4.0),
    "amp": Precision("half", 4.0, 4.0, 2.0, 2.0, 4.0),
    "bf16": Precision("half", 2.0, 2.0, 2.0, 2.0, 4.0),
    "fp16": Precision("half", 2.0, 2.0, 2.0, 2.0, 2.0),
    "fp8": Precision("fp8", 2.0, 2.0, 2.0, 1.0, 4.0),
}
# The data-parallel family's transformer workloads (this module's compute model has no fp8 peak path).
WORKLOAD_PRECISIONS = ("fp32", "amp", "bf16", "fp16")
EFFICIENCY = 0.6
LAUNCH_S = 5e-6  # one kernel launch per tensor and pass
OPTIMIZER_BYTES = 32.0  # Adam with fp32 master weights: 16 bytes per parameter, read and written


@dataclasses.dataclass(frozen=True)
class Workload:
    """What one GPU computes per step: a transformer, a GPU, a precision ('' for the GPU's:
    :func:`default_precision`, set as the workload is made), a batch."""

    model: str
    gpu: str = "v100"
    precision: str = ""  # "": the GPU's (default_precision)
    batch: int = 8
    seq_len: int | None = None
    efficiency: float = EFFICIENCY

    def __post_init__(self) -> None:
        if self.precision == "":  # not given: what the GPU trains in, resolved once here
            object.__setattr__(self, "precision", default_precision(self.gpu))

    def check(self) -> "Workload":
        """This workload, checked (``InputError`` names the bad setting)."""
        if self.model not in TRANSFORMERS:
            raise InputError(f"{self.model!r}: unknown; known: {', '.join(TRANSFORMERS)}", param="model")
        if self.gpu not in GPUS:
            raise InputError(f"{self.gpu!r}: unknown; known: {', '.join(GPUS)}", param="gpu")
        if self.precision not in WORKLOAD_PRECISIONS:
            raise InputError(
                f"{self.precision!r}: unknown; known: {', '.join(WORKLOAD_PRECISIONS)}", param="precision"
            )
        refuse_on_volta(self.gpu, precision=self.precision)
        if not (isinstance(self.batch, int) and 1 <= self.batch <= 1_000_000):
            raise InputError(f"{self.batch}: must be an integer from 1 to 1000000", param="batch")
        if self.seq_len is not None and not (
            isinstance(self.seq_len, int) and 1 <= self.seq_len <= 1_000_000
        ):
            raise InputError(f"{self.seq_len}: must be an integer from 1 to 1000000", param="seq_len")
        self._check_sequence()
        if not (0 < self.efficiency <= 1):
            raise InputError(f"{self.efficiency}: must be in (0, 1]", param="efficiency")
        return self

    def _check_sequence(self) -> None:
        """Refuse a sequence the model cannot read (a hunt: GPT-2 at 4096 tokens was priced, past its 1024 learned
        positions; ViT-B/16 at 1024, where its 224-pixel image of 16-pixel patches is 197 tokens)."""
        arch = TRANSFORMERS[self.model]
        if self.seq_len is None:
            return
        if arch.family == "vit" and self.seq_len != arch.seq_len:
            raise InputError(
                f"{self.seq_len}: {self.model} reads {arch.seq_len} tokens a sample (a {arch.image}-pixel image in "
                f"{arch.patch}-pixel patches, and its class token); leave --seq-len out",
                param="seq_len",
            )
        if arch.positions and self.seq_len > arch.positions:
            raise InputError(
                f"{self.seq_len}: {self.model} has {arch.positions} learned positions (its position embeddings), "
                f"so at most {arch.positions} tokens a sample",
                param="seq_len",
            )

    @property
    def name(self) -> str:
        """The model dim's coordinate: ``gpt2-xl@h100-bf16-b8`` (``-s1024`` when the sequence is set)."""
        seq = f"-s{self.seq_len}" if self.seq_len else ""
        return f"{self.model}@{self.gpu}-{self.precision}-b{self.batch}{seq}"


def times(workload: Workload) -> tuple[list[Tensor], np.ndarray, np.ndarray, float, np.ndarray]:
    """(tensors, forward [L] s, backward [L] s, optimizer s, gradient bytes [L]) in parameter order."""
    w = workload.check()
    arch = TRANSFORMERS[w.model]
    seq = w.seq_len or arch.seq_len
    tensors = arch.tensors(seq)
    gpu = GPUS[w.gpu]
    precision = PRECISIONS[w.precision]
    grad_bytes, act_bytes = precision.grad_bytes, precision.act_bytes
    peak = (gpu.half if precision.math == "half" else gpu.fp32) * w.efficiency
    tokens = w.batch * seq
    flops = np.array([t.flops for t in tensors]) * tokens
    act = np.array([t.act for t in tensors]) * tokens * act_bytes
    weights = np.array([t.numel for t in tensors], np.float64)
    forward = flops / peak + (act + weights * act_bytes) / gpu.hbm + LAUNCH_S
    backward = 2 * forward
    optimizer = OPTIMIZER_BYTES * weights.sum() / gpu.hbm
    return tensors, forward, backward, optimizer, weights * grad_bytes


# How a transformer's profile's source begins (sweep.engine.workloads.is_transformer reads it).
TRANSFORMER_SOURCE = "netsweep compute model of "


def transformer_profile(workload: Workload) -> Profile:
    """The :class:`~sweep.model.profile.Profile` of a workload (tensors in backward order)."""

    tensors, forward, backward, optimizer, grad = times(workload)
    t1 = float(forward.sum() + backward.sum() + optimizer)
    w = workload
    if t1 > MAX_SECONDS:
        # Named by the setting that made it (a hunt: a profile's own "iteration time must be ..." line, no option)
        raise InputError(
            f"{w.batch}: {w.model} on a {w.gpu} in {w.precision} would take {t1:.0f} s a step at this batch, past the "
            f"{MAX_SECONDS:g} s a profile holds; give a smaller batch",
            param="batch",
        )
    unit = fsdp_units([t.name for t in tensors])
    gpu = GPUS[w.gpu]
    arch = TRANSFORMERS[w.model]
    return make_profile(
        w.name,
        [t.name for t in reversed(tensors)],
        grad[::-1],
        backward[::-1],
        t1,
        w.name,
        device=gpu.name,
        batch_size=w.batch,
        dtype=w.precision,
        source=f"{TRANSFORMER_SOURCE}{arch.source}, {w.precision}, batch {w.batch}, "
        f"sequence {w.seq_len or arch.seq_len}, efficiency {w.efficiency:g}",
        forward=forward[::-1],
        unit=unit[::-1],
        shape=[t.shape for t in reversed(tensors)],
    )


def fsdp_units(names: Sequence[str]) -> np.ndarray:
    """[L] FSDP unit per tensor (parameter order): one per transformer block (the first
    number in its name), and the root unit 0 for everything else (embeddings, final
    norm, head), as FSDP's transformer auto-wrap policy wraps them."""
    out = []
    for name in names:
        match = re.search(r"\.(?:h|layer|layers|encoder_layer_)\.?(\d+)\.", name) or re.search(
            r"_(\d+)\.", name
        )
        out.append(int(match.group(1)) + 1 if match else 0)
    return np.array(out)


def host_system(domain, preset_gpus, nics, gpus, xp=np):  # noqa: ANN001, ANN201 (NumPy's or JAX's arrays)
    """The NVLink domain (GPUs) and NICs of a host of ``gpus`` GPUs where they are not given, from its GPU
    preset's system: ``domain`` GPUs an NVLink domain, ``preset_gpus`` GPUs and ``nics`` NICs a host.

        domain' = min(domain, gpus)   where domain <= preset_gpus (the host's NVSwitch: NVLink ends at the board)
                = domain              else (a rack's NVLink domain, NVL72, spans hosts of any size)
        nics'   = max(ceil(nics gpus / preset_gpus), 1)   (the preset's NICs a GPU, a whole NIC a host at least)

    so ``--gpus-per-node 4`` on an H100 is a host of 4 GPUs in one NVLink domain with 4 NICs, not half of a
    DGX H100's 8-GPU domain and all of its 8 NICs. Elementwise on broadcastable arrays of ``xp`` (NumPy, or
    ``jax.numpy`` in the kernel's inputs: :func:`sweep.engine.compiled.layout_inputs`)."""
    own = xp.where(domain <= preset_gpus, xp.minimum(domain, gpus), domain)
    return own, xp.maximum(xp.ceil(nics * gpus / preset_gpus), 1.0)


def system_settings(gpu: str, gpus_per_node: float = 0) -> dict[str, float]:
    """A GPU preset's system as a large model's options take it (the value a layout cube's 0, "the GPU's
    system", stands for): GPUs per host and per NVLink domain, NVLink GB/s a GPU, NICs per host and Gbit/s each;
    ``gpus_per_node`` (0: the preset's): a host of that many GPUs, its NVLink domain and NICs by
    :func:`host_system`."""
    g = GPUS[gpu]
    gpus = float(gpus_per_node) if gpus_per_node > 0 else float(g.gpus_per_node)
    domain, nics = host_system(float(g.domain), float(g.gpus_per_node), float(g.nics), gpus)
    return {
        "gpus_per_node": gpus,
        "nvlink_domain": float(domain),
        "nvlink_bw": g.nvlink / 1e9,
        "nics_per_node": float(nics),
        "bandwidth": g.nic_gbps,
    }


# Volta's tensor cores multiply fp16, not bf16 (bf16 came with Ampere: NVIDIA A100 Tensor Core GPU
# Architecture whitepaper, 2020), and FlashAttention runs on Turing and newer (FlashAttention-2: Ampere and
# newer; Dao, "FlashAttention-2", ICLR 2024): neither runs on a V100.
NO_BF16_OR_FLASH = ("v100",)
VOLTA_PRECISION = "fp16"  # the default precision there (default_precision)


def volta(gpu: str) -> bool:
    """Whether ``gpu``'s chip is Volta's (:data:`NO_BF16_OR_FLASH`): no bf16 tensor cores, no flash attention."""
    return die(gpu) in NO_BF16_OR_FLASH


def default_precision(gpu: str) -> str:
    """The precision a transformer on ``gpu`` is priced in where none is given, in both families and every
    command: bf16, as today's stacks train (Megatron-LM, NeMo, torchtitan), but fp16 on a Volta GPU, which has no
    bf16 tensor cores (:func:`volta`; its mixed precision's half type). An unknown GPU gets bf16, refused later
    by name."""
    return VOLTA_PRECISION if gpu in GPUS and volta(gpu) else DEFAULT_PRECISION


def refuse_on_volta(
    gpu: str,
    *,
    precision: str = "",
    attention: str = "",
    whose: str = "",
    advice: str = "; give --attention unfused",
) -> None:
    """Refuse bf16 (``precision``) or flash attention (``attention``) on a Volta ``gpu``, the one rule of both
    families and of a runs file; ``whose``: where the value came from where the user did not type it (" (the
    default ...)", " (stack S's)"), said after it; ``advice``: what to do about flash (a runs file's is its
    column's, in ``whose``)."""
    if not volta(gpu):
        return
    if precision == "bf16":
        raise InputError(
            f"bf16{whose}: the {gpu} has no bf16 tensor cores (Volta's take fp16)", param="precision"
        )
    if attention == "flash":
        raise InputError(
            f"flash{whose}: the {gpu} cannot run FlashAttention (Turing and newer; FlashAttention-2 Ampere){advice}",
            param="attention",
        )


def die(gpu: str) -> str:
    """The GPU preset whose chip ``gpu`` is (its ``die``, or itself): the one whose fitted matrix efficiency it
    shares."""
    return GPUS[gpu].die or gpu


# The chips of CUDA's device names (torch.cuda.get_device_name: "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB",
# "NVIDIA A100-SXM4-40GB"): the presets named by one word; and the words that name a preset's smaller sibling.
CHIP_WORDS = tuple(key for key in GPUS if "-" not in key)
SIBLINGS = {
    "v100": (("16gb",), "v100-16"),
    "a100": (("40gb",), "a100-40"),
    "h100": (("hbm2e", "96gb"), "h100-hbm2e"),
}
NOT_THE_PRESETS = ("pcie", "nvl")  # the PCIe cards: other clocks and links than any preset's


def name_words(device: str) -> list[str]:
    """A device's name as its lower-case words (``NVIDIA H100-PCIe (80GB)``: nvidia, h100, pcie, 80gb)."""
    return re.split(r"[\s\-_/,()]+", device.strip().lower())


def gpu_named(device: str, any_card: bool = False) -> str | None:
    """The GPU preset (a key of :data:`GPUS`) a device name stands for: a preset's key or name, any case, or the
    name CUDA reports for one of their chips (what ``profile measure`` records); None for another device (a PCIe
    card, an unknown one). A whole word names the chip, so ``gb200`` is never the ``b200``. ``any_card``: a PCIe
    card of a preset's chip takes that preset too (what depends on the chip alone: the codecs' throughput)."""
    text = device.strip().lower()
    for key, gpu in GPUS.items():
        if text in (key, gpu.name.lower()):
            return key
    words = name_words(text)
    chip = next((w for w in words if w in CHIP_WORDS), None)
    if chip is None or (not any_card and any(w in NOT_THE_PRESETS for w in words)):
        return None
    marks, sibling = SIBLINGS.get(chip, ((), chip))
    return sibling if any(w in marks for w in words) else chip


# How far a memory size a device's name states (``80GB``) may be from its preset's, as a share of the stated: a
# preset's is in GiB or in GB as its sources give it (an H100's 80 GB is 79.6 GiB; a B300's 288 GB nominal is
# 270 GB in its preset, 6.3% off); Leonardo's A100-SXM-64GB is 20% from the A100's 80, an H100 of 94 GB 9% from
# the H100's 85.5 GB.
NAMED_MEMORY_TOLERANCE = 0.07


def named_memory_differs(device: str, key: str) -> bool:
    """Whether ``device``'s name states a memory size (``NVIDIA A100-SXM-64GB``: 64) other than preset ``key``'s
    (within :data:`NAMED_MEMORY_TOLERANCE`, in GB or GiB): another card of the preset's chip, whose layouts the
    preset's memory would not fit (a hunt: a fabric fitted on 64 GB A100s planned a layout using 66 GB)."""
    stated = stated_gb(device)
    if stated is None:
        return False
    memory = GPUS[key].memory
    return min(abs(stated - memory / 2**30), abs(stated - memory / 1e9)) > NAMED_MEMORY_TOLERANCE * stated


def stated_gb(device: str) -> float | None:
    """The memory size ``device``'s name states, in GB (``NVIDIA A100-SXM-64GB``: 64), or None."""
    stated = [float(w[:-2]) for w in name_words(device) if re.fullmatch(r"\d+(\.\d+)?gb", w)]
    return stated[0] if stated else None


# A NIC's rate at most (Gbit/s): twice the fastest NIC of any system here (ConnectX-8's 800 Gbit/s, the GB300 and
# B300 presets'), for the generation after it. A host's total given as --bw (8 x 400 = 3200) gave a fit all the
# same (on two hosts of eight NICs the busbw does not depend on it) and a fabric file that priced every later plan
# at eight times its NICs (a hunt); a runs file's nic_gbps of 3200 was read as one NIC's too (a hunt).
FASTEST_NIC_GBPS = max(g.nic_gbps for g in GPUS.values())
MAX_NIC_GBPS = 2 * FASTEST_NIC_GBPS
