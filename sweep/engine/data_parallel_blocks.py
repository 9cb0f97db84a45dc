"""The data-parallel family's block adapter: a block of its cube to its compiled kernel.

Named by the family's ``blocks`` hook (:mod:`sweep.core.families`), made by the engine's
:class:`~sweep.engine.dispatch.Dispatcher` for a data-parallel sweep: each block's host arrays
(:class:`~sweep.engine.inputs.BlockInputs`) placed on the device, :func:`~sweep.engine.compiled.grid_metrics`
on them, and the outputs kept, cast or reduced. Which kernel runs it (the XLA scan or Pallas) is this family's
choice: only its recurrence has a Pallas kernel.
"""

from typing import Any

import jax
import numpy as np

from netsweep_jax.kernels.overlap import Features
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DEFAULTS, KERNELS
from netsweep_jax.sweep.engine.blocks import Block, Blocking, Copy
from netsweep_jax.sweep.engine.compiled import grid_metrics, reduced_outputs, stored
from netsweep_jax.sweep.engine.grid import Grid
from netsweep_jax.sweep.engine.inputs import BlockInputs, features_of
from netsweep_jax.sweep.engine.reductions import DeviceReduction


def _pallas_lacks(features: Features) -> list[str]:
    """What a sweep with ``features`` needs that the Pallas kernel does not have."""
    return [
        what
        for what, needed in (
            ("FSDP", features.fsdp),
            ("compression", features.compress),
            ("time_to_accuracy", features.accuracy),
            ("NCCL's own collective", features.nccl),
        )
        if needed
    ]


def choose_kernel(name: str = DEFAULTS.kernel, features: Features | None = None) -> str:
    """Resolve a kernel name: ``auto`` is Pallas on a GPU, where the sweep's ``features`` allow it,
    and the XLA scan elsewhere; an explicit name is kept (:func:`~sweep.engine.dispatch.check_kernel` refuses what cannot run)."""
    if not isinstance(name, str) or name.lower() not in KERNELS:
        raise InputError(f"{name!r}: must be one of {', '.join(KERNELS)}", param="kernel")
    name = name.lower()
    if name != "auto":
        return name
    if features is not None and _pallas_lacks(features):
        return "xla"
    return "pallas" if jax.default_backend() == "gpu" else "xla"


class DataParallelBlocks:
    """The data-parallel family's blocks (its ``blocks`` hook: :mod:`sweep.core.families`): buckets, workers
    and configurations to :func:`grid_metrics`. Never keeps the best layouts (``keep``: a layout sweep's)."""

    def __init__(self, grid: Grid, blocking: Blocking, kernel: str, keep: int | None = None) -> None:
        if keep is not None:
            raise ValueError("keep: the best layouts of each setting are a layout sweep's")
        self.grid, self.blocking = grid, blocking
        self.inputs = BlockInputs(grid, blocking)
        self.kernel = choose_kernel(kernel, self.inputs.features)

    @staticmethod
    def pallas_refusal(grid: Grid, name: str) -> str:
        """Why the Pallas kernel ``name`` cannot run ``grid`` ('' where it can)."""
        lacks = _pallas_lacks(features_of(grid))
        if not lacks:
            return ""
        return (
            f"{name}: the Pallas kernel does not model {' or '.join(lacks)}, which this sweep needs; use xla "
            "(or auto)"
        )

    def __call__(self, block: Block, copy: Copy, reduce: DeviceReduction | None) -> dict[str, jax.Array]:
        inp = self.inputs
        # Placed on the device whether or not it is kept (as LayoutBlocks' inputs, for one compile either way);
        # where every block has the whole inner extent, one copy.
        config = copy(
            "configs" if self.blocking.splits_layouts else None, lambda: inp.configs(block.inner_slab)
        )
        workers_key = ("workers", block.task, tuple((s.start, s.stop) for s in block.outer_slab))
        workers = copy(workers_key, lambda: inp.workers(block.task, block.outer_slab))
        buckets = copy(("buckets", block.task), lambda: inp.buckets(block.task))
        t1 = copy(("t1", block.task), lambda: inp.t1(block.task))
        # One compile of the kernel per block shape, dtype and features, whatever the sweep keeps of its outputs
        # (--vars), in which dtype (--store) or reduced how (--reduce): each of those is a small compile of one
        # output, shared by every output of its shape and dtype.
        # zero_latency is the Pallas kernel's promise (it skips an add); the XLA scan ignores it, so it must not
        # split that kernel's compiles between sweeps with and without latency.
        zero_latency = inp.zero_latency and self.kernel != "xla"
        out = grid_metrics(
            config, workers, buckets, t1, kernel=self.kernel, zero_latency=zero_latency, features=inp.features
        )
        kept = {name: out[name] for name in self.grid.variables}
        if reduce is not None:
            return reduced_outputs(kept, reduce)
        # Narrowed on the device (less to copy back); widened on the host (_as_stored): a float32 computation
        # cannot hold float64 on a device without x64, and JAX warned so on every block.
        store = np.dtype(self.grid.store_dtype)
        return {
            name: v if store.itemsize >= v.dtype.itemsize else stored(v, store=str(store))
            for name, v in kept.items()
        }

    def collect(self, block: Block, result: Any) -> None:
        """Nothing of its own: the dispatcher keeps every output (cast or reduced)."""
