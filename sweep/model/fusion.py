"""Horovod-style tensor fusion: group gradients into buckets, host side.

Walk the tensors in backward order, accumulating wait and bytes since the last
flush; flush right after tensor i when the accumulated wait >= ``timeout_s`` or the
accumulated bytes >= ``buffer_bytes``; flush any remainder after the last tensor.
A bucket is ready when its last tensor is. ``buffer_bytes = 0`` gives one bucket
per tensor. Defaults (the paper's, Horovod's): 64 MiB and 5 ms.

Fusion depends only on the profile and the two knobs, so it runs once per
(profile, fusion) on the host; the kernels see padded arrays.
"""

import dataclasses

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.profile import Profile


@dataclasses.dataclass(frozen=True)
class Buckets:
    """Fused buckets of one profile.

    Attributes:
      ready: [Bk] seconds from the start of backward.
      nbytes: [Bk] uncompressed bytes.
      last_tensor: [Bk] index of each bucket's last tensor.
    """

    ready: np.ndarray
    nbytes: np.ndarray
    last_tensor: np.ndarray

    def __len__(self) -> int:
        return len(self.nbytes)

    def padded(self, length: int, dtype: npt.DTypeLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ready, nbytes, valid), each [length] of ``dtype``, zero-padded."""
        n = len(self)
        out = np.zeros((3, length), dtype=dtype)
        out[0, :n] = self.ready
        out[1, :n] = self.nbytes
        out[2, :n] = 1.0
        return out[0], out[1], out[2]


def fuse(profile: Profile, buffer_bytes: float, timeout_s: float) -> Buckets:
    """Buckets of ``profile`` under fusion knobs (bytes, seconds)."""
    ready = profile.ready
    acc_wait = acc_bytes = 0.0
    bounds: list[int] = []
    sizes: list[float] = []
    for i, (w, b) in enumerate(zip(profile.wait, profile.grad_bytes)):
        acc_wait += w
        acc_bytes += b
        if acc_wait >= timeout_s or acc_bytes >= buffer_bytes:
            bounds.append(i)
            sizes.append(acc_bytes)
            acc_wait = acc_bytes = 0.0
    if not bounds or bounds[-1] != len(ready) - 1:
        bounds.append(len(ready) - 1)
        sizes.append(acc_bytes)
    last = np.array(bounds, dtype=np.int64)
    return Buckets(ready[last], np.array(sizes, dtype=np.float64), last)


DDP_BUCKET_CAP = 25 * 2**20  # torch.nn.parallel.DistributedDataParallel bucket_cap_mb = 25
DDP_FIRST_BUCKET = 2**20  # torch.distributed's default first-bucket size (1 MiB)


def ddp_buckets(profile: Profile) -> Buckets:
    """Buckets of PyTorch DDP: tensors in reverse parameter order (the backward order
    of a profile), a bucket closed once it holds >= its cap (1 MiB for the first,
    25 MiB after), no timeout; a bucket is all-reduced once all its gradients are ready.

    Unlike Horovod fusion, DDP's buckets are fixed when the model is wrapped (from
    parameter order, not from when gradients arrive), have no timeout, and start
    with a small bucket so the first all-reduce begins early.
    """
    bounds: list[int] = []
    sizes: list[float] = []
    acc, cap = 0.0, DDP_FIRST_BUCKET
    for i, b in enumerate(profile.grad_bytes):
        acc += b
        if acc >= cap:
            bounds.append(i)
            sizes.append(acc)
            acc, cap = 0.0, DDP_BUCKET_CAP
    if not bounds or bounds[-1] != len(profile.grad_bytes) - 1:
        bounds.append(len(profile.grad_bytes) - 1)
        sizes.append(acc)
    last = np.array(bounds, dtype=np.int64)
    return Buckets(profile.ready[last], np.array(sizes, dtype=np.float64), last)


@dataclasses.dataclass(frozen=True)
class Units:
    """FSDP units of one profile, in forward order.

    Attributes:
      forward: [U] seconds of forward compute.
      nbytes: [U] parameter (and gradient) bytes.
      backward: [U] seconds of backward compute.
    """

    forward: np.ndarray
    nbytes: np.ndarray
    backward: np.ndarray

    def __len__(self) -> int:
        return len(self.nbytes)


def fsdp_units(profile: Profile) -> Units:
    """The FSDP units of ``profile``: its tensors grouped by ``unit`` (one unit per tensor
    without), in the order the forward pass first reaches them (the profile's backward
    order reversed). Needs the profile's forward times."""
    if profile.forward is None:
        raise InputError(
            f"fsdp: FSDP needs forward times per tensor, and {profile.model}'s profile has none "
            f"(a JSON profile or a CSV with forward_us, or a transformer built-in)",
            param="bucketing",
        )
    unit = profile.unit if profile.unit is not None else np.arange(len(profile.names))
    order = list(dict.fromkeys(unit[::-1].tolist()))  # forward order of first appearance
    index = np.array([order.index(u) for u in unit])
    out = np.zeros((3, len(order)))
    for row, values in enumerate((profile.forward, profile.grad_bytes, profile.wait)):
        np.add.at(out[row], index, values)
    return Units(*out)


def buckets_for(profile: Profile, bucketing: str, buffer_bytes: float, timeout_s: float) -> Buckets | Units:
    """The buckets (or FSDP units) of ``profile`` under a schedule (``horovod`` uses the fusion knobs)."""
    if bucketing == "fsdp":
        return fsdp_units(profile)
    return ddp_buckets(profile) if bucketing == "ddp" else fuse(profile, buffer_bytes, timeout_s)
