"""netsweep: is the network the bottleneck of my distributed training?

Public API: :func:`evaluate`, :func:`load_profile`, :func:`builtin_profile`.
"""

from sweep.api import evaluate
from sweep.builtin import builtin_names, builtin_profile
from sweep.profile import Profile, load_profile

__version__ = "0.1.0"
__all__ = ["Profile", "builtin_names", "builtin_profile", "evaluate", "load_profile", "__version__"]
