"""Layout sweeps: large transformers over TP x PP x CP x EP x DP layouts and networks, evaluated in blocks.

A :class:`LayoutGrid` is the outer product of its dims (:mod:`sweep.core.layout_axes`),
in two groups: the *outer* dims (what is trained and what it runs on: model, GPU,
GPU count, network, ...) and the *layout* dims (dp, tp, pp, cp, ep, micro-batch,
schedule, recompute, sequence parallelism, ZeRO), the ones ``sweep plan`` searches.
A block is ``R`` outer cells by ``C`` layouts, cut by the engine's one blocking
(:mod:`sweep.engine.blocks`): the host hands the device one small table of the cells
(their dims, model shape, GPU, precision) and one of the layouts (their dims), and the
device crosses them, so the work per block on the host grows with R + C while the
device's grows with R x C. Small blocks share one shape (8 x 8,192), large ones are padded
to within 12.5% of their layouts (:func:`sweep.engine.blocks.layout_columns`), so a sweep
compiles once and sweeps of similar sizes share it.

Values stored as 0 in ``gpus`` / ``dp`` mean "derived" (gpus = tp pp cp dp, or
dp = gpus / (tp pp cp)); 0 in ``nvlink_domain``, ``nvlink_bw``, ``gpus_per_node``,
``nics_per_node`` or ``bandwidth`` means "the GPU preset's system" (resolved per
cell, so a sweep over GPUs gets each one's own links), as the ``assumed`` line says.

The family's names, importable from here, live in:

- :mod:`sweep.engine.layout_grid`: :class:`LayoutGrid`, ``precision_bytes``, :func:`parse_schedule`.
- :mod:`sweep.engine.layout_options`: :func:`make_layout_grid`, a grid from the user's options.
- :mod:`sweep.engine.layout_blocks`: :class:`BlockTables`, the host tables of a block.
- :mod:`sweep.engine.layout_evaluation`: :func:`evaluate_layouts_arrays` and :func:`layouts_dataset`
  (every output kept), :func:`best_layouts` (the best layouts of each outer cell, kept on the device).
- :mod:`sweep.engine.layout_rows`: :class:`LayoutRow`, :func:`evaluate_rows` and :func:`rows_status`, measured runs one per row.
"""

from netsweep_jax.sweep.engine.blocks import MAX_CELLS_IN_MEMORY
from netsweep_jax.sweep.engine.layout_blocks import (
    BLOCK_CONFIGS,
    BlockTables,
    straggle_table,
)
from netsweep_jax.sweep.engine.layout_evaluation import (
    best_layouts,
    check_in_memory,
    evaluate_layouts_arrays,
    layouts_dataset,
    merge_searches,
)
from netsweep_jax.sweep.engine.layout_grid import LayoutGrid, parse_schedule, precision_bytes
from netsweep_jax.sweep.engine.layout_options import make_layout_grid
from netsweep_jax.sweep.engine.layout_rows import ROWS_BLOCK, LayoutRow, evaluate_rows, rows_status

__all__ = [
    "BLOCK_CONFIGS",
    "MAX_CELLS_IN_MEMORY",
    "precision_bytes",
    "ROWS_BLOCK",
    "BlockTables",
    "LayoutGrid",
    "LayoutRow",
    "best_layouts",
    "check_in_memory",
    "evaluate_layouts_arrays",
    "evaluate_rows",
    "rows_status",
    "layouts_dataset",
    "make_layout_grid",
    "merge_searches",
    "parse_schedule",
    "straggle_table",
]
