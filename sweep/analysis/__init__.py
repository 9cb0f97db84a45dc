"""Floor 5: questions answered from sweeps: the paper's grid, ``need``, ``calibrate``, ``validate``,
``compare``, plots.

Imports every floor below it.
"""
