"""Cost of one element-wise add on the GPU: the (bytes, seconds) table for reduce(x).

The default table models a V100: a fixed kernel-launch cost of 9.5 us, plus the
HBM traffic of an add (read two buffers, write one: 3 bytes moved per byte) at an
achieved 830 GB/s (92% of the V100's 900 GB/s). That is
``t(x) = max(9.5e-6, 9.5e-6 + 3x / 830e9)``, tabulated at powers of two from
64 B to 1 GiB. It agrees with measured V100 vector-add timings within ~10% above
2 MiB; below that the launch cost dominates. A sweep of a workload on a newer GPU
takes the same table at that GPU's HBM rate (the same 92%): ``t(x) = 9.5e-6 + 3x /
(0.922 hbm)`` (:func:`default_table`), so that the reduction does not cap an H100's or
a GB200's all-reduce at the V100's 553 GB/s of bus bandwidth (2 x 830 / 3).

A user table is a text file of ``bytes,seconds`` lines (the paper's
``cuda_vec_add.log`` format), increasing in bytes.
"""

import math
from pathlib import Path

import numpy as np

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.textfile import read_lines
from netsweep_jax.sweep.core.values import decimal

ADD_LAUNCH_S = 9.5e-6  # one vector-add kernel launch on a V100
ADD_HBM_BYTES_PER_S = 830e9  # achieved by that add: 92% of the V100's 900 GB/s
V100_HBM_BYTES_PER_S = 900e9


def default_table(hbm: float = V100_HBM_BYTES_PER_S) -> tuple[np.ndarray, np.ndarray]:
    """The model table of a GPU whose HBM moves ``hbm`` bytes/s (default the V100's): ([T] bytes, [T] seconds),
    float64. The add achieves the V100's measured fraction of it, 830/900, after the same launch cost: on a GPU
    of faster memory the reduction is that much faster (an H100's 3.35 TB/s: 3.7 times)."""
    nbytes = 2.0 ** np.arange(6, 31)
    rate = ADD_HBM_BYTES_PER_S * (hbm / V100_HBM_BYTES_PER_S)  # the V100's own: exactly 830e9
    return nbytes, ADD_LAUNCH_S + 3.0 * nbytes / rate


MAX_TABLE_SECONDS = (
    1e4  # one vector add the table measured (past its last row the cost grows along its slope)
)


def read_table(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a ``bytes,seconds`` table (a first line ``bytes,seconds``, its header, skipped); errors name the file
    and line."""
    lines = read_lines(path, "reduce-cost file", "reduce_table")  # before Path(): '' names no file
    path = Path(path)
    nbytes: list[float] = []
    seconds: list[float] = []
    for lineno, text in enumerate(lines, start=1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        cols = text.split(",")
        if not nbytes and [c.strip().lower() for c in cols] == [
            "bytes",
            "seconds",
        ]:  # the header (a hunt: refused)
            continue
        if len(cols) != 2:
            raise InputError(f"{where(path, lineno)}: expected 2 columns bytes,seconds, got {len(cols)}")
        try:
            b, s = decimal(cols[0]), decimal(cols[1])
        except ValueError:
            raise InputError(f"{where(path, lineno)}: {text.strip()!r} is not two numbers") from None
        if not (math.isfinite(b) and math.isfinite(s) and b >= 0 and 0 <= s <= MAX_TABLE_SECONDS):
            raise InputError(
                f"{where(path, lineno)}: bytes must be finite and >= 0, seconds in [0, {MAX_TABLE_SECONDS:g}]"
            )
        if nbytes and b <= nbytes[-1]:
            raise InputError(f"{where(path, lineno)}: bytes {b:g} must increase down the file")
        nbytes.append(b)
        seconds.append(s)
    if not nbytes:
        raise InputError(f"{path}: reduce-cost table has no rows")
    return np.array(nbytes), np.array(seconds)
