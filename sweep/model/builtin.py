"""Built-in profiles: ResNet-50, ResNet-101, VGG-16-BN on one V100, batch 32, fp32.

Tensors and sizes come from :mod:`sweep.model.architectures`. Backward waits come from a
FLOP/byte cost model of each layer's backward pass on a V100:

    t_layer = flops / V100_PEAK_FP32_FLOPS + bytes / V100_HBM_BYTES_PER_S + KERNELS * LAYER_KERNEL_LAUNCH_S

with flops = 2 * macs * (2, or 1 for the first conv) * batch, bytes = the layer's
activation traffic (``ACT_PASSES`` passes over its output activation: read the
output gradient, read the saved input, write the input gradient; batch norm adds
the fused ReLU's passes) plus reading the weight and writing its gradient. The
whole profile is then scaled by one factor per model so that the backward total
equals the measured total (Zhang et al. 2020, measured with PyTorch on one V100,
see the README); the measured single-GPU iteration times are used as T1. Each
layer's time is the wait of its first tensor in backward order; the layer's other
tensors are ready with it (wait 0).
"""

import math

import numpy as np

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.architectures import ARCHITECTURES, Layer
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS, WORKLOAD_PRECISIONS
from netsweep_jax.sweep.model.fabrics import FABRICS
from netsweep_jax.sweep.model.llms import LLMS
from netsweep_jax.sweep.model.profile import Profile, make_profile
from netsweep_jax.sweep.model.transformers import TRANSFORMERS

V100_PEAK_FP32_FLOPS = 15.7e12  # V100 SXM2
V100_HBM_BYTES_PER_S = 900e9  # peak
LAYER_KERNEL_LAUNCH_S = 5e-6
BATCH = 32
ACT_PASSES = {"conv": 3.0, "bn": 5.0, "linear": 3.0}
KERNELS = {"conv": 2, "bn": 2, "linear": 2}

# Measured on one V100, batch 32, fp32 (Zhang et al. 2020): backward total (s) and
# single-GPU iteration time T1 (s), the values the paper's simulator uses.
MEASURED = {
    "resnet50": (64.81e-3, 0.12808580219559176),
    "resnet101": (106.41e-3, 0.19200599479476405),
    "vgg16": (111.62e-3, 0.19452352295080985),
}
DESCRIPTION = {
    "resnet50": "torchvision resnet50",
    "resnet101": "torchvision resnet101",
    "vgg16": "torchvision vgg16_bn",
}


def layer_seconds(layer: Layer, batch: int = BATCH) -> float:
    """Unscaled backward seconds of one :class:`~sweep.model.architectures.Layer`."""
    flops = 2.0 * layer.macs * (1.0 if layer.first else 2.0) * batch
    weight_bytes = 4.0 * sum(math.prod(shape) for _, shape in layer.params)
    traffic = ACT_PASSES[layer.kind] * layer.act_bytes * batch + 2.0 * weight_bytes
    return (
        flops / V100_PEAK_FP32_FLOPS
        + traffic / V100_HBM_BYTES_PER_S
        + KERNELS[layer.kind] * LAYER_KERNEL_LAUNCH_S
    )


def builtin_names() -> tuple[str, ...]:
    """The names of the built-in CNN profiles (``resnet50``, ``resnet101``, ``vgg16``): each a
    :func:`builtin_profile`. The transformers are built by :func:`netsweep_jax.sweep.evaluate` from
    their architecture and a GPU preset (``sweep models`` lists them)."""
    return tuple(ARCHITECTURES)


def refuse_large_model(name: str, takes: str = "", param: str = "model") -> None:
    """Refuse a large model's name where a data-parallel model is asked for (the Python API's evaluate: the CLI
    routes a large model to its own family; :func:`builtin_profile`), pointing to the functions that price it
    and saying what this ``takes`` (default: every data-parallel model)."""
    if name.strip().lower() in LLMS:
        takes = takes or f"takes the data-parallel models: {', '.join((*ARCHITECTURES, *TRANSFORMERS))}"
        raise InputError(
            f"{name!r}: a large model, which sweep.evaluate_layouts and sweep.plan price; this {takes}",
            param=param,
        )


def builtin_profile(name: str) -> Profile:
    """The built-in profile called ``name``: the paper's CNN runs on one V100, batch 32, fp32.

    Args:
      name: one of :func:`builtin_names`.

    Returns:
      The :class:`~netsweep_jax.sweep.model.profile.Profile` (gradient bytes per tensor, backward
      waits in seconds, T1 in seconds), the same on every call.
    """
    known = ", ".join(ARCHITECTURES)
    if not isinstance(name, str):
        raise InputError(f"{name!r}: expected a built-in name; known: {known}", param="name")
    name = name.strip().lower()  # any case, as evaluate takes a model's name
    refuse_large_model(name, f"gives the paper's CNN profiles: {known}", "name")
    if name in TRANSFORMERS:  # built from an architecture and a GPU preset, never a profile of its own
        raise InputError(
            f"{name!r}: a transformer, whose profile sweep.evaluate builds from its architecture and a GPU preset "
            f"(sweep.evaluate({name!r}, gpu='h100', ...)); this gives the paper's CNN profiles: {known}",
            param="name",
        )
    if name not in ARCHITECTURES:
        raise InputError(f"{name!r}: unknown; known: {known}", param="name")
    layers = ARCHITECTURES[name]()
    names, sizes, waits, shapes = [], [], [], []
    for layer in reversed(layers):
        t = layer_seconds(layer)
        for j, (pname, shape) in enumerate(reversed(layer.params)):
            names.append(pname)
            sizes.append(4.0 * math.prod(shape))
            waits.append(t if j == 0 else 0.0)
            shapes.append(shape)
    wait = np.array(waits)
    total, t1 = MEASURED[name]
    wait *= total / wait.sum()
    return make_profile(
        name,
        names,
        sizes,
        wait,
        t1,
        name,
        device="V100",
        batch_size=BATCH,
        dtype="float32",
        shape=shapes,
        source=f"netsweep cost model of {DESCRIPTION[name]}, calibrated to measured backward total",
    )


def models_table() -> str:
    """The built-in profiles, transformer families and GPU presets as text (``sweep models``)."""
    lines = [
        "The paper's CNNs (modelled per tensor, their totals calibrated to the paper's measured V100 runs; "
        "--iteration-time scales them to other hardware):",
        f"  {'model':<11} {'tensors':>7} {'grad bytes':>14} {'backward ms':>11} {'T1 s':>8}  device batch",
    ]
    for name in builtin_names():
        p = builtin_profile(name)
        lines.append(
            f"  {name:<11} {len(p.names):>7} {int(p.total_bytes):>14,} {p.backward_time * 1e3:>11.2f} "
            f"{p.t1:>8.4f}  {p.device} {p.batch_size} ({p.source})"
        )
    lines += [
        "",
        "Transformers (profiles from the architecture and a compute model; set --gpu, --precision, "
        "--batch, --seq-len):",
        f"  {'model':<11} {'family':<6} {'tensors':>7} {'parameters':>14} "
        f"{'layers':>6} {'hidden':>6} {'context':>7}  mirrors",
    ]
    for name, arch in TRANSFORMERS.items():
        tensors = arch.tensors()
        lines.append(
            f"  {name:<11} {arch.family:<6} {len(tensors):>7} {sum(t.numel for t in tensors):>14,} "
            f"{arch.layers:>6} {arch.hidden:>6} {arch.seq_len:>7}  {arch.source}"
        )
    lines += [
        "",
        "Large models (sweep plan, sweep grid and sweep need with --tp, --pp, ...; or any shape with --arch):",
    ]
    for name, llm in LLMS.items():
        lines.append(f"  {name:<16} {llm.describe()}")
    lines += [
        "",
        "GPU presets (--gpu): matrix-product peaks and memory bandwidth (the data-parallel transformers achieve "
        f"{EFFICIENCY:g} of the peak on the products; large models, their stack's fitted efficiency, which their "
        "assumed: line says); memory, and the system large-model sweeps assume:",
    ]
    wide = max(len(key) for key in GPUS)  # the names aligned, the longest's too (a hunt: h100-hbm2e's)
    for key, g in GPUS.items():
        fp8 = f", fp8 {g.fp8 / 1e12:4.0f}" if g.fp8 else ""
        lines.append(
            f"  {key:<{wide}} fp32 {g.fp32 / 1e12:4.1f}, half {g.half / 1e12:4.0f}{fp8} TFLOP/s, HBM "
            f"{g.hbm / 1e9:4.0f} GB/s, {g.memory / 2**20:6.0f} MiB; {g.system}: {g.domain} GPUs on "
            f"{g.nvlink / 1e9:3.0f} GB/s NVLink, {g.nics} x {g.nic_gbps:g} Gbit/s NICs per "
            f"{g.gpus_per_node} GPUs"
        )
    # the fabric presets too (a hunt: only --help and the docs named them)
    lines += ["", "Fabric presets (--fabric; NCCL's pricing, its constants fitted on nccl-tests):"]
    lines += [f"  {p.describe()}" for p in FABRICS.values()]
    lines += [
        "",
        "Precisions (--precision): " + ", ".join(WORKLOAD_PRECISIONS) + " (amp: half-precision math, fp32 "
        "gradients, as PyTorch autocast; bf16/fp16: the model in that type, 2-byte gradients; not given: bf16, "
        "fp16 on a V100)",
        "--batch: samples per GPU per step; --seq-len: tokens per sample (default: the model's context).",
    ]
    return "\n".join(lines)
