"""Block geometry (the `Blocking`): how a grid's cube is cut into blocks, and the one kernel shape.

Pure index arithmetic over named dims, no arrays, the same for every model family
(:mod:`sweep.core.families`). A cube's dims are its family's ``structural + outer + inner``
(the data-parallel family's: ``STRUCTURAL + WORKERS + INNER`` of :mod:`sweep.core.schema`; the
layout family's: no structural dim, the settings, then the layouts). A *task* is one index along
every structural dim (for the data-parallel family, one set of fused buckets); within a task the
remaining (varying) dims are cut into hyperslab blocks of at most ``block_configs``
configurations. A block is handed to the kernel as ``kb`` outer lanes x ``ci`` inner lanes (one
of the two is always the whole extent), padded to that shape, which is fixed for the whole
sweep: one compile per sweep. Both widths are rounded up (the family's ``widths`` hook: the data-parallel
family's by :func:`padded_width` and :func:`data_parallel_rows`, small blocks to one shape of 8 x 64
(:data:`SMALL_DATA_PARALLEL_BLOCK`); the layout family's by :func:`layout_columns` and :func:`layout_rows`:
small blocks to one shape of 8 x 8,192, a compile of the layout kernel being seconds, large ones to within
12.5% of their layouts and few rows, their compute being the longer), so sweeps of similar sizes share one
compiled kernel too (through JAX's persistent compilation cache, across commands).
"""

import dataclasses
import itertools
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from netsweep_jax.sweep.core.errors import InputError, literal, sizes_named
from netsweep_jax.sweep.core.families import Family

DEFAULT_BLOCK_CONFIGS = 2**18  # 4 MiB of float32 output per block and variable
MAX_BLOCK_CONFIGS = 2**30  # 16 GiB of float32 output per block: more than any device holds
SMALL_WIDTH = 64  # widths up to this are rounded to a power of two: their compute is negligible
# The most configurations a sweep returned in memory may have (either family): every output of each is
# kept, so a larger one is written block by block to a cube, reduced on the device, or searched.
MAX_CELLS_IN_MEMORY = 5 * 10**7


def check_in_memory(sizes: Mapping[str, int], instead: str) -> None:
    """Refuse, before any work, a sweep kept in memory of more configurations than
    :data:`MAX_CELLS_IN_MEMORY` (``sizes``: dim -> extent), naming the parameters that made it large (as the
    options that set them on the command line); ``instead``:
    what to do instead (the family's way of a large sweep)."""
    size = math.prod(sizes.values())
    if size > MAX_CELLS_IN_MEMORY:
        text, names = sizes_named(sizes)
        raise InputError(
            f"{size:,} configurations ({text}) are too many to keep in memory (at most "
            f"{MAX_CELLS_IN_MEMORY:,}); give fewer values, {literal(instead)}",
            names=names,
        )


def padded_width(n: int, least: int = 1) -> int:
    """The kernel width that holds ``n`` lanes: the next power of two (at least ``least``) up to
    :data:`SMALL_WIDTH`; above it the next multiple of an eighth of the power of two below ``n``
    (at most 12.5% padding). So 5 -> 8, 300 -> 320, and every width from 33 to 64 compiles as 64."""
    if n <= SMALL_WIDTH:
        return max(least, 1 << max(0, n - 1).bit_length())
    step = 1 << ((n - 1).bit_length() - 4)
    return -(-n // step) * step


SMALL_BLOCK_LANES = 512  # a data-parallel block of up to this many lanes is padded to share its compile


def data_parallel_rows(n: int, columns: int) -> int:
    """The data-parallel family's padded layout rows for ``n`` layouts a block over ``columns`` padded
    configurations: :func:`padded_width`'s, of at least 8 rows where the block stays within
    :data:`SMALL_BLOCK_LANES` lanes (4 where the columns are 128, 2 at 256, none from 512 on), so that the
    small sweeps of one model share a compile whatever their layout count (1, 2, 4 or 8 layouts compiled
    four kernels of the same buckets), and a large block is never padded beyond its own lanes. Blocks of at
    most 8 layouts by 64 configurations take :data:`SMALL_DATA_PARALLEL_BLOCK` whole (:class:`Blocking`); this
    floor is the one of wider small blocks (128 and 256 configurations)."""
    fits = SMALL_BLOCK_LANES // max(columns, 1)
    return padded_width(n, least=min(8, 1 << (fits.bit_length() - 1)) if fits else 1)


def pow2(n: int, low: int = 1) -> int:
    """The smallest power of two that holds ``n`` and is at least ``low`` (a power of two)."""
    return 1 << max(low.bit_length() - 1, (max(n, 1) - 1).bit_length())


MIN_LAYOUT_COLUMNS = 2**13  # layout sweeps of up to 8,192 layouts share one compiled block; padding costs ms
MIN_LAYOUT_ROWS = 8


def layout_columns(n: int, budget: int) -> int:
    """The layout family's padded width for ``n`` layouts a block (``budget`` configurations a block): a power
    of two of at least 8,192 (or the budget's power of two, where smaller) up to 8,192, so that small sweeps
    share one compiled kernel; above it :func:`padded_width`'s (at most 12.5% padding: 169,344 layouts compile
    as 180,224, not 262,144)."""
    if n <= MIN_LAYOUT_COLUMNS:
        return pow2(n, min(MIN_LAYOUT_COLUMNS, pow2(budget, 8)))
    return padded_width(n)


def layout_rows(n: int, columns: int) -> int:
    """The layout family's padded settings rows for ``n`` settings a block over ``columns`` padded layouts: a
    power of two, of at least 8 where the block is 8,192 layouts wide (the shape small sweeps share), fewer for
    wider blocks, down to 1 from 65,536 layouts on, so that the padding is bounded by about 8 x 8,192 lanes (up
    to twice that for a width between the powers of two, 12,288 columns taking 8 rows): a
    plan of one setting over 169,344 layouts is one row, not eight (the kernel's time is its lanes'). A block
    narrower than 8,192 (a budget below 8,192 configurations) has no shape to share and is not padded to one:
    a grid of one layout in blocks of 64 is 1 x 64 lanes, not 1,024 x 64."""
    least = max(1, MIN_LAYOUT_ROWS * MIN_LAYOUT_COLUMNS // columns) if columns >= MIN_LAYOUT_COLUMNS else 1
    return pow2(n, pow2(least))


@dataclasses.dataclass(frozen=True)
class Widths:
    """How a family's block is padded to the compiled shape.

    Attributes:
      outer: (lanes, the padded inner width) -> padded width.
      inner: lanes -> padded width (it also takes the block budget, which caps its floor).
      padded_budget: whether the block budget counts the padded inner width (the layout family's floor of
        8,192 columns would otherwise make a block of few layouts thousands of times its budget).
      small: (outer, inner) lanes: a block of at most this many lanes each way compiles as this one shape
        (None: no such shape).
    """

    outer: Callable[[int, int], int]
    inner: Callable[[int, int], int]
    padded_budget: bool
    small: tuple[int, int] | None = None


# The data-parallel family's shape of small sweeps: up to 8 layouts by 64 configurations compile as one kernel
# (of their buckets and model terms), where powers of two each way made about 15 more compiles of the scan in the
# test suite (a compile about 0.25 s, 2026-12-04); the padding costs at most 512 lanes of a scan.
SMALL_DATA_PARALLEL_BLOCK = (8, 64)


# The two families' widths, each named by its family's ``widths`` hook (sweep.core.families).
DATA_PARALLEL_WIDTHS = Widths(
    data_parallel_rows, lambda n, budget: padded_width(n, least=8), False, SMALL_DATA_PARALLEL_BLOCK
)
LAYOUT_WIDTHS = Widths(layout_rows, layout_columns, True)


@dataclasses.dataclass(frozen=True)
class Block:
    """One unit of work and of writing.

    Attributes:
      index: position in :meth:`Blocking.blocks` (the id recorded as done).
      task: indices along the family's structural dims.
      slab: ``slice`` objects along its varying dims (outer dims, then inner dims).
      outer_dims: how many of ``slab`` are outer dims.
    """

    index: int
    task: tuple[int, ...]
    slab: tuple[slice, ...]
    outer_dims: int

    @property
    def outer_slab(self) -> tuple[slice, ...]:
        """Slices along the outer dims (the data-parallel family's worker layout)."""
        return self.slab[: self.outer_dims]

    @property
    def inner_slab(self) -> tuple[slice, ...]:
        """Slices along the inner dims."""
        return self.slab[self.outer_dims :]

    def region(self) -> tuple[slice, ...]:
        """Index tuple into the full cube (one entry per dim of the family)."""
        return tuple(slice(i, i + 1) for i in self.task) + self.slab

    def region_shape(self) -> tuple[int, ...]:
        """The block's extent along every dim of the cube."""
        return tuple(s.stop - s.start for s in self.region())

    @property
    def outer_lanes(self) -> int:
        """Outer lanes in the block (the data-parallel family's worker layouts)."""
        return math.prod(s.stop - s.start for s in self.outer_slab)

    @property
    def size(self) -> int:
        """Configurations in the block."""
        return math.prod(s.stop - s.start for s in self.slab)


class Blocking:
    """How a cube of ``sizes`` is cut into blocks, and the fixed kernel shape (kb, ci), padded to
    (kb_width, ci_width) lanes.

    Args:
      sizes: dict dim -> extent for every dim of ``family``.
      block_configs: at most this many configurations per block (a memory budget),
        except that a block holds at least one row of the innermost dims.
      family: the cube's model family (:mod:`sweep.core.families`).
    """

    def __init__(
        self,
        sizes: Mapping[str, int],
        block_configs: int,
        family: Family,
    ) -> None:
        self.family = family
        self.sizes: dict[str, int] = {d: int(sizes[d]) for d in family.dims}
        # A bool is an Integral, and True was taken as blocks of one configuration (a hunt).
        whole = isinstance(block_configs, numbers.Integral) and not isinstance(block_configs, bool)
        if not (whole and 1 <= block_configs <= MAX_BLOCK_CONFIGS):
            raise InputError(
                f"{block_configs}: must be an integer from 1 to {MAX_BLOCK_CONFIGS:,}", param="block_configs"
            )
        self.block_configs: int = int(block_configs)
        self._blocks: tuple[Block, ...] | None = None
        varying, n_outer = family.varying, len(family.outer)
        widths: Widths = family.hook("widths")
        var = [self.sizes[d] for d in varying]
        inner = math.prod(var[n_outer:])
        # The inner extent as the block budget counts it (the padded width where the family says so).
        counted = widths.inner(inner, self.block_configs) if widths.padded_budget else inner

        def trailing(i: int) -> int:  # extent of the dims after varying dim i, as the budget counts it
            return math.prod(var[i + 1 : n_outer]) * counted if i < n_outer else math.prod(var[i + 1 :])

        # Split dim: the outermost varying dim whose trailing extent fits a block.
        split = next(i for i in range(len(varying)) if trailing(i) <= self.block_configs)
        self.split_dim: str = varying[split]
        self.rows: int = max(1, min(var[split], self.block_configs // trailing(split)))
        if split < n_outer:  # whole inner extent, several outer lanes per block
            self.kb: int = self.rows * math.prod(var[split + 1 : n_outer])
            self.ci: int = inner
        else:  # one outer lane per block, part of the inner extent
            self.kb = 1
            self.ci = self.rows * math.prod(var[split + 1 :])
        # The compiled shape: padded lanes are harmless configurations (the data-parallel family's: single
        # workers), dropped on return.
        self.ci_width: int = widths.inner(self.ci, self.block_configs)
        # A block of one outer lane (the inner extent split) is padded as the family pads any: the layout
        # family's 8,192 columns take 8 rows, the shape every small sweep compiles (the other 7 rows are the next
        # settings' or the last repeated, computed and dropped); wider blocks fewer (4 at 16,384 columns, 2 at
        # 32,768, one from 65,536 on).
        self.kb_width: int = widths.outer(self.kb, self.ci_width)
        small = widths.small
        if small and self.kb <= small[0] and self.ci <= small[1]:
            self.kb_width, self.ci_width = small

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in self.family.dims)

    @property
    def splits_layouts(self) -> bool:
        """True when every block holds the whole inner extent (and a run of outer lanes)."""
        return self.split_dim in self.family.outer

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """Shape of one (full) block in the cube: the HDF5 chunk shape."""
        varying = self.family.varying
        split = varying.index(self.split_dim)
        var = [1] * split + [self.rows] + [self.sizes[d] for d in varying[split + 1 :]]
        return (1,) * len(self.family.structural) + tuple(var)

    def tasks(self) -> Iterator[tuple[int, ...]]:
        """Every structural index tuple, in cube order."""
        return itertools.product(*(range(self.sizes[d]) for d in self.family.structural))

    def blocks(self) -> tuple[Block, ...]:
        """All blocks in a fixed order (the order ids refer to); computed once."""
        if self._blocks is None:
            self._blocks = tuple(self._cut())
        return self._blocks

    def _cut(self) -> list[Block]:
        varying = self.family.varying
        split = varying.index(self.split_dim)
        outer = [self.sizes[d] for d in varying[:split]]
        along, trailing = self.sizes[self.split_dim], [self.sizes[d] for d in varying[split + 1 :]]
        out: list[Block] = []
        for task in self.tasks():
            for prefix in itertools.product(*(range(n) for n in outer)):
                for j in range(0, along, self.rows):
                    slab = tuple(slice(p, p + 1) for p in prefix)
                    slab += (slice(j, min(j + self.rows, along)),)
                    slab += tuple(slice(0, n) for n in trailing)
                    out.append(Block(len(out), task, slab, len(self.family.outer)))
        return out


Copy = Callable[[Any, Callable[[], Any]], Any]
"""A block adapter's way to its device (the dispatcher's): ``copy(key, make)`` is the device copy of the host
value ``make()`` known as ``key``, sent once (``key`` None: sent each time, not kept)."""


def owner(block: Block, count: int) -> int:
    """The process (of ``count``) whose share ``block`` is under ``--distributed``: ``index % count``, the one
    rule every shared job (a sweep's shards, a reduction's and a plan's shares) cuts by."""
    return block.index % count


def share_of(pid: int, count: int) -> Callable[[Block], bool]:
    """Whether a block is process ``pid``'s (of ``count``): its :func:`owner`."""
    return lambda b: owner(b, count) == pid
