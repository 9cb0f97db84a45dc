"""A cube's integrity: the checksums that make a killed sweep resumable, their verification,
and whether HDF5 can read a file at all.

Every finished block carries a CRC-32 of its data (:func:`checksum`, in the cube's ``progress``
group); :func:`verified_blocks` recomputes them and marks a damaged block to be computed again.
Every other dataset written at creation (coordinates, profiles, the reduce-cost table) has its
CRC-32 recorded too (:func:`static_checksums`), which :func:`verify_static` checks. A file that
starts as HDF5 but whose metadata HDF5 cannot read is :func:`damage`'s; one whose bytes crash
HDF5 itself is :func:`crashes_hdf5`'s, tried in a forked child.

A cube written whole (:func:`sweep.io.cube.write_dataset`: a plan, a ``--reduce`` result, ``need --out``) has
no blocks: the CRC-32 of every dataset it holds, data variables included, is recorded when it is written
(:func:`record_whole`), and checked the same way. A reader checks what it reads (:func:`check_read`): the
blocks a selection touches and the coordinates, or every dataset of a cube written whole.
"""

import json
import numbers
import os
import sys
import zlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.errors import Damaged, InputError, reason
from netsweep_jax.sweep.core.families import Family, family_of
from netsweep_jax.sweep.engine.blocks import MAX_BLOCK_CONFIGS, Blocking
from netsweep_jax.sweep.io.paths import HDF5_SIGNATURE

HDF5_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError)  # what h5py raises on damaged metadata


def stored(f: h5py.File) -> list[str]:
    """The output variables a cube file holds, in cube order."""
    return family_of(f.attrs).in_cube_order(f)


def checksum(arrays: Mapping[str, npt.NDArray[Any]], family: Family) -> int:
    """CRC-32 over a block's data, variable by variable in the cube order of ``family``."""
    crc = 0
    for name in family.in_cube_order(arrays):
        crc = zlib.crc32(np.ascontiguousarray(arrays[name]).data.cast("B"), crc)  # no copy
    return crc


def verified_blocks(
    f: h5py.File, blocking: Blocking, only: Collection[int] | None = None
) -> tuple[list[int], list[int]]:
    """(finished blocks whose data match their checksum, indices of the damaged ones), of every block or of
    those in ``only``.

    A damaged block (its bytes changed, or flagged done without its data) is marked
    not done when the file is writable, so that the sweep computes it again.
    """
    done = np.flatnonzero(f["progress/blocks_done"][...]).tolist()
    if only is not None:
        done = [i for i in done if i in only]
    sums = f["progress/block_checksum"][...]
    family = family_of(f.attrs)
    good: list[int] = []
    damaged: list[int] = []
    for i in done:
        region = blocking.blocks()[i].region()
        try:
            ok = checksum({name: f[name][region] for name in stored(f)}, family) == sums[i]
        except HDF5_ERRORS:  # HDF5 cannot read the chunk
            ok = False
        (good if ok else damaged).append(i)
    if damaged and f.mode == "r+":
        for i in damaged:
            f["progress/blocks_done"][i] = 0
        f.flush()
    return good, damaged


def _blocking_of(f: h5py.File) -> Blocking:
    """The blocks a cube written block by block was cut into."""
    family = family_of(f.attrs)
    sizes = dict(zip(family.dims, f[stored(f)[0]].shape))
    return Blocking(sizes, int(f.attrs["block_configs"]), family)


def record_damage(f: h5py.File) -> tuple[str | None, Blocking | None]:
    """Why a cube's record of how it was written cannot be what netsweep wrote (None: it can), and the blocks
    it records (None for a cube written whole or one made before netsweep recorded its progress): the
    checksums of its datasets a JSON object of CRC-32s; for a cube written block by block, its dims its
    family's, its ``block_configs`` a number of configurations, and one checksum and one done flag for each of
    its blocks. A flipped bit there had been a traceback (an index past the blocks) or blamed an option never
    given (``--block-configs 0``), a hunt."""
    if "progress" not in f:
        return None, None
    try:
        recorded = f["progress"].attrs.get("checksums")
        if recorded is not None and not _checksum_record(recorded):
            return "progress@checksums is not a record of checksums", None
        if written_whole(f) or ("progress/block_checksum" not in f and "progress/blocks_done" not in f):
            return None, None
        family = family_of(f.attrs)
        names = stored(f)
        if not names or any(d not in f for d in family.dims) or f[names[0]].ndim != len(family.dims):
            return f"its datasets are not a {family.name} cube's: its family attribute?", None
        configs = f.attrs.get("block_configs")
        if not isinstance(configs, numbers.Integral) or not 1 <= int(configs) <= MAX_BLOCK_CONFIGS:
            return f"block_configs {configs} is not a number of configurations", None
        blocking = _blocking_of(f)
        blocks = len(blocking.blocks())
        for name in ("block_checksum", "blocks_done"):
            if f"progress/{name}" not in f or f[f"progress/{name}"].shape != (blocks,):
                return f"progress/{name} does not hold one entry a block ({blocks} of them)", None
    except HDF5_ERRORS as e:
        return reason(e), None
    return None, blocking


def record_damage_file(path: str | Path) -> str | None:
    """:func:`record_damage`'s why of the cube at ``path`` (None where HDF5 cannot open it: :func:`damage`'s)."""
    try:
        with h5py.File(path, "r") as f:
            return record_damage(f)[0]
    except HDF5_ERRORS:
        return None


def _checksum_record(text: Any) -> bool:
    """Whether ``text`` is a JSON object of dataset names and CRC-32s (:func:`static_checksums`')."""
    try:
        record = json.loads(text)
    except (TypeError, ValueError):
        return False
    return isinstance(record, dict) and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32 for v in record.values()
    )


def refuse_damaged_record(f: h5py.File, path: str | Path) -> Blocking | None:
    """:func:`record_damage`'s blocks, or :class:`~sweep.core.errors.Damaged` where it finds the record changed."""
    why, blocking = record_damage(f)
    if why is not None:
        raise Damaged(record_damaged(path, why))
    return blocking


def record_damaged(path: str | Path, why: str) -> str:
    """The one line a cube whose record changed is refused with (:func:`record_damage`'s ``why``)."""
    return f"{path}: damaged ({why}): run the command that made it again"


def verify(path: str | Path) -> tuple[int, int, int]:
    """(finished blocks, damaged blocks, all blocks) of a cube or partial cube on disk; a cube written whole
    is one block (:func:`record_whole`)."""
    with h5py.File(path, "r") as f:
        blocking = refuse_damaged_record(f, path)
        if written_whole(f):
            return 1, int(bool(verify_static(f))), 1
        if blocking is None:
            if "reduced" in f.attrs:
                raise InputError(
                    f"{path}: a reduced cube made before netsweep recorded its checksums; "
                    f"it has nothing to verify against"
                )
            raise InputError(f"{path}: has no block checksums (not a cube written by sweep grid)")
        good, damaged = verified_blocks(f, blocking)
        return len(good) + len(damaged), len(damaged), len(blocking.blocks())


def touched(blocking: Blocking, positions: Mapping[str, npt.NDArray[np.integer]]) -> set[int]:
    """The blocks of ``blocking`` holding any of the cells a selection reads: ``positions[dim]``, the indices it
    keeps along ``dim`` (every index of a dim not named)."""
    dims = blocking.family.dims
    out = set()
    for block in blocking.blocks():
        region = block.region()
        if all(
            np.any((positions[d] >= s.start) & (positions[d] < s.stop))
            for d, s in zip(dims, region)
            if d in positions
        ):
            out.add(block.index)
    return out


def check_read(
    path: str | Path, positions: Mapping[str, npt.NDArray[np.integer]] | None = None
) -> tuple[int, int]:
    """Refuse (:class:`~sweep.core.errors.Damaged`) to read a cube whose checksums say it changed since it was
    written: the coordinates and profiles, and the finished blocks that hold the cells a selection reads
    (``positions``: :func:`touched`'s; None: every block), or every dataset of a cube written whole. A cube made
    before checksums were recorded is read as it is. Returns (blocks read not computed yet, blocks read): an
    unfinished run's partial cube holds NaN there, no result; (0, 0) for a cube written whole or one that records
    no progress."""
    with h5py.File(path, "r") as f:
        blocking = refuse_damaged_record(f, path)
        changed = verify_static(f) if "progress" in f else None
        if changed:
            raise Damaged(
                f"{path}: damaged ({', '.join(changed)} changed since it was written; "
                f"sweep show --verify says more): run the command that made it again"
            )
        if blocking is None:  # written whole, or before netsweep recorded its blocks
            return 0, 0
        wanted = set(range(len(blocking.blocks()))) if positions is None else touched(blocking, positions)
        _, damaged = verified_blocks(f, blocking, None if positions is None else wanted)
        done = f["progress/blocks_done"][...]
    if damaged:
        raise Damaged(
            f"{path}: damaged ({len(damaged)} block{'s' if len(damaged) > 1 else ''} of what was asked for no "
            f"longer match{'' if len(damaged) > 1 else 'es'} {'their' if len(damaged) > 1 else 'its'} checksum; "
            f"sweep show --verify checks every block): run the sweep again"
        )
    return sum(1 for i in wanted if not done[i]), len(wanted)


def _crc_bytes(values: Any) -> bytes:
    """Bytes to checksum for a dataset's values or an attribute (strings as UTF-8)."""
    a = np.asarray(values)
    if a.dtype.kind in "OUS":
        return b"\x00".join(v if isinstance(v, bytes) else str(v).encode() for v in a.ravel())
    return np.ascontiguousarray(a).tobytes()


def static_checksums(f: h5py.File, every: bool = False) -> dict[str, int]:
    """CRC-32 of every dataset a cube holds besides its data variables (unless ``every``) and resume record:
    coordinates, profiles (their columns, and each profile's attributes with its SHA-256, under
    ``<group>@attrs``), the reduce-cost table. Written at creation; :func:`verify_static` recomputes them."""
    sums: dict[str, int] = {}
    variables = () if every else family_of(f.attrs).variables

    def visit(name: str, obj: Any) -> None:
        if name.startswith("progress") or name in variables:
            return
        if isinstance(obj, h5py.Dataset):
            sums[name] = zlib.crc32(_crc_bytes(obj[...]))
        elif name.startswith("profiles/"):
            crc = 0
            for key in sorted(obj.attrs):
                crc = zlib.crc32(key.encode() + b"=" + _crc_bytes(obj.attrs[key]), crc)
            sums[f"{name}@attrs"] = crc

    f.visititems(visit)
    return sums


def verify_static(f: h5py.File) -> list[str] | None:
    """The coordinates and profile datasets whose checksum no longer matches (None: a cube made before
    they were recorded)."""
    recorded = f["progress"].attrs.get("checksums")
    if recorded is None:
        return None
    try:
        expected = json.loads(recorded)
    except (TypeError, ValueError):
        return ["progress@checksums"]
    try:
        now = static_checksums(f, every=written_whole(f))
    except HDF5_ERRORS as e:
        return [f"(unreadable: {reason(e)})"]
    return sorted(name for name in expected.keys() | now.keys() if expected.get(name) != now.get(name))


WHOLE = "whole"
"""The ``written`` attribute of a cube's ``progress`` group when it was written whole, with no blocks."""


def record_whole(f: h5py.File) -> None:
    """Record the CRC-32 of every dataset of a cube written whole (data variables included), in its ``progress``
    group as a sweep's cube records its coordinates' (:func:`verify_static` checks them)."""
    progress = f.require_group("progress")
    progress.attrs["written"] = WHOLE
    progress.attrs["checksums"] = json.dumps(static_checksums(f, every=True))


def written_whole(f: h5py.File) -> bool:
    """Whether ``f`` is a cube written whole (:func:`record_whole`)."""
    return "progress" in f and f["progress"].attrs.get("written") == WHOLE


def verify_static_file(path: str | Path) -> list[str] | None:
    """:func:`verify_static` of the cube at ``path``."""
    with h5py.File(path, "r") as f:
        if "progress" not in f:
            return None
        return verify_static(f)


def damage(path: str | Path) -> str | None:
    """Why HDF5 cannot read a file that starts as an HDF5 file does (damaged metadata: every object, attribute
    and coordinate is read; data variables only opened), or None: it reads, or it is not an HDF5 file (nor a
    regular file: a FIFO is never opened, which would wait for a writer)."""
    if not Path(path).is_file():
        return None
    try:
        with open(path, "rb") as fh:
            if fh.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
                return None
    except OSError:
        return None

    def visit(f: h5py.File, obj: Any) -> None:
        attrs = dict(obj.attrs)
        if isinstance(obj, h5py.Dataset) and obj.chunks is None:
            obj[...]
        # the dims a variable is attached to, by object reference (a flipped bit in one pointed past the file:
        # a KeyError from the reader, a traceback, a hunt). Each reference's target is read for its type
        # (H5Rget_obj_type reads the object's header without opening it): a plan's cube holds some 800
        # references, and h5py's objects for them took 66 ms of every command that reads a cube, HDF5's
        # dereference 21 ms (2026-12-06), reading the type 1 ms (2026-12-07).
        for refs in attrs.get("DIMENSION_LIST", ()):
            for ref in refs:
                # a null reference (zeroed bytes) has no type, where h5py's f[ref] raised (a review)
                if h5py.h5r.get_obj_type(ref, f.id) is None:
                    raise ValueError("Invalid HDF5 object reference")

    try:
        with h5py.File(path, "r") as f:
            dict(f.attrs)
            f.visititems(lambda name, obj: visit(f, obj))
    except HDF5_ERRORS as e:
        return reason(e)
    return None


PROBE_TIMEOUT_S = 60.0  # a child still reading after this long is stopped, and the read goes on as it would


def crashes_hdf5(path: str | Path) -> bool:
    """Whether reading ``path``'s metadata (:func:`damage`'s walk) crashes HDF5 itself: some damaged bytes
    make the library read out of bounds (a segmentation fault no Python code can catch). Tried first in a
    forked copy of this process, whose death by a signal says so. On Linux only (elsewhere False): macOS may
    end a forked child of a process that has started system frameworks, which would read as a crash."""
    if not sys.platform.startswith("linux") or not Path(path).is_file():
        return False
    import contextlib
    import signal
    import warnings

    with warnings.catch_warnings():  # JAX warns of forking a threaded process: the child only reads a file
        warnings.simplefilter("ignore", RuntimeWarning)
        pid = os.fork()
    if pid == 0:  # the child: walk, then leave at once (no teardown, no handlers of the parent's)
        try:
            import faulthandler
            import resource

            faulthandler.disable()  # a crash here is an answer, not a report
            resource.setrlimit(
                resource.RLIMIT_CORE, (0, 0)
            )  # and leaves no core file in the user's directory
            damage(path)
        finally:
            os._exit(0)
    status = None
    try:
        status = _child_status(pid, PROBE_TIMEOUT_S)
    finally:  # still running past the timeout, or the wait interrupted (Ctrl-C): stopped and reaped, never left
        if status is None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):  # reaped as the wait was stopped
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    return status is not None and os.WIFSIGNALED(status)


def _child_status(pid: int, timeout_s: float) -> int | None:
    """The exit status of child ``pid`` once it has ended, or None if it is still running after ``timeout_s``.
    Waited for on a process file descriptor (Linux 5.3 and later), woken the moment it ends; on an older kernel
    polled every 2 ms (a poll's sleeps had added about 1 ms to every command that reads a cube)."""
    import select
    import time

    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # a Python built without it, or a kernel before 5.3
        handle = None
    if handle is not None:
        # poll(), not select(): a descriptor past 1023 (a process with many files open) is out of select's range
        waiting = select.poll()
        waiting.register(handle, select.POLLIN)
        try:
            ended = waiting.poll(timeout_s * 1000)
        finally:
            os.close(handle)
        return os.waitpid(pid, 0)[1] if ended else None
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            return None
        time.sleep(0.002)
