"""The release of netsweep-jax, defined once (the package, provenance attributes and pyproject read it)."""

VERSION = "0.1.0"
