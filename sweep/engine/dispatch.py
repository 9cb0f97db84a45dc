"""The sweep engine: dispatch fixed-shape blocks to the devices, collect them for a sink.

One engine for both model families (:mod:`sweep.core.families`). A
:class:`~sweep.engine.blocks.Blocking` says how the cube is cut; the family's block adapter (its ``blocks``
hook, a :class:`BlockAdapter`) builds each block's host arrays and calls its compiled kernel (one compile per
sweep and dtype): the data-parallel family's :class:`~sweep.engine.data_parallel_blocks.DataParallelBlocks`,
the layout family's :class:`~sweep.engine.layout_blocks.LayoutBlocks`. This module never asks which family a
sweep is: it sends inputs to the devices (long-lived arrays once per device), keeps a few blocks
in flight, and turns each device result into numpy arrays shaped like the block's region of the
cube (or, under ``--reduce``, reduced on the device).

Precision is scoped: a float64 grid runs inside ``jax.enable_x64(True)`` and leaves
the process's JAX configuration as it found it.
"""

import collections
import contextlib
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol

import jax
import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.overlap import METRICS, Config
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DEFAULTS, KERNELS
from netsweep_jax.sweep.engine.blocks import DEFAULT_BLOCK_CONFIGS, Block, Blocking, Copy
from netsweep_jax.sweep.engine.grid import Grid
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid
from netsweep_jax.sweep.engine.outputs import check_float16
from netsweep_jax.sweep.engine.reductions import DeviceReduction, device_reduction

Arrays = dict[str, npt.NDArray[Any]]
Sink = Callable[[Block, Arrays], None]
AnyGrid = Grid | LayoutGrid
"""A sweep of either family."""


class BlockAdapter(Protocol):
    """A family's block adapter, named by its ``blocks`` hook (:mod:`sweep.core.families`): made for a sweep of
    the family (its class takes ``grid, blocking, kernel, keep``), it sends a block's inputs to the device through
    ``copy`` and calls its family's compiled kernel. ``kernel``: the kernel it runs; ``collect``: a block's result as host arrays where the adapter
    hands over something of its own (the best layouts, a question's answers), else None: the dispatcher keeps
    every output, cast to the store dtype or reduced."""

    kernel: str

    def __call__(self, block: Block, copy: Copy, reduce: DeviceReduction | None) -> Any: ...

    def collect(self, block: Block, result: Any) -> "Arrays | None": ...


def check_kernel(name: str, grid: AnyGrid) -> None:
    """Refuse a kernel name that is unknown, or an explicit Pallas kernel that cannot run ``grid``'s
    sweep (``auto`` chooses the XLA scan there instead). Starts no JAX backend: call it before any file
    is made (and before ``jax.distributed`` starts)."""
    if not isinstance(name, str) or name.lower() not in KERNELS:
        raise InputError(f"{name!r}: must be one of {', '.join(KERNELS)}", param="kernel")
    name = name.lower()  # --kernel XLA is xla
    refusal = grid.family.hook("blocks").pallas_refusal(grid, name) if name.startswith("pallas") else ""
    if refusal:
        raise InputError(refusal, param="kernel")
    if name == "pallas" and not _gpu_installed():
        raise InputError(
            "pallas: compiled Pallas kernels run on a GPU and this installation of JAX has no GPU plugin; "
            "use xla (or auto), or pallas-interpret to run the Pallas kernel slowly on the CPU",
            param="kernel",
        )


def _gpu_installed() -> bool:
    """Whether JAX here has a GPU plugin (CUDA or ROCm) installed, known without starting JAX's backend (which
    --distributed must start itself); the GPU may still be absent."""
    import importlib.metadata

    return any(
        (d.metadata["Name"] or "").lower().replace("_", "-").startswith(("jax-cuda", "jax-rocm"))
        for d in importlib.metadata.distributions()
    )


# Device bytes one configuration of a block needs on an accelerator, at most (float64): its configuration's
# inputs, every output of the kernel (all are materialized, kept or not: one compile of grid_metrics serves
# every --vars, --store and --reduce), the kept ones' store-dtype copies (float32 from float64, or float64 from
# float32: 4 bytes more per output at most) and the scan's carry (FSDP's: three values).
DEVICE_BYTES_PER_CONFIG = 8 * len(Config._fields) + (8 + 4) * len(METRICS) + 8 * 3
MAX_DEVICE_BLOCK = 2**26  # past this, a block gains nothing (measured on an H200, benchmarks/README.md)


def default_block_configs(device: jax.Device | None = None) -> int:
    """Configurations per block: the CPU default, or on an accelerator the largest power of
    two that a quarter of the device's free memory holds (at most 2^26)."""
    device = device or jax.local_devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if not stats or "bytes_limit" not in stats:
        return DEFAULT_BLOCK_CONFIGS
    free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
    fits = max(1, free // 4 // DEVICE_BYTES_PER_CONFIG)
    return int(max(DEFAULT_BLOCK_CONFIGS, min(MAX_DEVICE_BLOCK, 1 << (int(fits).bit_length() - 1))))


@contextlib.contextmanager
def precision(dtype: str) -> Iterator[None]:
    """Compute in ``dtype`` inside the block, without changing JAX's global setting."""
    with jax.enable_x64(dtype == "float64"):
        yield


class Dispatcher:
    """Evaluates blocks of ``blocking`` on ``devices`` (default: every local device), for either family."""

    def __init__(
        self,
        grid: AnyGrid,
        blocking: Blocking,
        kernel: str = DEFAULTS.kernel,
        devices: Sequence[jax.Device] | None = None,
        keep: int | None = None,
        adapter: "Callable[[AnyGrid, Blocking], BlockAdapter] | None" = None,
    ) -> None:
        check_kernel(kernel, grid)  # an explicit Pallas kernel is never swapped for another
        self.grid = grid
        self.blocking = blocking
        # The family's adapter, or the caller's own (a question asked of every block: sweep need's).
        self.blocks: BlockAdapter = (
            adapter(grid, blocking)
            if adapter is not None
            else grid.family.hook("blocks")(grid, blocking, kernel, keep)
        )
        self.kernel = self.blocks.kernel
        self.devices = list(devices) if devices is not None else jax.local_devices()
        self._on_device: dict[tuple[Any, jax.Device], Any] = {}  # (key, device) -> copy of a long-lived input
        # (real lanes, block tensor shape, axes, family) under --reduce
        self.reduce: DeviceReduction | None = (
            None if grid.reduction is None else device_reduction(blocking, grid.reduction)
        )

    def submit(self, block: Block, device: jax.Device | None = None) -> Any:
        """Dispatch one block (asynchronously); returns its adapter's device result (a family's: a dict of device
        arrays [kb_width, ci_width], the padded lanes dropped by :meth:`collect`)."""
        device = device or self.devices[block.index % len(self.devices)]

        def copy(key: Any, make: Callable[[], Any]) -> Any:
            if key is None:
                return jax.device_put(make(), device)
            if (key, device) not in self._on_device:
                self._on_device[key, device] = jax.device_put(make(), device)
            return self._on_device[key, device]

        return self.blocks(block, copy, self.reduce)

    def collect(self, block: Block, result: Any) -> Arrays:
        """Device result -> dict name -> numpy array shaped like ``block.region()`` (reduced: the rows
        of the split dim this block holds, then the dims after it that are not reduced; with ``keep``, the
        best layouts of the block's settings)."""
        own = self.blocks.collect(block, result)
        if own is not None:
            return own
        if self.reduce is not None:
            # the last block's padded rows are dropped
            rows = block.slab[self.blocking.family.varying.index(self.blocking.split_dim)]
            return {name: np.asarray(a)[: rows.stop - rows.start] for name, a in result.items()}
        k = block.outer_lanes if self.blocking.splits_layouts else 1
        c = block.size // k
        store = np.dtype(self.grid.store_dtype)
        with np.errstate(over="ignore"):  # a value float16 cannot hold is refused below, by name
            arrays = {
                name: _as_stored(np.asarray(result[name])[:k, :c].reshape(block.region_shape()), store)
                for name in self.grid.variables
            }
        if self.grid.store_dtype == "float16":
            check_float16(arrays, self.blocking.family)
        return arrays


def _as_stored(a: npt.NDArray[Any], store: np.dtype) -> npt.NDArray[Any]:
    """A float output in the store dtype (the data-parallel family's is cast on the device already); an
    integer code as it is."""
    return a.astype(store) if a.dtype.kind == "f" and a.dtype != store else a


def run(
    grid: AnyGrid,
    blocking: Blocking,
    sink: Sink,
    *,
    skip: Collection[int] = (),
    progress: Callable[[int], None] | None = None,
    only: Callable[[Block], bool] | None = None,
    kernel: str = DEFAULTS.kernel,
    devices: Sequence[jax.Device] | None = None,
    keep: int | None = None,
    adapter: "Callable[[AnyGrid, Blocking], BlockAdapter] | None" = None,
) -> None:
    """Evaluate every block of ``blocking`` not in ``skip`` and hand it to ``sink``.

    ``sink(block, arrays)`` receives numpy arrays shaped like the block's region;
    ``progress(configs)`` is called after each block. ``only(block) -> bool`` keeps a
    share of the blocks (one process's, under --distributed). Blocks go round-robin
    to every local device; one more than the device count is kept in flight, so
    computing overlaps the hand-off (JAX dispatches asynchronously). ``keep`` (a layout sweep): each block
    hands over the ``keep`` fastest feasible layouts of its settings instead of every output
    (:meth:`~sweep.engine.layout_blocks.LayoutBlocks.collect_best`). ``adapter(grid, blocking)``: the blocks'
    adapter in place of the family's (made inside the grid's precision), for a question asked of every block.
    """
    skip = set(skip)
    with precision(grid.dtype):
        dispatcher = Dispatcher(grid, blocking, kernel, devices, keep, adapter)
        pending: collections.deque[tuple[Block, Any]] = collections.deque()

        def hand_off() -> None:
            block, result = pending.popleft()
            sink(block, dispatcher.collect(block, result))
            if progress:
                progress(block.size)

        for block in blocking.blocks():
            if block.index in skip or (only is not None and not only(block)):
                continue
            pending.append((block, dispatcher.submit(block)))
            if len(pending) > len(dispatcher.devices):
                hand_off()
        while pending:
            hand_off()


def evaluate_arrays(
    grid: AnyGrid,
    block_configs: int = DEFAULT_BLOCK_CONFIGS,
    kernel: str = DEFAULTS.kernel,
    progress: Callable[[int], None] | None = None,
) -> Arrays:
    """Whole cube in memory: dict name -> array of ``grid.shape`` (NaN where unset; an integer output,
    -1). ``progress(configs)`` is called after each block."""
    blocking = Blocking(grid.sizes, block_configs, grid.family)
    family = grid.family
    out = {
        name: np.full(grid.shape, family.unset(name), family.stored_dtype(name, grid.store_dtype))
        for name in grid.variables
    }

    def sink(block: Block, arrays: Arrays) -> None:
        for name, a in arrays.items():
            out[name][block.region()] = a

    run(grid, blocking, sink, kernel=kernel, progress=progress)
    return out
