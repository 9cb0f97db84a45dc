"""Floor 1: the vocabulary (dims, axes, outputs, options), the error type, value syntax, text files, interrupts.

Imports nothing of netsweep's.
"""
