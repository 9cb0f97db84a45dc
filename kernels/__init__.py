"""Pure JAX kernels for the layer-overlap recurrence of data-parallel training.

No I/O, no printing, no ``jax.jit`` here: :mod:`sweep.engine.compiled` jits fixed-shape
entry points around these functions. Everything swept is a traced array.
The Pallas implementation (:mod:`kernels.pallas_overlap`) is imported only by the
engine when it is asked for.
"""

from netsweep_jax.kernels.bisect import boundary
from netsweep_jax.kernels.overlap import (
    PAPER,
    Buckets,
    Config,
    Features,
    Workers,
    iteration,
    on_grid,
    on_rows,
    on_table,
    smooth_max,
)

__all__ = [
    "PAPER",
    "Buckets",
    "Config",
    "Features",
    "Workers",
    "boundary",
    "iteration",
    "on_grid",
    "on_rows",
    "on_table",
    "smooth_max",
]
