"""netsweep: is the network the bottleneck of my distributed training?

Public API, imported lazily so that ``import netsweep_jax.sweep`` (and the CLI's
``--help``) does not load JAX until something is computed:

- :func:`evaluate`: metrics over the outer product of axis values (an ``xarray.Dataset``).
- :func:`solve`: the value of one axis that reaches a target scaling factor (``sweep need``).
- :func:`calibrate`: fit utilization, latency, ... to measured runs (``sweep calibrate``).
- :func:`validate`: the held-out protocol on published or your own runs (``sweep validate``).
- :func:`compare`: fix the transport or compress? (``sweep compare``).
- :func:`open_cube`: a cube written by ``sweep grid`` as an ``xarray.Dataset``.
- :func:`evaluate_layouts`, :func:`plan`: large models, every layout or the best ones (``sweep grid --model
  llama3-70b ...``, ``sweep plan``).
- :class:`Profile`, :func:`load_profile`, :func:`builtin_profile`, :func:`builtin_names`.
- :class:`InputError` (a ``ValueError``: bad input, its message naming the keyword) and :class:`Damaged` (a
  ``RuntimeError``: a file netsweep wrote no longer holds what it wrote), what the functions above raise.

Everything else is private: the rooms below (``core``, ``model``, ``engine``, ``io``,
``analysis``, ``cli``) may change between releases.
"""

import importlib

from netsweep_jax.sweep.core.version import VERSION as __version__

# name -> the module that defines it. The facades live in :mod:`netsweep_jax.sweep.api` (which imports
# JAX); profiles come straight from the model floor, so that reading a profile does not load JAX.
_EXPORTS = {
    "evaluate": "netsweep_jax.sweep.api",
    "solve": "netsweep_jax.sweep.api",
    "calibrate": "netsweep_jax.sweep.api",
    "validate": "netsweep_jax.sweep.api",
    "compare": "netsweep_jax.sweep.api",
    "open_cube": "netsweep_jax.sweep.api",
    "evaluate_layouts": "netsweep_jax.sweep.large_models",
    "plan": "netsweep_jax.sweep.large_models",
    "Profile": "netsweep_jax.sweep.model.profile",
    "load_profile": "netsweep_jax.sweep.model.profile",
    "builtin_profile": "netsweep_jax.sweep.model.builtin",
    "builtin_names": "netsweep_jax.sweep.model.builtin",
    "InputError": "netsweep_jax.sweep.core.errors",
    "Damaged": "netsweep_jax.sweep.core.errors",
}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'netsweep_jax.sweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
