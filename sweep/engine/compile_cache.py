"""JAX's persistent compilation cache for the CLI: a second run of the same shapes compiles nothing.

The cache lives in ``$NETSWEEP_CACHE_DIR``, else ``$XDG_CACHE_HOME/netsweep/jax``, else
``~/.cache/netsweep/jax``; ``--no-compile-cache`` turns it off for one command. Every
compiled kernel is kept (JAX's default keeps only compiles longer than a second,
and netsweep's take a fraction of one).
"""

import os
from pathlib import Path

import jax


def directory() -> Path:
    """Where compiled kernels are kept."""
    if os.environ.get("NETSWEEP_CACHE_DIR"):
        return Path(os.environ["NETSWEEP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "netsweep" / "jax"


def enable() -> Path | None:
    """Turn the persistent cache on for this process (a cache that cannot be made is skipped)."""
    path = directory()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
