"""netsweep: is the network the bottleneck of my distributed training?

Public API: :func:`evaluate`, :func:`load_profile`, :func:`builtin_profile`,
:func:`builtin_names`, :class:`Profile`. Imported lazily, so ``import sweep`` (and
the CLI's ``--help``) does not load JAX until something is computed.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "sweep.api",
    "builtin_names": "sweep.builtin",
    "builtin_profile": "sweep.builtin",
    "Profile": "sweep.profile",
    "load_profile": "sweep.profile",
}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweep' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
