"""The sweep engine: fixed-shape blocks, jitted once, streamed to a sink.

The grid's dims are ``STRUCTURAL + LAYOUT + INNER`` (see :mod:`sweep.axes`). For
each structural combination (model, collective, fusion_buffer, fusion_timeout) the
buckets are fused on the host; the remaining six dims are cut into hyperslab
blocks of at most ``block_configs`` configurations. A block is handed to the
kernel as K worker layouts x C inner configurations (one of the two is always the
whole extent), padded to a shape fixed for the whole sweep, so the sweep compiles
once per (collective, padded bucket count). This is the one place that jits.
"""

import collections
import dataclasses
import itertools
import math
import os

import jax
import numpy as np

from kernels import block_metrics, collective_coefficients
from kernels.pallas_overlap import block_metrics_pallas
from sweep.axes import INNER, LAYOUT, si_values
from sweep.fusion import fuse

OUTPUTS = ("scaling_factor", "iteration_time", "exposed_comm", "comm_time")
DEFAULT_BLOCK_CONFIGS = 2**18  # 4 MiB of float32 output per block
BUCKET_PAD = 16  # bucket counts are padded to a multiple of this: fewer compiles


@dataclasses.dataclass(frozen=True)
class Block:
    """One unit of work and of writing.

    Attributes:
      index: position in :meth:`Plan.blocks` (the id recorded as done).
      task: (model, collective, fusion_buffer, fusion_timeout) indices.
      slab: six ``slice`` objects over the layout and inner dims.
    """

    index: int
    task: tuple
    slab: tuple

    def region(self):
        """Index tuple into the full cube (10 dims)."""
        return tuple(slice(i, i + 1) for i in self.task) + self.slab

    @property
    def size(self):
        return math.prod(s.stop - s.start for s in self.slab)


class Plan:
    """How a grid is cut into blocks, and the fixed kernel shape (Kb, Ci)."""

    def __init__(self, grid, block_configs=DEFAULT_BLOCK_CONFIGS):
        self.grid = grid
        self.block_configs = int(block_configs)
        self._blocks = None
        shape = grid.shape
        self.task_shape = shape[:4]
        self.var_shape = shape[4:]
        v = self.var_shape
        # Split dim: the outermost varying dim whose trailing extent fits a block.
        d = next(i for i in range(6) if math.prod(v[i + 1:]) <= block_configs)
        self.split_dim = d
        self.rows = max(1, min(v[d], block_configs // math.prod(v[d + 1:])))
        if d <= 1:
            self.kb = self.rows * (v[1] if d == 0 else 1)
            self.ci = math.prod(v[2:])
        else:
            self.kb = 1
            self.ci = self.rows * math.prod(v[d + 1:])

    @property
    def chunk_shape(self):
        """Shape of one block in the cube: the HDF5 chunk shape."""
        d = self.split_dim
        var = [1] * d + [self.rows] + list(self.var_shape[d + 1:])
        return (1, 1, 1, 1) + tuple(var)

    def blocks(self):
        """All blocks in a fixed order (the order ids refer to); computed once."""
        if self._blocks is None:
            self._blocks = tuple(self._cut())
        return self._blocks

    def _cut(self):
        d, v = self.split_dim, self.var_shape
        out = []
        for task in itertools.product(*(range(n) for n in self.task_shape)):
            for prefix in itertools.product(*(range(n) for n in v[:d])):
                for j in range(0, v[d], self.rows):
                    slab = tuple(slice(p, p + 1) for p in prefix)
                    slab += (slice(j, min(j + self.rows, v[d])),)
                    slab += tuple(slice(0, n) for n in v[d + 1:])
                    out.append(Block(len(out), task, slab))
        return out


KERNELS = ("auto", "xla", "pallas", "pallas-interpret")


def choose_kernel(name=None):
    """Resolve the kernel: ``NETSWEEP_KERNEL`` or ``name``; ``auto`` = Pallas on GPU, XLA elsewhere."""
    name = name or os.environ.get("NETSWEEP_KERNEL", "auto")
    if name not in KERNELS:
        raise ValueError(f"NETSWEEP_KERNEL={name!r}: expected one of {', '.join(KERNELS)}")
    if name == "auto":
        return "pallas" if jax.default_backend() == "gpu" else "xla"
    return name


def _kernel(collective, kernel, zero_latency, inv_bw, inv_ratio, latency, nodes, gpus, ready, nbytes, valid,
            t1, table_bytes, table_seconds, intra_bits):
    a, b, lat, fixed = collective_coefficients(
        collective, nodes, gpus, nbytes, table_bytes, table_seconds, intra_bits
    )
    if kernel == "xla":
        return block_metrics(inv_bw, inv_ratio, latency, a, b, lat, fixed, ready, nbytes, valid, t1)
    return block_metrics_pallas(inv_bw, inv_ratio, latency, a, b, lat, fixed, ready, nbytes, valid, t1,
                                interpret=kernel == "pallas-interpret", zero_latency=zero_latency)


# The one jit of the project: shapes are fixed per sweep; collective, kernel and
# whether every latency is 0 (the Pallas kernel then skips an add) are static.
block_kernel = jax.jit(_kernel, static_argnums=(0, 1, 2))


class Runner:
    """Evaluates blocks of a :class:`Plan` on the default JAX device(s)."""

    def __init__(self, plan, kernel=None, devices=None):
        self.plan = plan
        g = plan.grid
        self.np_dtype = np.dtype(g.dtype)
        if g.dtype == "float64":
            jax.config.update("jax_enable_x64", True)
        self.kernel = choose_kernel(kernel)
        self.devices = list(devices) if devices is not None else jax.local_devices()
        self._tasks = {}
        self._inner_cache = {}
        # (id(host array) or layout slab, device) -> (host array or None, device array(s))
        self._device_copies = {}
        dt = self.np_dtype
        self.table = tuple(np.asarray(t, dt) for t in g.reduce_table)
        self.intra_bits = np.asarray(g.intra_bandwidth * 1e9, dt)
        self.zero_latency = bool(np.all(g.values["latency"] == 0))

    def task_arrays(self, task):
        """(ready, nbytes, valid, t1) of one structural combination: [Bk] x 3 and a scalar (cached)."""
        if task not in self._tasks:
            g = self.plan.grid
            mi, _, fbi, fti = task
            profile = g.profiles[mi]
            buckets = fuse(
                profile,
                si_values("fusion_buffer", g.values["fusion_buffer"][fbi]),
                si_values("fusion_timeout", g.values["fusion_timeout"][fti]),
            )
            length = -(-len(buckets) // BUCKET_PAD) * BUCKET_PAD
            arrays = buckets.padded(length, self.np_dtype)
            self._tasks[task] = arrays + (np.asarray(profile.t1, self.np_dtype),)
        return self._tasks[task]

    def inner_arrays(self, slab):
        """(inv_bw, inv_ratio, latency) [Ci] for the inner part of a slab."""
        key = tuple((s.start, s.stop) for s in slab[2:])
        if key not in self._inner_cache:
            g, ci = self.plan.grid, self.plan.ci
            vals = [si_values(d, g.values[d][s]) for d, s in zip(INNER, slab[2:])]
            bw, util, ratio, lat = (a.ravel() for a in np.meshgrid(*vals, indexing="ij"))
            out = np.empty((3, ci), dtype=np.float64)
            out[:, :] = [[1.0], [1.0], [0.0]]  # padding: harmless finite values
            out[0, : bw.size] = 1.0 / (bw * util)
            out[1, : bw.size] = 1.0 / ratio
            out[2, : bw.size] = lat
            arrays = tuple(a.astype(self.np_dtype) for a in out)
            if self.plan.split_dim <= 1:  # the same inner part for every block
                self._inner_cache[key] = arrays
            return arrays
        return self._inner_cache[key]

    def layout_arrays(self, slab):
        """(nodes, gpus_per_node) [Kb] of a slab's worker layouts, padded with single workers."""
        g, kb = self.plan.grid, self.plan.kb
        vals = [g.values[d][s] for d, s in zip(LAYOUT, slab[:2])]
        nodes, gpus = (a.ravel() for a in np.meshgrid(*vals, indexing="ij"))
        out = np.ones((2, kb), dtype=self.np_dtype)  # padding: one worker, no comm
        out[0, : nodes.size] = nodes
        out[1, : nodes.size] = gpus
        return out[0], out[1]

    def submit(self, block, device=None):
        """Dispatch one block (asynchronously) on ``device``; returns device arrays [Kb, Ci]."""
        device = device or self.devices[block.index % len(self.devices)]
        inner = self.inner_arrays(block.slab)
        if self.plan.split_dim <= 1:  # the same inner arrays for every block: send once
            inner = tuple(self._on_device(a, device) for a in inner)
        shared = self.task_arrays(block.task) + self.table + (self.intra_bits,)
        shared = tuple(self._on_device(a, device) for a in shared)
        layout = self._layout_on_device(block.slab, device)
        collective = self.plan.grid.collectives[block.task[1]]
        return block_kernel(collective, self.kernel, self.zero_latency, *inner, *layout, *shared)

    def _layout_on_device(self, slab, device):
        """Device copies of a slab's layout arrays, cached: blocks that differ only in
        their inner part share them, and a small transfer costs as much as a launch."""
        key = (tuple((s.start, s.stop) for s in slab[:2]), device)
        if key not in self._device_copies:
            self._device_copies[key] = (None, jax.device_put(self.layout_arrays(slab), device))
        return self._device_copies[key][1]

    def _on_device(self, host, device):
        """The device copy of a long-lived host array, sent once per device."""
        key = (id(host), device)
        if key not in self._device_copies:
            self._device_copies[key] = (host, jax.device_put(host, device))
        return self._device_copies[key][1]

    def collect(self, block, result):
        """Device result -> dict name -> numpy array shaped like ``block.region()``."""
        sizes = [s.stop - s.start for s in block.region()]
        k = sizes[4] * sizes[5] if self.plan.split_dim <= 1 else 1
        c = block.size // k
        return {name: np.asarray(result[name])[:k, :c].reshape(sizes) for name in OUTPUTS}


def run(plan, sink, skip=(), progress=None, only=None, kernel=None, devices=None):
    """Evaluate every block of ``plan`` not in ``skip`` and hand it to ``sink``.

    ``sink(block, arrays)`` receives numpy arrays shaped like the block's region;
    ``progress(configs)`` is called after each block. ``only(block) -> bool`` keeps a
    share of the blocks (one process's, under --distributed). Blocks go round-robin
    to every local device; one more than the device count is kept in flight, so
    computing overlaps the hand-off (JAX dispatches asynchronously).
    """
    runner = Runner(plan, kernel, devices)
    pending = collections.deque()
    skip = set(skip)

    def hand_off():
        block, result = pending.popleft()
        sink(block, runner.collect(block, result))
        if progress:
            progress(block.size)

    for block in plan.blocks():
        if block.index in skip or (only is not None and not only(block)):
            continue
        pending.append((block, runner.submit(block)))
        if len(pending) > len(runner.devices):
            hand_off()
    while pending:
        hand_off()


def evaluate_arrays(grid, block_configs=DEFAULT_BLOCK_CONFIGS):
    """Whole cube in memory: dict name -> array of ``grid.shape`` (NaN where unset)."""
    plan = Plan(grid, block_configs)
    out = {name: np.full(grid.shape, np.nan, dtype=grid.dtype) for name in OUTPUTS}

    def sink(block, arrays):
        for name, a in arrays.items():
            out[name][block.region()] = a

    run(plan, sink)
    return out

