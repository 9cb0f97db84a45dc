"""Pure JAX kernels for the layer-overlap recurrence of data-parallel training.

No I/O, no printing, no ``jax.jit`` here: the engine in :mod:`sweep.engine` jits
fixed-shape blocks around these functions. Everything swept is a traced array.
"""

from kernels.collectives import COLLECTIVES, collective_coefficients, reduce_time
from kernels.overlap import block_metrics, last_bucket_end, metrics, smooth_max

__all__ = [
    "COLLECTIVES",
    "block_metrics",
    "collective_coefficients",
    "last_bucket_end",
    "metrics",
    "smooth_max",
    "reduce_time",
]
