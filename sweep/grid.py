"""A sweep grid: the profiles, the axes and the fixed settings of one sweep.

The grid's dimension order is :data:`sweep.axes.DIMS` and is the cube's.
"""

import dataclasses
import hashlib
import json

import numpy as np

from kernels import COLLECTIVES
from sweep.axes import DIMS, NUMERIC_AXES, coerce_axis
from sweep.builtin import builtin_profile
from sweep.errors import InputError
from sweep.profile import Profile
from sweep.reduce_cost import default_table

DEFAULT_INTRA_GBPS = 1200.0  # NVLink-class intra-node bandwidth (V100 DGX-1: ~150 GB/s)


@dataclasses.dataclass(frozen=True)
class Grid:
    """Everything that determines a sweep's results.

    Attributes:
      profiles: tuple of :class:`~sweep.profile.Profile`, the ``model`` axis.
      collectives: tuple of collective names, the ``collective`` axis.
      values: dict axis name -> float64 [n] values in stored units (numeric axes).
      reduce_table: ([T] bytes, [T] seconds) reduce-cost table.
      reduce_source: where the table came from (text).
      intra_bandwidth: intra-node bandwidth (Gbit/s) for ``hierarchical``.
      dtype: ``"float32"`` or ``"float64"``.
    """

    profiles: tuple
    collectives: tuple
    values: dict
    reduce_table: tuple
    reduce_source: str = "default V100 model"
    intra_bandwidth: float = DEFAULT_INTRA_GBPS
    dtype: str = "float32"

    @property
    def shape(self):
        return tuple(self.size_of(d) for d in DIMS)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def size_of(self, dim):
        if dim == "model":
            return len(self.profiles)
        if dim == "collective":
            return len(self.collectives)
        return len(self.values[dim])

    def coords(self):
        """dim -> coordinate values as typed (str array for model/collective)."""
        out = {"model": np.array([p.model for p in self.profiles]),
               "collective": np.array(self.collectives)}
        for d in DIMS[2:]:
            v = self.values[d]
            out[d] = v.astype(np.int64) if NUMERIC_AXES[d].integer else v
        return out

    def fingerprint(self):
        """SHA-256 of everything that determines the results (for --resume)."""
        payload = {
            "profiles": [p.content_hash() for p in self.profiles],
            "models": [p.model for p in self.profiles],
            "collectives": list(self.collectives),
            "values": {k: np.asarray(v).tolist() for k, v in sorted(self.values.items())},
            "reduce": [np.asarray(t).tolist() for t in self.reduce_table],
            "intra": self.intra_bandwidth,
            "dtype": self.dtype,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def make_grid(model, *, collective="ring", reduce_table=None, reduce_source=None,
              intra_bandwidth=DEFAULT_INTRA_GBPS, dtype="float32", **axes):
    """Build a validated :class:`Grid`.

    Args:
      model: a built-in name, a :class:`Profile`, or a sequence of either.
      collective: a name or sequence of names from :data:`kernels.COLLECTIVES`.
      reduce_table: ([T] bytes, [T] seconds) or None for the default V100 model.
      intra_bandwidth: Gbit/s, intra-node links (``hierarchical`` only).
      dtype: ``"float32"`` or ``"float64"``.
      **axes: numeric axes by name (``bandwidth`` is required; others default as in
        the CLI). Each is a number, a sequence, or a value-syntax string.
    """
    models = [model] if isinstance(model, (str, Profile)) else list(model)
    profiles = tuple(builtin_profile(m) if isinstance(m, str) else m for m in models)
    if not profiles:
        raise InputError("model: give at least one model or profile")
    names = [p.model for p in profiles]
    if len(set(names)) != len(names):
        raise InputError(f"model: names repeat ({', '.join(names)}); each profile needs its own name")
    collectives = (collective,) if isinstance(collective, str) else tuple(collective)
    for c in collectives:
        if c not in COLLECTIVES:
            raise InputError(f"--collective {c!r}: unknown; known: {', '.join(COLLECTIVES)}")
    unknown = set(axes) - set(NUMERIC_AXES)
    if unknown:
        raise InputError(f"unknown axis {sorted(unknown)[0]!r}; axes: {', '.join(NUMERIC_AXES)}")
    values = {}
    for name, spec in NUMERIC_AXES.items():
        values[name] = coerce_axis(name, axes.get(name, spec.default))
    if not (intra_bandwidth > 0):
        raise InputError(f"--intra-bw {intra_bandwidth:g}: intra-node bandwidth must be > 0 Gbit/s")
    if dtype not in ("float32", "float64"):
        raise InputError(f"dtype {dtype!r}: must be float32 or float64")
    table = default_table() if reduce_table is None else tuple(np.asarray(t, np.float64) for t in reduce_table)
    source = reduce_source or ("default V100 model" if reduce_table is None else "user table")
    return Grid(profiles, collectives, values, table, source, float(intra_bandwidth), dtype)
