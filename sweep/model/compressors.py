"""Gradient compressors: bytes on the wire, codec time and communication pattern, per bucket, on the host.

``--ratio`` stays the paper's ideal compressor (it divides the bytes on the wire and
costs nothing). A :class:`Compressor` is a real one. For a tensor of n elements of
e bytes (k = max(1, ceil(D n)) kept elements at density D; a matrix-shaped tensor
reshaped to r x c = shape[0] x the rest, at rank R' = min(R, r, c)):

============  ==========================  =======  ======================================================
method        payload (bytes sent)        pattern  who uses it
============  ==========================  =======  ======================================================
none          n e                         reduce
fp16          2 n (n e when e <= 2)       reduce   a cast; nothing to do for 2-byte gradients
int8          n                           reduce   one scale per bucket, all-reduced first (a 2nd round)
topk:D        k (e + 4)                   gather   values + int32 indices, error feedback
randomk:D     k e                         reduce   indices from a seed all workers share; error feedback
signsgd       ceil(n / 8) + 4             gather   1 bit per element and an fp32 scale; error feedback
powersgd:R    (r + c) R' e, else n e      reduce   P then Q all-reduced (2 rounds); vectors, and matrices
                                                   with r c < 2 (r + c) R', are sent uncompressed
============  ==========================  =======  ======================================================

top-k and sign payloads cannot be summed inside an all-reduce, so they are
all-gathered and every worker decodes all N of them (Agarwal et al., "On the
Utility of Gradient Compression in Distributed Training Systems", MLSys 2022,
section 3; GRACE, Xu et al., ICDCS 2021, implements them with allgather). PowerSGD
follows PyTorch's reference ``powerSGD_hook``
(torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py: tensors of one
dimension, and matrices that would not shrink by ``min_compression_rate`` = 2, are
all-reduced uncompressed; P = M Q is all-reduced, orthogonalized, Q = M^T P is
all-reduced, M is rebuilt as P Q^T, and the error is fed back).

Codec time, from a throughput model of the GPU (:class:`CodecCost`): a memory pass
over b bytes costs m(b) = launch + b / (hbm * memory_efficiency), and a matrix
product of f FLOPs over b bytes mm(f, b) = launch + max(f / (peak * matmul_efficiency),
b / (hbm * memory_efficiency)) (a roofline). Error feedback (EF) adds the residual and
keeps the new one: m(3 n e) + m(3 n e).

============  ==============================================  =========================================  ==================
method        encode (compute stream, before the send)        decode (once, ends the communication)      unpack (per payload)
============  ==============================================  =========================================  ==================
fp16          m(n e + 2 n)                                    m(2 n + n e)                               0
int8          m(n e) + m(n e + n)                             m(n + n e)                                 0
topk:D        EF + launch + passes n e / (hbm me) + m(k(e+4))  m(n e)  (zero the sum)                      m(k (2 e + 4))
randomk:D     EF + m(2 k e)                                   m(n e) + m(2 k e)                          0
signsgd       EF + m(n e) + m(n e + n / 8)                    m(n e)                                     m(n / 8 + 2 n e)
powersgd:R    m(3 n e) + mm(2 r c R', n e)                    orth + 2 mm(2 r c R', n e) + m(3 n e)      0
============  ==============================================  =========================================  ==================

with orth = 3 R' launch + 2 r R'^2 e / (hbm me) (Gram-Schmidt), and ``passes`` the
memory passes of a GPU top-k selection: 4.8, from PyTorch issue #167462 (torch
2.4.1 on an NVIDIA L20: ``topk(k=1000)`` over 128 x 8,000,000 fp16 values, 2.05 GB,
in 11.30 ms, where one pass at the L20's 864 GB/s datasheet bandwidth takes
2.37 ms). The GPU's ``hbm`` and matrix-product ``peak`` are its preset's
(:data:`sweep.model.compute.GPUS`, NVIDIA's datasheets; fp32 peak for 4-byte gradients,
half precision for 2-byte ones); ``memory_efficiency`` 0.8 (the fraction of peak a
streaming kernel reaches) and ``matmul_efficiency`` 0.6 (as :mod:`sweep.model.compute`)
are assumptions. ``--codec-cost FILE`` (JSON) overrides any of them.

A bucket's payload and times are the sums over its tensors (each tensor is
compressed on its own, as GRACE does).
"""

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.axes import show
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.textfile import read_json_file
from netsweep_jax.sweep.core.values import decimal, refuse_empty_item
from netsweep_jax.sweep.model.compute import GPUS, gpu_named
from netsweep_jax.sweep.model.profile import Profile

METHODS = ("none", "fp16", "int8", "topk", "randomk", "signsgd", "powersgd")
WITH_DENSITY = ("topk", "randomk")
WITH_RANK = ("powersgd",)
GATHER = ("topk", "signsgd")  # payloads that cannot be summed: all-gathered
MIN_COMPRESSION_RATE = 2.0  # PyTorch powerSGD_hook's default
INDEX_BYTES = 4  # int32 indices
MAX_RANK = 1_000_000


@dataclasses.dataclass(frozen=True)
class Compressor:
    """One compressor: ``method``, and its density (top-k, random-k) or rank (PowerSGD)."""

    method: str
    density: float = 1.0
    rank: int = 0

    @property
    def name(self) -> str:
        """The coordinate on the cube's ``compressor`` dim: ``topk:0.01``, ``powersgd:4``, ``int8``."""
        if self.method in WITH_DENSITY:
            return f"{self.method}:{show(self.density)}"
        if self.method in WITH_RANK:
            return f"{self.method}:{self.rank}"
        return self.method

    @property
    def gather(self) -> bool:
        """Whether its payloads cannot be added: all-gathered instead of all-reduced."""
        return self.method in GATHER

    @property
    def rounds(self) -> float:
        """Collectives per bucket: PowerSGD's P and Q; int8's scale, then the data."""
        return 2.0 if self.method in ("powersgd", "int8") else 1.0


NONE = Compressor("none")


def parse_compressor(text: object) -> Compressor:
    """``topk:0.01`` -> :class:`Compressor`; errors name the value and the rule."""
    raw = str(text).strip()
    method, _, arg = raw.partition(":")
    method = method.strip().lower()
    if method not in METHODS:
        raise InputError(
            f"{raw!r}: unknown compressor; known: none, fp16, int8, topk:D, randomk:D, signsgd, powersgd:R",
            param="compressor",
        )
    if method in WITH_DENSITY:
        try:
            density = decimal(arg)
        except ValueError:
            density = float("nan")
        if not (math.isfinite(density) and 0 < density <= 1):
            raise InputError(
                f"{raw!r}: {method} needs a density D in (0, 1], as {method}:0.01", param="compressor"
            )
        return Compressor(method, density=density)
    if method in WITH_RANK:
        try:
            rank = decimal(arg)
        except ValueError:
            rank = float("nan")
        if not (math.isfinite(rank) and rank.is_integer() and 1 <= rank <= MAX_RANK):
            raise InputError(
                f"{raw!r}: powersgd needs an integer rank R >= 1, as powersgd:4", param="compressor"
            )
        return Compressor(method, rank=int(rank))
    if arg:
        raise InputError(f"{raw!r}: {method} takes no argument", param="compressor")
    return Compressor(method)


def parse_compressors(value: str | Sequence[str | Compressor]) -> tuple[Compressor, ...]:
    """A comma list or a sequence of specs (or :class:`Compressor`) -> tuple, repeats refused."""
    if (
        not isinstance(value, (str, Sequence))
        or not isinstance(value, str)
        and not all(isinstance(v, (str, Compressor)) for v in value)
    ):
        raise InputError(
            f"{value!r}: expected a compressor spec, a comma list or a list of them", param="compressor"
        )
    items = value.split(",") if isinstance(value, str) else list(value)
    if len(items) > 1:  # 'int8,,fp16' said "'': unknown compressor" (a review), as names are said
        refuse_empty_item(items, value, "compressor")
    out = tuple(v if isinstance(v, Compressor) else parse_compressor(v) for v in items)
    names = [c.name for c in out]
    if not out:
        raise InputError("[]: give at least one compressor (none for no compression)", param="compressor")
    if len(set(names)) != len(names):
        raise InputError(f"{','.join(names)}: a compressor repeats", param="compressor")
    return out


def parse_factors(
    value: str | Mapping[str | Compressor, float | str] | None, compressors: Sequence[Compressor]
) -> dict[str, float]:
    """``--iterations-factor topk:0.01=1.3,powersgd:4=1.1`` -> {compressor name: factor} (default 1)."""
    factors = {c.name: 1.0 for c in compressors}
    if value is None or (isinstance(value, Mapping) and not value):
        return factors
    if isinstance(value, str) and not value.strip():  # empty is a value to refuse, never "the default"
        raise InputError("'': give COMPRESSOR=FACTOR, e.g. topk:0.01=1.3", param="iterations_factor")
    if not isinstance(value, (str, Mapping)):
        raise InputError(
            f"{value!r}: expected text like topk:0.01=1.3,powersgd:4=1.1 or a dict", param="iterations_factor"
        )
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",")]
        for item in items:
            if "=" not in item or not item.rpartition("=")[0].strip():
                raise InputError(
                    f"{item!r}: expected COMPRESSOR=FACTOR, e.g. topk:0.01=1.3", param="iterations_factor"
                )
        pairs: Any = [item.rpartition("=")[::2] for item in items]
    else:
        pairs = list(value.items())
    seen: set[str] = set()
    for spec, number in pairs:
        if not isinstance(spec, (str, Compressor)):
            raise InputError(f"{spec!r}: expected a compressor name", param="iterations_factor")
        try:
            name = parse_compressor(spec).name if not isinstance(spec, Compressor) else spec.name
        except InputError as e:
            raise InputError(
                f"{spec}={number}: {e.args[0].split(': ', 1)[-1]}", param="iterations_factor"
            ) from None
        if name in seen:
            raise InputError(f"{spec}={number}: {name} is given twice", param="iterations_factor")
        seen.add(name)
        try:
            factor = (
                float("nan")
                if isinstance(number, bool)
                else decimal(number)
                if isinstance(number, str)
                else float(number)
            )
        except (TypeError, ValueError):
            factor = float("nan")
        if name not in factors:
            raise InputError(
                f"{spec}: not among the swept compressors ({', '.join(factors)})", param="iterations_factor"
            )
        if name == NONE.name:  # the baseline every factor is relative to (grid scaled it; compare ignored it)
            raise InputError(
                f"{spec}={number}: none is the baseline, 1 by definition; give a compressor's factor relative "
                "to it (as topk:0.01=1.3)",
                param="iterations_factor",
            )
        if not (math.isfinite(factor) and 0.01 <= factor <= 100):
            raise InputError(
                f"{spec}={number}: the iterations factor must be a number from 0.01 to 100 "
                f"(as topk:0.01=1.3)",
                param="iterations_factor",
            )
        factors[name] = factor
    return factors


@dataclasses.dataclass(frozen=True)
class CodecCost:
    """The GPU throughput model of encoding and decoding (see the module docstring).

    Attributes:
      hbm: peak memory bandwidth (bytes/s).
      peak: peak matrix-product FLOP/s in the gradient's precision.
      memory_efficiency: achieved fraction of ``hbm`` (1).
      matmul_efficiency: achieved fraction of ``peak`` (1).
      launch: seconds per kernel launch.
      topk_passes: memory passes of a top-k selection.
      source: where the numbers came from (text).
    """

    hbm: float
    peak: float
    memory_efficiency: float = 0.8
    matmul_efficiency: float = 0.6
    launch: float = 5e-6
    topk_passes: float = 4.8
    source: str = ""

    def memory(self, nbytes: np.ndarray, launches: float = 1.0) -> np.ndarray:
        """m(b): seconds of ``launches`` kernels streaming ``nbytes`` bytes."""
        return launches * self.launch + nbytes / (self.hbm * self.memory_efficiency)

    def matmul(self, flops: np.ndarray | float, nbytes: np.ndarray | float) -> np.ndarray:
        """mm(f, b): seconds of one matrix product (roofline)."""
        return self.launch + np.maximum(
            flops / (self.peak * self.matmul_efficiency), nbytes / (self.hbm * self.memory_efficiency)
        )


OVERRIDES = {  # --codec-cost keys -> CodecCost fields, with their rule
    "hbm_bytes_per_s": ("hbm", 1e6, 1e15),
    "matmul_flops_per_s": ("peak", 1e6, 1e18),
    "memory_efficiency": ("memory_efficiency", 1e-3, 1.0),
    "matmul_efficiency": ("matmul_efficiency", 1e-3, 1.0),
    "launch_s": ("launch", 0.0, 1.0),
    "topk_passes": ("topk_passes", 1.0, 1e4),
}


def codec_overrides(value: str | Path | Mapping[str, object] | None) -> dict[str, float]:
    """``--codec-cost``: a JSON file, or a dict, of :data:`OVERRIDES` keys -> {CodecCost field: value}."""
    if value is None:
        return {}
    where, expected = "codec cost", 'an object like {"hbm_bytes_per_s": 2e12}'
    if isinstance(value, (str, Path)):
        where = str(value)
        value = read_json_file(value, "codec cost file", expected, param="codec_cost")
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected {expected}", param="codec_cost")
    out: dict[str, float] = {}
    for key, number in value.items():
        if key not in OVERRIDES:
            raise InputError(
                f"{where}: unknown key {key!r}; known: {', '.join(OVERRIDES)}", param="codec_cost"
            )
        field, low, high = OVERRIDES[key]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not low <= number <= high:
            raise InputError(
                f"{where}: {key} = {number!r} must be a number from {show(low)} to {show(high)}",
                param="codec_cost",
            )
        out[field] = float(number)
    return out


def codec_cost_for(profile: Profile, overrides: Mapping[str, float] | None = None) -> CodecCost:
    """The :class:`CodecCost` of the GPU a profile ran on (its ``device`` names a preset; else
    the V100 of the paper's runs), in the precision of its gradients, with ``overrides``."""
    gpu = GPUS[gpu_named(str(profile.device or ""), any_card=True) or "v100"]
    half = bool(np.all(profile.element_bytes <= 2))
    cost = CodecCost(gpu.hbm, gpu.half if half else gpu.fp32, source=f"{gpu.name} preset")
    if overrides:
        cost = dataclasses.replace(cost, **overrides, source=f"{cost.source}, overridden by --codec-cost")
    return cost


@dataclasses.dataclass(frozen=True)
class TensorCodec:
    """Per-tensor terms of one compressor on one profile, [L] float64 each (backward order).

    Attributes:
      payload: bytes each worker sends.
      encode: seconds on the compute stream before the send.
      decode: seconds once per bucket after the communication.
      unpack: seconds per received payload (all-gather compressors).
    """

    payload: np.ndarray
    encode: np.ndarray
    decode: np.ndarray
    unpack: np.ndarray


def tensor_codec(compressor: Compressor, profile: Profile, cost: CodecCost) -> TensorCodec:
    """:class:`TensorCodec` of ``compressor`` on ``profile`` (the module docstring's tables)."""
    e = profile.element_bytes
    n = profile.grad_bytes / e
    zero = np.zeros_like(n)
    m, method = cost.memory, compressor.method
    if method == "none" or (method == "fp16" and np.all(e <= 2)):
        return TensorCodec(profile.grad_bytes.copy(), zero, zero, zero)
    feedback = m(3 * n * e) + m(3 * n * e)
    if method == "fp16":
        cast = e > 2
        return TensorCodec(
            np.where(cast, 2 * n, n * e),
            np.where(cast, m(n * e + 2 * n), 0.0),
            np.where(cast, m(2 * n + n * e), 0.0),
            zero,
        )
    if method == "int8":
        return TensorCodec(n.copy(), m(n * e) + m(n * e + n), m(n + n * e), zero)
    if method == "signsgd":
        return TensorCodec(
            np.ceil(n / 8) + 4, feedback + m(n * e) + m(n * e + n / 8), m(n * e), m(n / 8 + 2 * n * e)
        )
    if method in WITH_DENSITY:
        k = np.maximum(1.0, np.ceil(compressor.density * n))
        if method == "topk":
            select = cost.launch + cost.topk_passes * n * e / (cost.hbm * cost.memory_efficiency)
            return TensorCodec(
                k * (e + INDEX_BYTES),
                feedback + select + m(k * (e + INDEX_BYTES)),
                m(n * e),
                m(k * (2 * e + INDEX_BYTES)),
            )
        return TensorCodec(k * e, feedback + m(2 * k * e), m(n * e) + m(2 * k * e), zero)
    return _powersgd(compressor.rank, profile, n, e, cost)


def _powersgd(rank, profile, n, e, cost):
    """PowerSGD's per-tensor terms (matrices worth compressing; the rest sent as they are)."""
    if profile.shape is None:
        raise InputError(
            f"powersgd: the profile {profile.model!r} has no tensor shapes, which powersgd needs "
            f"(a JSON profile with shape, a CSV with a shape column, or a built-in model)",
            param="compressor",
        )
    rows = np.array([s[0] for s in profile.shape], np.float64)
    cols = np.array([math.prod(s[1:]) for s in profile.shape], np.float64)
    r = np.minimum(rank, np.minimum(rows, cols))
    matrix = np.array([len(s) >= 2 for s in profile.shape])
    compress = matrix & (rows * cols >= MIN_COMPRESSION_RATE * (rows + cols) * r)
    m = cost.memory
    product = 2.0 * rows * cols * r  # FLOPs of M Q, M^T P or P Q^T
    orth = 3.0 * r * cost.launch + 2.0 * rows * r * r * e / (cost.hbm * cost.memory_efficiency)
    encode = m(3 * n * e) + cost.matmul(product, n * e)
    decode = orth + 2.0 * cost.matmul(product, n * e) + m(3 * n * e)
    zero = np.zeros_like(n)
    return TensorCodec(
        np.where(compress, (rows + cols) * r * e, n * e),
        np.where(compress, encode, 0.0),
        np.where(compress, decode, 0.0),
        zero,
    )


def bucket_codec(codec: TensorCodec, last_tensor: npt.ArrayLike) -> tuple[np.ndarray, ...]:
    """Per-bucket sums of a :class:`TensorCodec` for buckets ending at ``last_tensor`` [Bk] ->
    (payload, encode, decode, unpack), each [Bk] float64."""
    bounds = np.concatenate([[0], np.asarray(last_tensor) + 1])
    return tuple(
        np.add.reduceat(a, bounds[:-1]) if len(a) else a
        for a in (codec.payload, codec.encode, codec.decode, codec.unpack)
    )
