"""Where a result came from: the global attributes every written cube carries."""

import datetime
import sys

from netsweep_jax.sweep.core.version import VERSION


def device_kind() -> str:
    """``platform:device kind xcount`` of this process's JAX devices."""
    import jax  # here, not above: reading a cube (show, select) does not load JAX

    d = jax.devices()[0]
    return f"{d.platform}:{d.device_kind} x{jax.device_count()}"


def provenance(command: str) -> dict[str, str]:
    """Tool and library versions, the command line, the device and the creation time."""
    import jax  # as in device_kind

    return {
        "netsweep_version": VERSION,
        "command": command,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "jax_version": jax.__version__,
        "device_kind": device_kind(),
        "python": sys.version.split()[0],
    }
