"""Floor 3: grids evaluated in memory. The grid spec, the blocking, the host input builder, the
jitted module, dispatch to devices, on-device reductions, :func:`evaluate`.

Imports the kernels, core and model.
"""
