"""Checkpoint files: named arrays and a few attributes, written whole and atomically, read back only if intact.

A reduced sweep (:mod:`sweep.io.reduced`) and a plan (:mod:`sweep.io.plan_checkpoint`) keep their state in
``OUT.partial`` this way: written to a new file of its own (:func:`~sweep.io.paths.new_temporary`: never a
link or a user's file), then renamed over the checkpoint, with the grid's fingerprint and a CRC-32 of
everything it restores (a header text, then every array by name, dtype and shape), so a changed byte is
refused on ``--resume``, not resumed into another result.
"""

import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.errors import InputError, reason
from netsweep_jax.sweep.io.integrity import HDF5_ERRORS
from netsweep_jax.sweep.io.paths import Claim, new_temporary

CHECKPOINT_BLOCKS = 16
"""Blocks a job that accumulates (a --reduce sweep, a plan's searches) merges between two checkpoints."""

Arrays = Mapping[str, npt.NDArray[Any]]


def is_checkpoint(attrs: Mapping[str, Any]) -> bool:
    """Whether a file's global attributes ``attrs`` are a checkpoint's (:func:`write`'s), not a cube's."""
    return {"checksum", "grid_fingerprint"} <= set(attrs) and "format" not in attrs


def checksum(header: str, arrays: Arrays) -> int:
    """CRC-32 over what a checkpoint restores: ``header``, then every array by name (sorted)."""
    crc = zlib.crc32(header.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        crc = zlib.crc32(name.encode() + str(a.dtype).encode() + str(a.shape).encode(), crc)
        crc = zlib.crc32(a.tobytes(), crc)
    return crc


def write(
    path: Path,
    fingerprint: str,
    attrs: Mapping[str, Any],
    arrays: Arrays,
    header: str,
    claim: Claim | None = None,
) -> None:
    """``arrays`` (names may hold ``/``: groups) and ``attrs`` to a new file, renamed over ``path`` (held by
    ``claim``, the run's lock on it, before it gets the name)."""
    tmp = new_temporary(path)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["grid_fingerprint"] = fingerprint
            f.attrs.update(attrs)
            f.attrs["checksum"] = checksum(header, arrays)
            for name, a in arrays.items():
                f[name] = a
        if claim is not None:
            claim.replace(tmp)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # this run's own name


def read(path: Path, fingerprint: str, header: Any, made_for: str, result: str) -> tuple[dict, dict]:
    """(attributes, arrays) of the checkpoint at ``path`` if it was made for ``fingerprint`` and holds what its
    checksum says; ``header(attrs)`` is the header text :func:`write` was given. Refusals name ``made_for``
    (what another checkpoint was made for) and ``result`` (what resuming a damaged one would give)."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("grid_fingerprint") != fingerprint:
                raise InputError(
                    f"{path}: made for another {made_for}; rerun with the same options, or --force",
                    param="resume",
                )
            attrs = dict(f.attrs)

            def take(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset):
                    arrays[name] = obj[...]

            f.visititems(take)
            text = header(attrs)
    except InputError:
        raise
    except HDF5_ERRORS as e:
        raise InputError(
            f"{path}: not a readable checkpoint ({reason(e)}); rerun with --force", param="resume"
        ) from None
    recorded = attrs.get("checksum")
    if recorded is None or int(recorded) != checksum(text, arrays):
        raise InputError(
            f"{path}: the checkpoint is damaged (its checksum does not match what it holds); "
            f"resuming would give a wrong {result}: rerun with --force to start over",
            param="resume",
        )
    return attrs, arrays
