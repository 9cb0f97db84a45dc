"""Floor 2: what is computed. Profiles, architectures and GPUs, fusion, collectives, compressors, the
cost of adding gradients.

Imports only :mod:`netsweep_jax.sweep.core`.
"""
