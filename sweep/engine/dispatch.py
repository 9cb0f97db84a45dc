"""The sweep engine: dispatch fixed-shape blocks to the devices, collect them for a sink.

A :class:`~sweep.engine.plan.Plan` says how the cube is cut; :class:`~sweep.engine.inputs.BlockInputs`
builds each block's host arrays; :func:`sweep.engine.compiled.grid_metrics` evaluates them
(one compile per sweep and dtype). This module sends inputs to the devices (long-
lived arrays once per device), keeps a few blocks in flight, and turns each
device result into numpy arrays shaped like the block's region of the cube.

Precision is scoped: a float64 grid runs inside ``jax.enable_x64(True)`` and leaves
the process's JAX configuration as it found it.
"""

import collections
import contextlib

import numpy as np

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import KERNELS
from netsweep_jax.sweep.engine.inputs import BlockInputs
from netsweep_jax.sweep.engine.plan import DEFAULT_BLOCK_CONFIGS, VARYING, Plan


def choose_kernel(name="auto"):
    """Resolve a kernel name: ``auto`` is Pallas on a GPU and the XLA scan elsewhere."""
    if name not in KERNELS:
        raise InputError(f"{name!r}: must be one of {', '.join(KERNELS)}", param="kernel")
    if name != "auto":
        return name
    import jax

    return "pallas" if jax.default_backend() == "gpu" else "xla"


# Device bytes one configuration of a block needs on an accelerator: the seven inputs,
# four outputs and their store-dtype copies, and the scan's carry, with room to spare.
DEVICE_BYTES_PER_CONFIG = 128
MAX_DEVICE_BLOCK = 2**26  # past this, a block gains nothing (measured on an H200, benchmarks/README.md)


def default_block_configs(device=None):
    """Configurations per block: the CPU default, or on an accelerator the largest power of
    two that a quarter of the device's free memory holds (at most 2^26)."""
    import jax

    device = device or jax.local_devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if not stats or "bytes_limit" not in stats:
        return DEFAULT_BLOCK_CONFIGS
    free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
    fits = max(1, free // 4 // DEVICE_BYTES_PER_CONFIG)
    return int(max(DEFAULT_BLOCK_CONFIGS, min(MAX_DEVICE_BLOCK, 1 << (int(fits).bit_length() - 1))))


@contextlib.contextmanager
def precision(dtype):
    """Compute in ``dtype`` inside the block, without changing JAX's global setting."""
    import jax

    with jax.enable_x64(dtype == "float64"):
        yield


class Dispatcher:
    """Evaluates blocks of ``plan`` on ``devices`` (default: every local device)."""

    def __init__(self, grid, plan, kernel="auto", devices=None):
        import jax

        self.grid = grid
        self.plan = plan
        self.inputs = BlockInputs(grid, plan)
        # The Pallas kernel has no FSDP schedule and no compressors: such sweeps run the XLA scan.
        f = self.inputs.features
        self.kernel = "xla" if f.fsdp or f.compress or f.accuracy else choose_kernel(kernel)
        self.devices = list(devices) if devices is not None else jax.local_devices()
        self._on_device = {}  # (key, device) -> device copy of a long-lived input
        self.reduce = None  # (block tensor shape, axes, family) under --reduce
        if grid.reduction is not None:
            from netsweep_jax.sweep.engine.reductions import device_plan

            self.reduce = device_plan(plan, grid.reduction)

    def _copy(self, key, device, make):
        """The device copy of the host value ``make()`` known as ``key``, sent once per device."""
        import jax

        if (key, device) not in self._on_device:
            self._on_device[key, device] = jax.device_put(make(), device)
        return self._on_device[key, device]

    def submit(self, block, device=None):
        """Dispatch one block (asynchronously); returns a dict of device arrays [kb, ci]."""
        from netsweep_jax.sweep.engine.compiled import grid_metrics

        device = device or self.devices[block.index % len(self.devices)]
        inp = self.inputs
        if self.plan.splits_layouts:  # every block has the whole inner extent: one copy
            config = self._copy("configs", device, lambda: inp.configs(block.inner_slab))
        else:
            config = inp.configs(block.inner_slab)
        layout_key = ("layout", block.task, tuple((s.start, s.stop) for s in block.layout_slab))
        layout = self._copy(layout_key, device, lambda: inp.layout(block.task, block.layout_slab))
        buckets = self._copy(("buckets", block.task), device, lambda: inp.buckets(block.task))
        t1 = self._copy(("t1", block.task), device, lambda: inp.t1(block.task))
        return grid_metrics(config, layout, buckets, t1, kernel=self.kernel, zero_latency=inp.zero_latency,
                            features=inp.features, outputs=self.grid.variables,
                            store=None if self.reduce else self.grid.store_dtype, reduce=self.reduce)

    def collect(self, block, result):
        """Device result -> dict name -> numpy array shaped like ``block.region()`` (reduced: the rows
        of the split dim this block holds, then the dims after it that are not reduced)."""
        if self.reduce is not None:
            rows = block.slab[VARYING.index(self.plan.split_dim)]  # the last block's padded rows are dropped
            return {name: np.asarray(a)[: rows.stop - rows.start] for name, a in result.items()}
        k = block.layouts if self.plan.splits_layouts else 1
        c = block.size // k
        return {name: np.asarray(result[name])[:k, :c].reshape(block.region_shape()) for name in self.grid.variables}


def run(grid, plan, sink, *, skip=(), progress=None, only=None, kernel="auto", devices=None):
    """Evaluate every block of ``plan`` not in ``skip`` and hand it to ``sink``.

    ``sink(block, arrays)`` receives numpy arrays shaped like the block's region;
    ``progress(configs)`` is called after each block. ``only(block) -> bool`` keeps a
    share of the blocks (one process's, under --distributed). Blocks go round-robin
    to every local device; one more than the device count is kept in flight, so
    computing overlaps the hand-off (JAX dispatches asynchronously).
    """
    skip = set(skip)
    with precision(grid.dtype):
        dispatcher = Dispatcher(grid, plan, kernel, devices)
        pending = collections.deque()

        def hand_off():
            block, result = pending.popleft()
            sink(block, dispatcher.collect(block, result))
            if progress:
                progress(block.size)

        for block in plan.blocks():
            if block.index in skip or (only is not None and not only(block)):
                continue
            pending.append((block, dispatcher.submit(block)))
            if len(pending) > len(dispatcher.devices):
                hand_off()
        while pending:
            hand_off()


def evaluate_arrays(grid, block_configs=DEFAULT_BLOCK_CONFIGS, kernel="auto"):
    """Whole cube in memory: dict name -> array of ``grid.shape`` (NaN where unset)."""
    plan = Plan(grid.sizes, block_configs)
    out = {name: np.full(grid.shape, np.nan, dtype=grid.store_dtype) for name in grid.variables}

    def sink(block, arrays):
        for name, a in arrays.items():
            out[name][block.region()] = a

    run(grid, plan, sink, kernel=kernel)
    return out
