"""Run a grid sweep into an HDF5 cube: output checks, resume, progress, atomic finish."""

import errno
import glob
import os
import re
import resource
import shutil
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import h5py

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import DiskFull, InputError
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.engine.blocks import Block, Blocking, share_of
from netsweep_jax.sweep.engine.dispatch import AnyGrid, check_kernel, default_block_configs, run
from netsweep_jax.sweep.engine.reductions import check_reduced_in_memory
from netsweep_jax.sweep.io import cube, integrity
from netsweep_jax.sweep.io.paths import (
    CUBE_SUFFIXES,
    all_or_nothing,
    held_open,
    holder,
    in_use,
    keep_partial,
    made_by_a_sweep,
    partial_path,
    regular_or_absent,
    remove_stale,
    stamped,
    writable_directory,
)
from netsweep_jax.sweep.io.provenance import provenance
from netsweep_jax.sweep.io.reduced import run_reduced
from netsweep_jax.sweep.io.writer import Arrays, BlockWriter

Advance = Callable[[int], None]
"""``advance(configs)``: called after each block computed, with its configuration count."""
Progress = Callable[[int, int], AbstractContextManager[Advance | None]]
"""``progress(total, done)``: a context manager factory yielding an :data:`Advance` (or None)."""
AfterBlock = Callable[[Block], None]
"""``after_block(block)``: called once each block is durably written (on the writer thread)."""
Summary = dict[str, Any]


def _nothing(block: Block) -> None:
    """The default :data:`AfterBlock`: nothing to do."""


def default_out(grid: AnyGrid, directory: str | Path = "results") -> Path:
    return stamped(grid.label(), ".h5", directory)


def check_output(out: str | Path, *, force: bool, resume: bool, default: bool) -> None:
    """Refuse an output that exists, is not a plain file, is being written by another run,
    cannot be written, or has nothing to resume."""
    out = Path(out)
    partial = partial_path(out)
    if resume and force:  # a checkpoint that cannot be resumed told the user to pass --force, which they had
        raise InputError(
            "and --force cannot go together: --resume finishes OUT.partial, --force starts over",
            param="resume",
        )
    for path in (out, partial):
        regular_or_absent(path)
    if out.suffix.lower() not in CUBE_SUFFIXES:
        raise InputError(
            f"{out}: unknown file type {out.suffix!r} for a cube; use one of {', '.join(CUBE_SUFFIXES)}",
            param="out",
        )
    if in_use(partial):
        raise InputError(
            f"{out}: another run is writing {partial}; wait for it or choose another --out", param="out"
        )
    if (
        resume and holder(partial) == "reading"
    ):  # --resume appends: HDF5 cannot while a reader holds it (a hunt)
        raise InputError(held_open(partial, "reading"), param="resume")
    if resume and not partial.exists():  # said before the directory is looked at: it may be the default's
        whole = f"; {out} exists (a finished run: --force runs it again)" if out.exists() else ""
        raise InputError(
            f"finds nothing to resume: {partial} does not exist{whole}{_stamped(out) if default else ''}"
            f"{_shards_left(out)}",
            param="resume",
        )
    writable_directory(out, create=not resume)  # missing folders are made; a refused --resume makes none
    if resume:
        if partial.stat().st_size == 0:
            raise InputError(
                f"{partial} is empty (the run stopped before writing anything); rerun with --force",
                param="resume",
            )
        if partial.stat().st_nlink > 1:
            raise InputError(
                f"{partial}: has other hard links; netsweep does not write through them "
                f"(copy it to a file of its own to resume it)",
                param="resume",
            )
        if out.exists():  # said before any work: the finished cube could not take the name
            raise InputError(
                f"{out} exists beside {partial}: a resumed run never replaces a file (--force would, but starts "
                f"over); move {out} away, then --resume",
                param="resume",
            )
        return
    # A file of the partial's name that no sweep made is said as that first: "--force" had been advised, then
    # refused (a hunt; a review: with the output there too).
    if partial.exists() and not made_by_a_sweep(partial):
        raise InputError(
            f"{partial}: not a partial cube of netsweep's (not HDF5, or it has other hard links); "
            f"--force deletes only its own partial files: move it away or choose another --out",
            param="out",
        )
    if out.exists() and not force:
        raise InputError(f"{out}: file exists; pass --force to overwrite it", param="out")
    if partial.exists() and not force:
        raise InputError(
            f"{out}: an interrupted run left {partial}; pass --resume to finish it or --force to start over",
            param="out",
        )


SHARD = re.compile(r"^(?P<base>.*)\.shard(?P<pid>\d+)of(?P<count>\d+)$")  # OUT.shard0of2.h5's stem


def _shards_left(out: Path) -> str:
    """What a --resume that finds nothing to resume at ``out`` (a cube, or one process's shard of it) should know
    of the shards a --distributed run of another process count (or of any, for a cube) left beside it, as the
    count that finishes them ('' where none is): a hunt's resume with 3 processes of a run of 2 said only that
    the 3-process shard did not exist."""
    shard = SHARD.match(out.stem)
    base = shard["base"] if shard else out.stem
    if not out.parent.is_dir() or out.exists():  # a finished cube: the usual message says it (a review)
        return ""
    counts: dict[int, list[str]] = {}
    for left in sorted(out.parent.glob(f"{glob.escape(base)}.shard*of*{out.suffix}*")):
        m = SHARD.match(left.name.removesuffix(".partial").removesuffix(out.suffix))
        if m and m["base"] == base and (not shard or int(m["count"]) != int(shard["count"])):
            counts.setdefault(int(m["count"]), []).append(left.name)
    said = []
    for count, names in sorted(counts.items()):
        processes = counted(count, "process", "processes")
        said.append(
            f"; {', '.join(names)} {'is' if len(names) == 1 else 'are'} a --distributed run's of {processes}: "
            f"finish it with --distributed on {processes}"
        )
    return "".join(said)


def _stamped(out: Path) -> str:
    """Where a run without --out left a partial cube that this one (another timestamp, :func:`default_out`)
    cannot find by name: the latest of the same label, as the --out that finishes it ('' where none is)."""
    label = out.name.removesuffix(out.suffix).rsplit("-", 2)[0]
    left = (
        list(out.parent.glob(f"{glob.escape(label)}-*-*{out.suffix}.partial")) if out.parent.is_dir() else []
    )
    if not left:
        return ""
    latest = max(left, key=lambda p: p.name)  # the stamps sort as their times
    cube = latest.with_name(latest.name.removesuffix(".partial"))
    return (
        f" (without --out each run is named anew; {latest} was left by a run of this label: add --out {cube})"
    )


def create_partial(
    partial: Path, grid: AnyGrid, blocking: Blocking, attrs: dict[str, Any], sparse: bool
) -> h5py.File:
    """A new partial cube, or a refusal when another run created the file first."""
    try:
        return cube.create(partial, grid, blocking, attrs, sparse=sparse)
    except FileExistsError:
        pass
    except OSError:
        if not partial.exists():
            raise
    raise InputError(
        f"{partial.with_suffix('')}: another run holds the output ({partial} appeared while this "
        f"one started); wait for it or choose another --out",
        param="out",
    )


DISK_MARGIN = 1.05  # HDF5 metadata, the profiles, the resume record; and room for the rest of the disk
DISK_METADATA_BYTES = 16 * 2**20
FILE_METADATA_BYTES = 2**20  # a cube's metadata and profiles: the paper's five models' take 0.2 MB


def check_disk(out: str | Path, grid: AnyGrid, blocking: Blocking, share: float = 1.0) -> None:
    """Refuse a cube that would not fit on the disk, with a margin for metadata (its chunks whole where
    ``blocking`` cuts it: :func:`~sweep.io.cube.estimated_bytes`); ``share``: the part this process writes."""
    data = cube.estimated_bytes(grid, blocking) * share * DISK_MARGIN
    need = data + DISK_METADATA_BYTES
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]  # the shell's `ulimit -f`, in bytes
    # HDF5 cannot end a file it may not grow (it crashed); the file's own size counts here, not the disk's
    # margin: its data and at most FILE_METADATA_BYTES of metadata and profiles.
    file_bytes = data + FILE_METADATA_BYTES
    if limit != resource.RLIM_INFINITY and file_bytes > limit:
        raise InputError(
            f"{out}: the cube may need {file_bytes / 1e6:.3g} MB ({grid.size:,} configurations) but this process may "
            f"write files of at most {limit / 1e6:.3g} MB (ulimit -f); raise the limit or narrow the grid",
            param="out",
        )
    free = shutil.disk_usage(Path(out).parent).free
    if need > free:
        raise InputError(
            f"{out}: the cube needs {need / 1e9:.3g} GB ({grid.size:,} configurations) "
            f"but only {free / 1e9:.3g} GB is free there; narrow the grid or write elsewhere",
            param="out",
        )


def run_grid(
    grid: AnyGrid,
    out: str | Path,
    *,
    command: str,
    force: bool = False,
    resume: bool = False,
    default_out_dir: bool = False,
    progress: Progress | None = None,
    block_configs: int | None = None,
    share: tuple[int, int] | None = None,
    kernel: str = "auto",
    after_block: AfterBlock = _nothing,
    announce: Callable[[], None] = lambda: None,
) -> Summary:
    """Sweep ``grid`` into the cube ``out``. Returns a summary dict.

    ``announce()`` is called once the output is checked, before any work (the CLI says what the sweep
    assumed there, so a refusal is one line).

    ``progress`` is a context manager factory ``progress(total, done)`` yielding a
    callable ``advance(configs)``, or None. The cube is written to ``out.partial``
    and renamed when complete. ``share = (process_id, process_count)`` computes only
    the blocks with ``index % process_count == process_id`` into a sparse shard.
    ``block_configs`` None means the default, or on ``resume`` the partial file's.
    ``kernel`` as :func:`sweep.evaluate`, checked first (:func:`~sweep.engine.dispatch.check_kernel`: an
    explicit Pallas kernel that cannot run the sweep is refused before any file is made). SIGINT and SIGTERM are deferred from the
    moment the partial file is opened: it is never left half-made, and the sweep
    stops at the next block boundary. ``after_block(block)`` is called once each block
    is written (on the writer thread; with ``--reduce``, once it is accumulated): an
    exception it raises stops the sweep there, as a crash would (tests stop a sweep at a
    known block this way).
    """
    check_kernel(kernel, grid)
    out = Path(out)
    # the folders made for this run (the default results/) are not left empty by a refusal or an interrupt
    with all_or_nothing(out.parent):
        check_output(out, force=force, resume=resume, default=default_out_dir)
        partial = partial_path(out)
        if block_configs is None:
            block_configs = (resume and cube.stored_block_configs(partial)) or default_block_configs()
        blocking = Blocking(grid.sizes, block_configs, grid.family)
        mine = None if share is None else share_of(*share)
        if grid.reduction is not None:
            check_reduced_in_memory(grid)
            return _run_reduced(
                grid,
                blocking,
                out,
                partial,
                resume=resume,
                force=force,
                command=command,
                progress=progress,
                kernel=kernel,
                share=share,
                after_block=after_block,
                announce=announce,
            )
        if not resume:
            check_disk(out, grid, blocking, 1.0 if share is None else 1.0 / share[1])
        announce()
        with interrupts.deferred():
            f = _open_partial(
                partial, grid, blocking, resume=resume, force=force, command=command, share=share
            )
            summary = _fill_keeping_partial(
                f,
                partial,
                resume,
                lambda: _fill(f, grid, blocking, resume, mine, progress, kernel, after_block),
            )
            cube.finish(f, partial, out, overwrite=force)
        return {**summary, "out": str(out), "bytes": os.path.getsize(out)}


def _open_partial(
    partial: Path,
    grid: AnyGrid,
    blocking: Blocking,
    *,
    resume: bool,
    force: bool,
    command: str,
    share: tuple[int, int] | None,
) -> h5py.File:
    """The partial cube, open for writing: the one being resumed, or a new one (a stale one of another run
    removed with ``force``) recording the command and, for a shard, which one it is."""
    if resume:
        return cube.open_for_resume(partial, grid, blocking)
    if force:
        remove_stale(partial)
    attrs: dict[str, Any] = provenance(command)
    if share is not None:
        attrs["shard"] = f"{share[0]} of {share[1]}"
    return create_partial(partial, grid, blocking, attrs, sparse=share is not None)


def _fill_keeping_partial(f: h5py.File, partial: Path, resume: bool, fill: Callable[[], Summary]) -> Summary:
    """``fill()`` the open partial cube ``f`` (:func:`_fill`); when it fails, the partial file is kept for
    --resume (a full disk said as such), except a new one refused late by the input's rules, which is removed
    (only if it is still this run's file)."""
    inode = cube.file_inode(f)
    try:
        return fill()
    except InputError:
        f.close()
        if not resume:  # refused late: nothing of this run's is kept, nothing else is touched
            cube.remove_own(partial, inode)
        raise
    except OSError as e:
        f.close()
        if e.errno == errno.ENOSPC or "No space left" in str(e):
            error = DiskFull(
                f"the disk filled up while writing {partial}; finished blocks are kept there. "
                f"Free some space, then finish with the same command plus --resume"
            )
            keep_partial(error, partial)
            raise error from None
        keep_partial(e, partial)
        raise
    except BaseException as e:
        f.close()  # finished blocks are already durable; the partial file stays for --resume
        keep_partial(e, partial)
        raise


def _run_reduced(
    grid: AnyGrid,
    blocking: Blocking,
    out: Path,
    partial: Path,
    *,
    resume: bool,
    force: bool,
    command: str,
    progress: Progress | None,
    kernel: str,
    share: tuple[int, int] | None,
    after_block: AfterBlock,
    announce: Callable[[], None],
) -> Summary:
    """--reduce: accumulate on the host, checkpoint to OUT.partial, write the reduced cube (sweep.reduce)."""
    # A reduction's share runs through sweep.io.distributed (run_distributed), never here.
    assert share is None, "a reduction's share is sweep.io.distributed's"
    announce()
    start = time.perf_counter()
    # overwrite: a file that appeared at OUT meanwhile is kept without --force, as a sweep's finish keeps it
    summary = run_reduced(
        grid, blocking, out, partial, resume=resume, command=command, progress=progress, kernel=kernel,
        after_block=after_block, overwrite=force,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    return {
        **summary,
        "seconds": elapsed,
        "configs_per_s": summary["computed"] / elapsed if elapsed > 0 else 0.0,
        "out": str(out),
        "bytes": os.path.getsize(out),
    }


def _fill(
    f: h5py.File,
    grid: AnyGrid,
    blocking: Blocking,
    resume: bool,
    mine: Callable[[Block], bool] | None,
    progress: Progress | None,
    kernel: str,
    after_block: AfterBlock,
) -> Summary:
    """Compute and write every block not yet done (on the writer thread); a summary dict."""
    done, damaged = integrity.verified_blocks(f, blocking) if resume else ([], [])
    all_blocks = blocking.blocks()
    blocks = [b for b in all_blocks if mine is None or mine(b)]
    total = sum(b.size for b in blocks)
    done_configs = sum(all_blocks[i].size for i in done)
    start = time.perf_counter()

    def write(block: Block, arrays: Arrays) -> None:
        cube.write_block(f, block, arrays)
        after_block(block)

    writer = BlockWriter(write)

    def sink(block: Block, arrays: Arrays) -> None:
        interrupts.raise_if_requested()  # stop here, at a block boundary, if asked to
        writer.put(block, arrays)

    try:
        interrupts.raise_if_requested()
        with progress(total, done_configs) if progress else nullcontext() as advance:
            run(grid, blocking, sink, skip=done, progress=advance, only=mine, kernel=kernel)
            writer.close()
        interrupts.raise_if_requested()
    except BaseException:
        writer.abandon()
        raise
    elapsed = time.perf_counter() - start
    computed = total - done_configs
    return {
        "configs": total,
        "computed": computed,
        "seconds": elapsed,
        "configs_per_s": computed / elapsed if elapsed > 0 else float("nan"),
        "resumed_blocks": len(done),
        "damaged_blocks": len(damaged),
        "blocks": len(blocks),
    }


def summary_line(s: Summary) -> str:
    """The one line the CLI prints for a finished sweep."""
    rate = s["configs_per_s"]
    resumed = f", {counted(s['resumed_blocks'], 'block')} resumed" if s["resumed_blocks"] else ""
    if s.get("damaged_blocks"):  # "1 damaged blocks" (a hunt)
        resumed += f", {counted(s['damaged_blocks'], 'damaged block')} computed again"
    shown = f"{rate:.2g}" if rate < 10 else f"{rate:,.0f}"  # a tiny sweep's 0.44/s, not 0/s
    # A resumed run's time and rate are of what it computed, said so beside the cube's count (a hunt read
    # "128,000,000 configurations in 0.15 s" of 681,472 computed).
    some = f", {s['computed']:,} computed" if s.get("computed", s["configs"]) != s["configs"] else ""
    line = f"{counted(s['configs'], 'configuration')}{some} in {s['seconds']:.2f} s ({shown}/s end to end{resumed})"
    if "shard" in s:
        line = f"process {s['shard']}: {line}"
        return line + (
            f"; stitched every shard into {s['out']}" if s.get("stitched") else f" into {s['out']}"
        )
    return f"wrote {s['out']}: {line}"
