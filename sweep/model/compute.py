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

Precisions (``PRECISIONS``): what the math runs in and what the gradients are:

- ``fp32``: fp32 math, 4-byte gradients.
- ``amp``: PyTorch automatic mixed precision (fp16/bf16 autocast): half-precision
  matrix products, but parameters and their ``.grad`` stay fp32, so DDP all-reduces
  4-byte gradients.
- ``bf16`` / ``fp16``: the model itself in that type (``model.to(torch.bfloat16)``):
  half-precision math and 2-byte gradients.

GPU presets (dense peaks from NVIDIA's datasheets: "NVIDIA Tesla V100 GPU
Architecture" whitepaper, 2017; "NVIDIA A100 Tensor Core GPU" datasheet, SXM4 80 GB;
"NVIDIA H100 Tensor Core GPU" datasheet, SXM5; "NVIDIA H200 Tensor Core GPU"
datasheet): fp32 FLOP/s, half-precision tensor-core FLOP/s (without sparsity), and
HBM bandwidth.

Check against published single-GPU throughput: BERT-base, fp32, batch 32, sequence
128 on a V100 trains at 107-145 sequences/s across frameworks (OneFlow DLPerf report
v1.0, BERT-base fp32 tables); this model gives the value tested in
``tests/test_transformers.py`` (within 20% of that range's middle). BERT-large in mixed
precision on one A100 80GB, batch 256, sequence 128, trains at 694 sequences/s (NVIDIA
DeepLearningExamples, PaddlePaddle/LanguageModeling/BERT/README.md, pre-training table
for DGX A100); this model gives 657 (-5%). No comparable single-GPU H100 figure was found.
"""

import dataclasses

import numpy as np

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.transformers import TRANSFORMERS


@dataclasses.dataclass(frozen=True)
class GPU:
    """A GPU preset: matrix-product peaks (FLOP/s) by math precision, and HBM bandwidth (bytes/s)."""

    name: str
    fp32: float
    half: float
    hbm: float


GPUS = {
    "v100": GPU("NVIDIA V100 SXM2", 15.7e12, 125e12, 900e9),
    "a100": GPU("NVIDIA A100 SXM4 80GB", 19.5e12, 312e12, 2039e9),
    "h100": GPU("NVIDIA H100 SXM5", 67e12, 989e12, 3350e9),
    "h200": GPU("NVIDIA H200 SXM", 67e12, 989e12, 4800e9),
}

# precision -> (math runs at half precision, gradient bytes, activation bytes)
PRECISIONS = {"fp32": (False, 4, 4), "amp": (True, 4, 2), "bf16": (True, 2, 2), "fp16": (True, 2, 2)}
EFFICIENCY = 0.6
LAUNCH_S = 5e-6  # one kernel launch per tensor and pass
OPTIMIZER_BYTES = 32.0  # Adam with fp32 master weights: 16 bytes per parameter, read and written


@dataclasses.dataclass(frozen=True)
class Workload:
    """What one GPU computes per step: a transformer, a GPU, a precision, a batch."""

    model: str
    gpu: str = "v100"
    precision: str = "fp32"
    batch: int = 8
    seq_len: int | None = None
    efficiency: float = EFFICIENCY

    def check(self):
        if self.model not in TRANSFORMERS:
            raise InputError(f"{self.model!r}: unknown; known: {', '.join(TRANSFORMERS)}", param="model")
        if self.gpu not in GPUS:
            raise InputError(f"{self.gpu!r}: unknown; known: {', '.join(GPUS)}", param="gpu")
        if self.precision not in PRECISIONS:
            raise InputError(f"{self.precision!r}: unknown; known: {', '.join(PRECISIONS)}", param="precision")
        if not (isinstance(self.batch, int) and 1 <= self.batch <= 1_000_000):
            raise InputError(f"{self.batch}: must be an integer from 1 to 1000000", param="batch")
        if self.seq_len is not None and not (isinstance(self.seq_len, int) and 1 <= self.seq_len <= 1_000_000):
            raise InputError(f"{self.seq_len}: must be an integer from 1 to 1000000", param="seq_len")
        if not (0 < self.efficiency <= 1):
            raise InputError(f"{self.efficiency}: must be in (0, 1]", param="efficiency")
        return self

    @property
    def name(self):
        """The model dim's coordinate: ``gpt2-xl@h100-bf16-b8`` (``-s1024`` when the sequence is set)."""
        seq = f"-s{self.seq_len}" if self.seq_len else ""
        return f"{self.model}@{self.gpu}-{self.precision}-b{self.batch}{seq}"


def times(workload):
    """(tensors, forward [L] s, backward [L] s, optimizer s, gradient bytes [L]) in parameter order."""
    w = workload.check()
    arch = TRANSFORMERS[w.model]
    seq = w.seq_len or arch.seq_len
    tensors = arch.tensors(seq)
    gpu = GPUS[w.gpu]
    half, grad_bytes, act_bytes = PRECISIONS[w.precision]
    peak = (gpu.half if half else gpu.fp32) * w.efficiency
    tokens = w.batch * seq
    flops = np.array([t.flops for t in tensors]) * tokens
    act = np.array([t.act for t in tensors]) * tokens * act_bytes
    weights = np.array([t.numel for t in tensors], np.float64)
    forward = flops / peak + (act + weights * act_bytes) / gpu.hbm + LAUNCH_S
    backward = 2 * forward
    optimizer = OPTIMIZER_BYTES * weights.sum() / gpu.hbm
    return tensors, forward, backward, optimizer, weights * grad_bytes


def transformer_profile(workload):
    """The :class:`~sweep.model.profile.Profile` of a workload (tensors in backward order)."""
    from netsweep_jax.sweep.model.profile import make_profile

    tensors, forward, backward, optimizer, grad = times(workload)
    t1 = float(forward.sum() + backward.sum() + optimizer)
    unit = fsdp_units([t.name for t in tensors])
    w = workload
    gpu = GPUS[w.gpu]
    arch = TRANSFORMERS[w.model]
    return make_profile(
        w.name, [t.name for t in reversed(tensors)], grad[::-1], backward[::-1], t1, w.name,
        device=gpu.name, batch_size=w.batch, dtype=w.precision,
        source=f"netsweep compute model of {arch.source}, {w.precision}, batch {w.batch}, "
               f"sequence {w.seq_len or arch.seq_len}, efficiency {w.efficiency:g}",
        forward=forward[::-1], unit=unit[::-1], shape=[t.shape for t in reversed(tensors)],
    )


def fsdp_units(names):
    """[L] FSDP unit per tensor (parameter order): one per transformer block (the first
    number in its name), and the root unit 0 for everything else (embeddings, final
    norm, head), as FSDP's transformer auto-wrap policy wraps them."""
    import re

    out = []
    for name in names:
        match = re.search(r"\.(?:h|layer|layers|encoder_layer_)\.?(\d+)\.", name) or re.search(r"_(\d+)\.", name)
        out.append(int(match.group(1)) + 1 if match else 0)
    return np.array(out)
