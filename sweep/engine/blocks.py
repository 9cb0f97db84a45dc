"""Block geometry (the block plan; not `sweep plan`): how a grid's cube is cut into blocks, and the one kernel shape.

Pure index arithmetic over named dims, no arrays. The cube's dims are
``STRUCTURAL + LAYOUT + INNER`` (:mod:`sweep.core.schema`). A *task* is one index along
every structural dim (one set of fused buckets); within a task the remaining
(varying) dims are cut into hyperslab blocks of at most ``block_configs``
configurations. A block is handed to the kernel as ``kb`` worker layouts x ``ci``
inner configurations (one of the two is always the whole extent), padded to that
shape, which is fixed for the whole sweep: one compile per sweep. Both widths are rounded up
(:func:`padded_width`), so sweeps of similar sizes share one compiled kernel too (through JAX's
persistent compilation cache, across commands).
"""

import dataclasses
import itertools
import math
import numbers
from collections.abc import Iterator, Mapping

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DIMS, INNER, LAYOUT, STRUCTURAL

VARYING = LAYOUT + INNER
DEFAULT_BLOCK_CONFIGS = 2**18  # 4 MiB of float32 output per block and variable
MAX_BLOCK_CONFIGS = 2**30  # 16 GiB of float32 output per block: more than any device holds
SMALL_WIDTH = 64  # widths up to this are rounded to a power of two: their compute is negligible


def padded_width(n: int, least: int = 1) -> int:
    """The kernel width that holds ``n`` lanes: the next power of two (at least ``least``) up to
    :data:`SMALL_WIDTH`; above it the next multiple of an eighth of the power of two below ``n``
    (at most 12.5% padding). So 5 -> 8, 300 -> 320, and every width from 33 to 64 compiles as 64."""
    if n <= SMALL_WIDTH:
        return max(least, 1 << max(0, n - 1).bit_length())
    step = 1 << ((n - 1).bit_length() - 4)
    return -(-n // step) * step


@dataclasses.dataclass(frozen=True)
class Block:
    """One unit of work and of writing.

    Attributes:
      index: position in :meth:`BlockPlan.blocks` (the id recorded as done).
      task: indices along :data:`~sweep.core.schema.STRUCTURAL`.
      slab: ``slice`` objects along :data:`VARYING` (layout dims, then inner dims).
    """

    index: int
    task: tuple[int, ...]
    slab: tuple[slice, ...]

    @property
    def layout_slab(self) -> tuple[slice, ...]:
        """Slices along :data:`~sweep.core.schema.LAYOUT`."""
        return self.slab[: len(LAYOUT)]

    @property
    def inner_slab(self) -> tuple[slice, ...]:
        """Slices along :data:`~sweep.core.schema.INNER`."""
        return self.slab[len(LAYOUT) :]

    def region(self) -> tuple[slice, ...]:
        """Index tuple into the full cube (one entry per dim of :data:`~sweep.core.schema.DIMS`)."""
        return tuple(slice(i, i + 1) for i in self.task) + self.slab

    def region_shape(self) -> tuple[int, ...]:
        """The block's extent along every dim of the cube."""
        return tuple(s.stop - s.start for s in self.region())

    @property
    def layouts(self) -> int:
        """Worker layouts in the block."""
        return math.prod(s.stop - s.start for s in self.layout_slab)

    @property
    def size(self) -> int:
        """Configurations in the block."""
        return math.prod(s.stop - s.start for s in self.slab)


class BlockPlan:
    """How a cube of ``sizes`` is cut into blocks, and the fixed kernel shape (kb, ci), padded to
    (kb_width, ci_width) lanes.

    Args:
      sizes: dict dim -> extent for every dim of :data:`~sweep.core.schema.DIMS`.
      block_configs: at most this many configurations per block (a memory budget),
        except that a block holds at least one row of the innermost dims.
    """

    def __init__(self, sizes: Mapping[str, int], block_configs: int = DEFAULT_BLOCK_CONFIGS) -> None:
        self.sizes: dict[str, int] = {d: int(sizes[d]) for d in DIMS}
        if not (isinstance(block_configs, numbers.Integral) and 1 <= block_configs <= MAX_BLOCK_CONFIGS):
            raise InputError(
                f"{block_configs}: must be an integer from 1 to {MAX_BLOCK_CONFIGS:,}", param="block_configs"
            )
        self.block_configs: int = int(block_configs)
        self._blocks: tuple[Block, ...] | None = None
        var = [self.sizes[d] for d in VARYING]
        # Split dim: the outermost varying dim whose trailing extent fits a block.
        split = next(i for i in range(len(VARYING)) if math.prod(var[i + 1 :]) <= self.block_configs)
        self.split_dim: str = VARYING[split]
        trailing = math.prod(var[split + 1 :])
        self.rows: int = max(1, min(var[split], self.block_configs // trailing))
        if self.split_dim in LAYOUT:  # whole inner extent, several layouts per block
            self.kb: int = self.rows * math.prod(var[split + 1 : len(LAYOUT)])
            self.ci: int = math.prod(var[len(LAYOUT) :])
        else:  # one layout per block, part of the inner extent
            self.kb = 1
            self.ci = self.rows * trailing
        # The compiled shape: padded lanes are single workers and harmless configurations, dropped on return.
        self.kb_width: int = padded_width(self.kb)
        self.ci_width: int = padded_width(self.ci, least=8)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in DIMS)

    @property
    def splits_layouts(self) -> bool:
        """True when every block holds the whole inner extent (and a run of layouts)."""
        return self.split_dim in LAYOUT

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """Shape of one (full) block in the cube: the HDF5 chunk shape."""
        split = VARYING.index(self.split_dim)
        var = [1] * split + [self.rows] + [self.sizes[d] for d in VARYING[split + 1 :]]
        return (1,) * len(STRUCTURAL) + tuple(var)

    def tasks(self) -> Iterator[tuple[int, ...]]:
        """Every structural index tuple, in cube order."""
        return itertools.product(*(range(self.sizes[d]) for d in STRUCTURAL))

    def blocks(self) -> tuple[Block, ...]:
        """All blocks in a fixed order (the order ids refer to); computed once."""
        if self._blocks is None:
            self._blocks = tuple(self._cut())
        return self._blocks

    def _cut(self) -> list[Block]:
        split = VARYING.index(self.split_dim)
        outer = [self.sizes[d] for d in VARYING[:split]]
        along, trailing = self.sizes[self.split_dim], [self.sizes[d] for d in VARYING[split + 1 :]]
        out: list[Block] = []
        for task in self.tasks():
            for prefix in itertools.product(*(range(n) for n in outer)):
                for j in range(0, along, self.rows):
                    slab = tuple(slice(p, p + 1) for p in prefix)
                    slab += (slice(j, min(j + self.rows, along)),)
                    slab += tuple(slice(0, n) for n in trailing)
                    out.append(Block(len(out), task, slab))
        return out
