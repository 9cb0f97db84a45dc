"""Floor 4: files. Output paths, provenance, the cube format and its writer and reader, jobs that
sweep to disk (local and distributed), measurement files, profile sources.

Imports core, model and engine.
"""
