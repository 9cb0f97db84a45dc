"""``sweep grid --distributed``: several processes (hosts) share one sweep.

Each process joins ``jax.distributed`` (coordinator address, process count and id
from the options, the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID
variables, or the cluster launcher JAX detects: SLURM, Open MPI, ...), learns its
id, then leaves the coordination service: a sweep needs no communication between
processes, and leaving means a process that dies cannot take the others down. JAX's
backend starts only after that, as a lone process's (devices numbered from 0), so every
process finds its compiled kernels in the persistent cache.
Process p computes blocks ``index % count == p`` on its local devices into its own
shard ``OUT.shard<p>of<count>.h5`` (durable per block, resumable). Process 0 then
waits for every shard and stitches them, block by block, into ``OUT``: a plain cube,
like a single-machine one. The output directory must be shared by all processes.

If a process dies, the others finish their shards; process 0 gives up waiting
once no missing shard has changed for ``stitch_timeout`` seconds and says which.
Rerunning every process with ``--resume`` computes only the missing blocks.

The coordinator may also be a Unix socket, ``unix:PATH`` (processes on one host): the
service binds that path, so no TCP port has to be chosen.

``sweep plan --distributed`` and ``sweep grid --reduce ... --distributed`` share work that accumulates
(:class:`Shared`, :func:`run_shared`): each process computes its blocks into a shard written whole, and process 0
merges every shard into the result. A share is checkpointed as one machine's run is, and resumed.
"""

import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import h5py
import jax

from netsweep_jax.sweep.core.errors import InputError, JoinTimeout, StitchTimeout, literal
from netsweep_jax.sweep.core.values import whole_number
from netsweep_jax.sweep.engine.blocks import Blocking, owner, share_of
from netsweep_jax.sweep.engine.dispatch import AnyGrid, check_kernel, default_block_configs
from netsweep_jax.sweep.engine.reductions import check_reduced_in_memory
from netsweep_jax.sweep.io import cube
from netsweep_jax.sweep.io.accumulated import write_result
from netsweep_jax.sweep.io.job import (
    Progress,
    Summary,
    check_output,
    create_partial,
    partial_path,
    run_grid,
)
from netsweep_jax.sweep.io.paths import (
    in_use,
    keep_partial,
    made_by_a_sweep,
    regular_or_absent,
    remove_stale,
    writable_directory,
)
from netsweep_jax.sweep.io.provenance import provenance
from netsweep_jax.sweep.io.reduced import Reduction

if TYPE_CHECKING:
    import xarray as xr

POLL_S = 0.2
"""Seconds between two looks at the missing shards."""


JOIN_TIMEOUT_S = 300
"""Seconds a process waits for every process to join the coordinator (``jax.distributed.initialize``'s
``initialization_timeout``, less :data:`JOIN_GRACE_S`)."""
JOIN_GRACE_S = 30
"""jax.distributed's own deadline runs this much past this module's: at its deadline XLA aborts the process
(exit code 134, a stack trace), so the wait here ends first, in one line."""


def check_coordinator(coordinator: str | None) -> None:
    """Refuse a ``--coordinator`` that is neither ``host:port`` (a port from 1 to 65535) nor ``unix:PATH``,
    before anything starts (JAX took ``localhost`` apart with an IndexError)."""
    if coordinator is None or coordinator.startswith("unix:") and coordinator[5:]:
        return
    host, colon, port = coordinator.rpartition(":")
    if not colon or not host or not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise InputError(
            f"{coordinator}: give host:port with a port from 1 to 65535 (e.g. host0:1234), or unix:PATH",
            param="coordinator",
        )


def rendezvous(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    timeout_s: float = JOIN_TIMEOUT_S,
    *,
    options: str | None = None,
    initialize: Callable[..., object] | None = None,
) -> tuple[int, int]:
    """Join jax.distributed, return (process_id, process_count), and leave again.

    The join runs on a thread of its own, the caller waiting for it: SIGINT and SIGTERM end the wait at once
    (XLA's blocking connect ignored them), and a process that has not joined after ``timeout_s`` seconds (a
    peer that never started) is :class:`~sweep.core.errors.JoinTimeout`, one line, before XLA's own deadline
    would abort the process. ``options``: what this process runs (its grid's fingerprint and the options that
    shape its shard); every process must run the same (:func:`agree`). ``initialize``:
    ``jax.distributed.initialize`` (tests pass a stand-in)."""
    env = os.environ
    coordinator = coordinator or env.get("JAX_COORDINATOR_ADDRESS")
    check_coordinator(coordinator)
    num_processes = num_processes if num_processes is not None else _int_env("JAX_NUM_PROCESSES", 1)
    process_id = process_id if process_id is not None else _int_env("JAX_PROCESS_ID", 0)
    # JAX binds "[::]:PORT" of a host:port address; a Unix socket is bound where it is named.
    bind = coordinator if coordinator is not None and coordinator.startswith("unix:") else None
    outcome: list[BaseException | None] = []

    def join() -> None:
        try:
            (initialize or jax.distributed.initialize)(
                coordinator_address=coordinator,
                num_processes=num_processes,
                process_id=process_id,
                initialization_timeout=int(math.ceil(timeout_s)) + JOIN_GRACE_S,
                coordinator_bind_address=bind,
            )
            if options is not None:
                agree(_client(), *_joined_as(), options, timeout_s)
            outcome.append(None)
        except BaseException as e:  # handed to the waiting thread
            outcome.append(e)

    thread = threading.Thread(target=join, name="netsweep-join", daemon=True)
    thread.start()
    thread.join(timeout_s)  # a signal ends this wait: the CLI's handlers raise here
    if not outcome:
        raise JoinTimeout(
            f"not every process joined the coordinator within {timeout_s:g} s (a process that never started, "
            f"or another --coordinator or --num-processes); start every process with the same options"
        )
    error = outcome[0]
    if isinstance(error, InputError):
        _leave()
        raise error
    if isinstance(error, (ValueError, TypeError, RuntimeError)):
        raise InputError(
            f"cannot join the coordinator ({str(error).splitlines()[0]})", param="distributed"
        ) from None
    if error is not None:
        raise error
    pid, count = _joined_as()
    _leave()
    return pid, count


def _state() -> Any:
    """jax.distributed's state: its client, this process's id and the process count (JAX has no public name for
    it; the client is live between ``initialize`` and ``shutdown``)."""
    from jax._src.distributed import global_state

    return global_state


def _joined_as() -> tuple[int, int]:
    """This process's id and the process count as the coordinator gave them, read without starting JAX's
    backend, which :func:`_leave` keeps to this host."""
    return int(_state().process_id), int(_state().num_processes)


def _leave() -> None:
    """Leave jax.distributed as a process that never joined: JAX's shutdown keeps the process's id and count,
    and a backend started after it still numbered its devices across the processes (process p's CPU device was
    2048 p). JAX keys a compiled CPU program by its device, so a process other than 0 never found its kernels
    in the persistent cache and compiled them again on every run (4-9 s a layout kernel). Each process computes
    on its own devices only, so the backend it starts next is this host's alone, its devices numbered from 0."""
    jax.distributed.shutdown()
    _state().process_id, _state().num_processes = 0, 1


def _client() -> Any:
    """jax.distributed's client, whose key-value store the processes compare their options through."""
    return _state().client


def agree(client: Any, pid: int, count: int, options: str, timeout_s: float) -> None:
    """Refuse (every process, before any file is made) unless every process runs the same ``options``: each
    publishes its own in the coordinator's key-value store and reads every other's, then all wait for each other
    (no process leaves the service while another still reads). Processes started with other options wrote shards
    of other grids, which process 0 refused only at the stitch, while the others ended with exit code 0."""
    ms = int(timeout_s * 1000)
    client.key_value_set(f"netsweep/options/{pid}", options)
    theirs = {p: client.blocking_key_value_get(f"netsweep/options/{p}", ms) for p in range(count) if p != pid}
    client.wait_at_barrier("netsweep/options", ms)
    differ = [str(p) for p, text in sorted(theirs.items()) if text != options]
    if differ:
        raise InputError(
            f"process{'es' if len(differ) > 1 else ''} {', '.join(differ)} of {count} "
            f"{'were' if len(differ) > 1 else 'was'} started with other options than process {pid}; "
            f"give every process the same command (the same --out file name too)",
            param="distributed",
        )


def check_options(coordinator: str | None, stitch_timeout: float) -> None:
    """``--distributed``'s options, refused before anything starts: the coordinator's address
    (:func:`check_coordinator`) and ``--stitch-timeout``, a number of seconds above 0."""
    check_coordinator(coordinator)
    if not (math.isfinite(stitch_timeout) and stitch_timeout > 0):
        raise InputError(f"{stitch_timeout:g}: give a number of seconds above 0", param="stitch_timeout")


def run(
    grid: AnyGrid,
    out: str | Path | None,
    *,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    **kwargs: Any,
) -> Summary:
    """Join the other processes, then :func:`run_distributed` this one's share. Returns a summary."""
    if out is None:
        raise InputError("needed with --distributed: a path every process can reach", param="out")
    # The file's name too (its folder may be mounted elsewhere on each host): processes given other --out files
    # wrote shards process 0 never found, and it waited --stitch-timeout for them (a hunt).
    options = f"grid {grid.fingerprint()} block_configs={kwargs.get('block_configs')} out={Path(out).name}"
    pid, count = rendezvous(coordinator, num_processes, process_id, options=options)
    return run_distributed(grid, out, pid, count, **kwargs)


def _int_env(name: str, low: int) -> int | None:
    """Environment variable ``name`` as a whole number of at least ``low`` (None where unset or empty), refused in
    one line where it is not one in ASCII digits (int() gave a traceback for 'abc' and took full-width digits, a
    hunt), as the option it stands in for is."""
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    whole = whole_number(value.strip())
    if whole is None or whole < low:
        option = "--num-processes" if name == "JAX_NUM_PROCESSES" else "--process-id"
        raise InputError(f"${name} {value!r}: give a whole number, {low} or more, as {option} takes")
    return whole


def shard_path(out: str | Path, pid: int, count: int) -> Path:
    """Where process ``pid`` of ``count`` writes its shard of ``out``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.shard{pid}of{count}{out.suffix}")


def run_distributed(
    grid: AnyGrid,
    out: str | Path,
    pid: int,
    count: int,
    *,
    command: str,
    force: bool = False,
    resume: bool = False,
    progress: Progress | None = None,
    block_configs: int | None,
    stitch_timeout: float = 600.0,
    default_out_dir: bool = False,
    kernel: str = "auto",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    announce: Callable[[], None] = lambda: None,
) -> Summary:
    """This process's share of the sweep, then (process 0) the stitch. Returns a summary.
    ``announce()``: as :func:`~sweep.io.job.run_grid`'s.

    ``clock`` and ``sleep`` are the clock process 0 measures ``stitch_timeout`` on
    (seconds), and how it waits between looks at the missing shards.
    """
    out = Path(out)
    if grid.reduction is not None:
        check_reduced_in_memory(grid)
        return _reduced_share(
            grid, out, pid, count, command=command, force=force, resume=resume, block_configs=block_configs,
            stitch_timeout=stitch_timeout, default_out_dir=default_out_dir, kernel=kernel, announce=announce,
            progress=progress,
        )  # fmt: skip
    shard = shard_path(out, pid, count)
    summary: Summary
    if resume and shard.exists() and not partial_path(shard).exists():
        _refuse_another_grids(
            shard, grid
        )  # an earlier run's, of other options: before any work, not at the stitch
        summary = _finished_shard(shard, grid, pid, count)
    else:
        if pid == 0 and not resume:
            check_output(out, force=force, resume=False, default=default_out_dir)
        elif not resume:
            refused_as_process_0_would(out, force=force)
        summary = run_grid(
            grid,
            shard,
            command=command,
            force=force,
            resume=resume,
            progress=progress,
            block_configs=block_configs,
            share=(pid, count),
            default_out_dir=default_out_dir,
            kernel=kernel,
            announce=announce,
        )
    summary["shard"] = f"{pid} of {count}"
    if pid == 0:
        shards = [shard_path(out, p, count) for p in range(count)]
        try:
            wait_for(shards, stitch_timeout, clock=clock, sleep=sleep)
        except BaseException as error:  # stopped waiting: this process's share is whole in its shard, kept
            keep_partial(error, shard)  # (a signal here had said "nothing was kept", a hunt)
            raise
        stitch(grid, shards, out, block_configs, command, overwrite=force)
        summary["out"] = str(out)
        summary["stitched"] = True
    return summary


def _finished_shard(shard: Path, grid: AnyGrid, pid: int, count: int) -> Summary:
    """The summary of a shard a resumed run finds finished: its blocks, every one resumed, none computed (a hunt:
    "0 configurations in 0.00 s (nan/s end to end)" of a shard of 10,800,000)."""
    blocking = Blocking(grid.sizes, cube.stored_block_configs(shard) or default_block_configs(), grid.family)
    mine = [b for b in blocking.blocks() if share_of(pid, count)(b)]
    return {
        "out": str(shard),
        "configs": sum(b.size for b in mine),
        "computed": 0,
        "seconds": 0.0,
        "configs_per_s": 0.0,
        "resumed_blocks": len(mine),
        "blocks": len(mine),
    }


def _reduced_share(
    grid: AnyGrid,
    out: Path,
    pid: int,
    count: int,
    *,
    command: str,
    force: bool,
    resume: bool,
    block_configs: int | None,
    stitch_timeout: float,
    default_out_dir: bool,
    kernel: str,
    announce: Callable[[], None],
    progress: Progress | None = None,
) -> Summary:
    """``sweep grid --reduce ... --distributed``: this process's share of the reduction
    (:class:`~sweep.io.reduced.Reduction` of a share) through :func:`run_shared`, checkpointed as one machine's
    is; process 0 merges every shard into the reduced cube at ``out``. ``resume``: each process goes on from its
    checkpoint (none: its share from the start; its shard whole: nothing to do)."""
    check_kernel(kernel, grid)
    # resumed: the block size its checkpoint, else its whole shard, was cut in (another card's default would
    # refuse it), as run_grid's
    shard = shard_path(out, pid, count)
    stored = resume and (cube.stored_block_configs(partial_path(shard)) or cube.stored_block_configs(shard))
    block_configs = block_configs or stored or default_block_configs()
    blocking = Blocking(grid.sizes, block_configs, grid.family)
    job = Reduction(grid, blocking, progress, kernel, share=(pid, count))
    start = time.perf_counter()
    written = run_shared(
        job, out, (pid, count), stitch_timeout=stitch_timeout, command=command, overwrite=force,
        then="rerun every process with --resume to finish", default_out=default_out_dir, announce=announce,
        resume=resume,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    blocks, total, done_configs = job.sizes()
    computed = total - done_configs  # none where the share was written whole before
    return {
        "out": str(written),
        "configs": total,
        "computed": computed,
        "seconds": elapsed,
        "configs_per_s": computed / elapsed if elapsed > 0 else 0.0,
        "resumed_blocks": job.resumed,
        "blocks": blocks,
        "shard": f"{pid} of {count}",
        **({"stitched": True} if pid == 0 else {}),
    }


def wait_for(
    shards: Sequence[Path],
    stitch_timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    then: str = "rerun every process with --resume to finish",
) -> None:
    """Return once every shard exists; raise :class:`StitchTimeout` once the missing
    ones' partial files have not changed for ``stitch_timeout`` seconds of ``clock`` (saying ``then``: what
    to do next)."""
    last_change, seen = clock(), dict[Path, float | None]()
    while True:
        missing = [s for s in shards if not s.exists()]
        if not missing:
            return
        for s in missing:
            p = partial_path(s)
            stamp = p.stat().st_mtime if p.exists() else None
            if seen.get(s) != stamp:
                seen[s], last_change = stamp, clock()
        if clock() - last_change > stitch_timeout:
            names = ", ".join(str(s) for s in missing)  # with its folder (a hunt: the name alone)
            raise StitchTimeout(
                f"{names} not complete and unchanged for {stitch_timeout:g} s (its process stopped?); {then}"
            )
        sleep(POLL_S)


ANOTHER_GRIDS = (
    "a shard of another grid (made by a command with other options: an earlier run's, or a process started "
    "differently); give every process the same command, or start them again with --force and without --resume"
)


def _refuse_another_grids(shard: Path, grid: AnyGrid) -> None:
    """Refuse a finished shard ``--resume`` would keep where it was made for another grid."""
    try:
        with h5py.File(shard, "r") as f:
            made_for = f.attrs.get("grid_fingerprint")
    except OSError as error:
        raise InputError(
            f"{shard}: not a shard this tool can read ({error}); start again with --force"
        ) from None
    if made_for != grid.fingerprint():
        raise InputError(f"{shard}: {ANOTHER_GRIDS}")


def stitch(
    grid: AnyGrid,
    shards: Sequence[Path],
    out: Path,
    block_configs: int | None,
    command: str,
    overwrite: bool = False,
) -> None:
    """Copy every block from the shard that computed it into the cube ``out``. Without ``overwrite`` (``--force``)
    a file that appeared at ``out`` while the processes computed is kept, the stitched cube left in its partial
    file and the shards kept for ``--resume`` (it had been replaced, exit code 0, a hunt)."""
    count = len(shards)
    partial = partial_path(out)
    remove_stale(partial)  # an earlier stitch's, stopped: netsweep's own and no live run's, or refused
    opened = [h5py.File(s, "r") for s in shards]
    try:
        first = opened[0].attrs
        block_configs = block_configs or int(first["block_configs"])
        blocking = Blocking(grid.sizes, block_configs, grid.family)
        attrs = {**provenance(command), "device_kind": first["device_kind"], "processes": count}
        fingerprint = grid.fingerprint()
        for src in opened:  # before the cube is made: a refusal leaves nothing behind
            if src.attrs["grid_fingerprint"] != fingerprint:
                raise InputError(f"{src.filename}: {ANOTHER_GRIDS}")
            if int(src.attrs["block_configs"]) != block_configs:  # a default follows each machine's memory
                raise InputError(
                    f"{src.filename}: cut into blocks of {int(src.attrs['block_configs'])} configurations where "
                    f"{shards[0].name} has {block_configs}: give every process the same --block-configs",
                    param="block_configs",
                )
        f = create_partial(partial, grid, blocking, attrs, sparse=False)
        inode = cube.file_inode(f)
        try:
            for block in blocking.blocks():
                src = opened[owner(block, count)]
                region = block.region()
                cube.write_block(f, block, {name: src[name][region] for name in grid.variables})
        except BaseException:
            f.close()
            cube.remove_own(partial, inode)  # a stitch is made again from the shards, which stay
            raise
    finally:
        for src in opened:
            src.close()
    try:
        cube.finish(f, partial, out, overwrite=overwrite)
    except InputError:
        if overwrite or not os.path.lexists(out):
            raise
        # the stitch is made again from the shards, by every process resumed (process 0 alone waits for the others
        # to join: a review)
        shown = literal(str(out))
        raise InputError(
            f"{shown}: file exists; pass {{0}} to overwrite it (it appeared while the processes computed; their "
            f"shards are kept: move {shown} away and finish with the same command plus {{1}} on every process)",
            param="out",
            names=("force=True", "resume=True"),
        ) from None
    for s in shards:
        s.unlink()


class Shared(Protocol):
    """Work that accumulates, shared among processes (``--distributed``): each computes its share, kept in a
    shard; process 0 merges every shard into the result."""

    def compute_share(self, shard: Path, *, resume: bool) -> None:
        """This process's share of the blocks, written whole to ``shard`` (a new file renamed over it,
        sweep.io.checkpoints.write); ``resume``: on from where a stopped run left it."""

    def load_shares(self, shards: "Sequence[Path]") -> None:
        """Read every process's shard, in process order (process 0), refusing a damaged one or another run's."""

    def merge(self) -> None:
        """Merge the shares read, in process order, into the result (process 0)."""

    def dataset(self) -> "xr.Dataset":
        """The result, once merged."""

    def attrs(self) -> "Mapping[str, Any]":
        """The result cube's global attributes besides the dataset's own."""

    def inputs(self, f: h5py.File) -> None:
        """What the result cube keeps besides its data (its family's inputs: :func:`sweep.io.cube.grid_inputs`)."""


def refused_as_process_0_would(out: Path, *, force: bool) -> None:
    """Process 0's refusals of the cube ``out``, checked by another process before its share (OUT a directory,
    OUT or its OUT.partial there without ``--force``), which writes nothing but the folders missing from OUT's
    path (its shard goes there): none computes a share process 0 will not merge, and none leaves its shard
    behind."""
    regular_or_absent(out)
    writable_directory(out, create=True)  # as process 0 makes them: a shard is written there, maybe first
    if (out.exists() or partial_path(out).exists()) and not force:
        raise InputError(f"{out}: exists, or its OUT.partial does; pass --force to start over", param="out")


def _claim_share_outputs(out: Path, pid: int, count: int, *, force: bool, default_out: bool) -> None:
    """Before process ``pid`` of ``count`` computes its share: the cube and its shard checked as a sweep's outputs,
    an earlier run's OUT.partial (process 0) and this process's earlier shard and checkpoint removed with
    ``--force``, else refused (an empty one, always removed)."""
    shard = shard_path(out, pid, count)
    # The cube as a sweep's output (process 0 alone reads OUT.partial, which it then removes with --force);
    # this process's shard and its checkpoint files of its own, none of another live run's: an earlier run's is
    # the work --resume finishes, removed only with --force (an empty one, a run stopped before writing, always),
    # so that process 0 never merges a stale one.
    if pid == 0:
        check_output(out, force=force, resume=False, default=default_out)
        remove_stale(partial_path(out))  # --force (check_output): an earlier one-machine run's checkpoint
    else:
        refused_as_process_0_would(out, force=force)
    for path in (shard, partial_path(shard)):
        regular_or_absent(path)
        if in_use(path) or (path.exists() and not made_by_a_sweep(path)):
            raise InputError(
                f"{out}: {path} is another run's or not netsweep's; wait for it, move it away or choose another "
                "--out",
                param="out",
            )
        if path.exists() and path.stat().st_size > 0 and not force:
            raise InputError(
                f"{out}: an interrupted run left {path}; pass --resume to finish it or --force to start over",
                param="out",
            )
        path.unlink(missing_ok=True)


def run_shared(
    job: Shared,
    out: Path,
    share: tuple[int, int],
    *,
    stitch_timeout: float,
    command: str,
    overwrite: bool,
    then: str,
    default_out: bool = False,
    announce: Callable[[], None] = lambda: None,
    resume: bool = False,
) -> Path:
    """Run process ``share[0]`` of ``share[1]``'s share of ``job`` (a plan's or a reduction's), its outputs claimed
    first (:func:`_claim_share_outputs`, or with ``resume`` checked as a resumed run's, then ``announce()``): its
    shard written to ``OUT.shard<p>of<n>`` (:func:`shard_path`; a new file renamed into place, so a shard that
    exists is whole). Process 0 then waits for every shard (at most ``stitch_timeout`` seconds unchanged;
    ``then``: what to do when they do not come), merges them, removes them and writes the cube to ``out``.
    Returns what this process wrote: the cube (process 0) or its shard."""
    pid, count = share
    shard = shard_path(out, pid, count)
    if resume and overwrite:  # as check_output refuses the pair
        raise InputError(
            "and --force cannot go together: --resume finishes the shares, --force starts over",
            param="resume",
        )
    if resume:
        _check_share_resume(out, shard)
    else:
        _claim_share_outputs(out, pid, count, force=overwrite, default_out=default_out)
    announce()  # once the outputs are claimed: a refusal is one line
    job.compute_share(shard, resume=resume)
    if pid != 0:
        return shard
    shards = [shard_path(out, p, count) for p in range(count)]
    try:  # stopped or timed out: every shard stays, for --resume (said as its own kept work)
        wait_for(shards, stitch_timeout, then=then)
        job.load_shares(shards)  # a damaged shard or another run's is refused with every shard left as it is
        job.merge()
        write_result(job, out, command=command, overwrite=overwrite, kept=shard)  # the shards said kept
    except BaseException as e:
        if not isinstance(e, InputError):  # an interrupt or a failed write: "finished blocks are kept in ..."
            keep_partial(e, shard)
        raise
    for path in shards:  # once the cube is in place: a merge or a write that fails keeps them, for --resume
        path.unlink(missing_ok=True)
    return out


def _check_share_resume(out: Path, shard: Path) -> None:
    """A resumed share's outputs: the cube not written yet (a resumed run never replaces a file) in a folder that
    exists, its shard and checkpoint plain files of no other live run."""
    regular_or_absent(out)
    if not out.parent.is_dir():
        raise InputError(f"finds nothing to resume: {out.parent} is not a folder", param="resume")
    if out.exists():
        raise InputError(
            f"{out} exists: the shares were merged; a resumed run never replaces a file (--force starts over)",
            param="resume",
        )
    for path in (shard, partial_path(shard)):
        regular_or_absent(path)
        if in_use(path):
            raise InputError(f"{out}: another run is writing {path}; wait for it", param="out")
