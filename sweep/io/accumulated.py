"""The job runner of work whose result accumulates in memory: a ``--reduce`` sweep's accumulators
(:mod:`sweep.io.reduced`) and ``sweep plan``'s searches (:func:`sweep.analysis.layout_jobs.write_plan`), each an
:class:`Accumulation` (:func:`run_accumulated`). Either shared among processes (``--distributed``) is also a
:class:`sweep.io.distributed.Shared` (:func:`sweep.io.distributed.run_shared`), each process's share run here
to its shard (:func:`run_share`), checkpointed and resumed the same way.

Either is checkpointed to ``OUT.partial`` (a new file renamed over it every few blocks and when it stops:
:mod:`sweep.io.checkpoints`), held by a :class:`~sweep.io.paths.Claim` from the start to the end of the run, so
that another run on the same ``OUT`` is refused (``--force`` and ``--resume`` too); ``--resume`` goes on from the
checkpoint, computing the same blocks in the same order, so the cube equals one run's. The result is written
whole (:func:`sweep.io.cube.write_dataset`: a temporary file of its own, renamed to ``OUT``), and the checkpoint
removed once it is in place. One set of rules for both:

- refused while computing (an :class:`InputError`): a new run's checkpoint is removed; a resumed one stays as its
  last save left it (a refusal may come of this run's options, not of what the checkpoint holds);
- stopped otherwise (a signal at a block boundary, a crash): the checkpoint keeps every block it holds;
- refused at the write (a file appeared at ``OUT`` meanwhile, kept without ``--force``): the whole result waits
  in the checkpoint for ``--resume``; a disk that refused the cube leaves the checkpoint written before.
"""

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io import cube
from netsweep_jax.sweep.io.paths import Claim, keep_partial, partial_path, remove_stale

if TYPE_CHECKING:
    from collections.abc import Mapping

    import h5py
    import xarray as xr


class Accumulation(Protocol):
    """Work whose state accumulates in memory block by block, checkpointed to a file."""

    def load(self, path: Path) -> None:
        """Restore the state from the checkpoint at ``path`` (refusing another run's or a damaged one)."""

    def save(self, path: Path, claim: Claim) -> None:
        """Checkpoint the state whole to ``path`` (a new file renamed over it, held by ``claim``)."""

    def compute(self, path: Path, claim: Claim) -> None:
        """Every block not yet merged, checkpointed to ``path`` every few blocks."""

    def dataset(self) -> "xr.Dataset":
        """The result."""

    def attrs(self) -> "Mapping[str, Any]":
        """The result cube's global attributes besides the dataset's own."""

    def inputs(self, f: "h5py.File") -> None:
        """What the result cube keeps besides its data (its family's inputs: :func:`sweep.io.cube.grid_inputs`)."""


def run_accumulated(
    job: Accumulation,
    out: Path,
    partial: Path,
    *,
    resume: bool,
    command: str,
    overwrite: bool,
    finish: Callable[[], None] | None = None,
) -> None:
    """Run ``job`` to the cube ``out``, its checkpoint in ``partial``, under the module's rules, with SIGINT and
    SIGTERM deferred (a signal stops the work at a block boundary; once it is done, it stops nothing and is said
    with the cube in place). The caller has checked the output first (:func:`sweep.io.job.check_output`, a
    precondition): a checkpoint at ``partial`` without ``resume`` is then an earlier run's that ``--force``
    replaces. An exception that stops the
    run with its checkpoint in place names it (:func:`sweep.io.paths.kept_partial`). ``finish()``: what the
    finished job writes in place of the cube (a process's share of a ``--distributed`` one: its shard)."""
    with interrupts.deferred():
        if not resume:
            remove_stale(partial)
        try:
            write_cube = functools.partial(
                write_result, job, out, command=command, overwrite=overwrite, kept=partial
            )
            _run(job, partial, resume=resume, finish=finish or write_cube)
        except InputError:
            raise  # refused: its checkpoint removed, or kept whole for --resume and said where
        except BaseException as e:
            if partial.exists():
                keep_partial(e, partial)
            raise


def _run(job: Accumulation, partial: Path, *, resume: bool, finish: Callable[[], None]) -> None:
    """:func:`run_accumulated`'s work under its claim on ``partial``: load, compute, then ``finish()`` (the cube,
    or a share's shard), the checkpoint kept or removed as the module's rules say."""
    claim = Claim(partial)
    if resume:
        job.load(partial)
    claim.take(new=not resume)
    try:
        try:
            job.compute(partial, claim)
        except InputError:
            if not resume:
                claim.remove()  # refused: nothing of this run's is kept
            raise
        except BaseException:
            # Every finished block is kept (a signal stops it at a block boundary)...
            try:
                job.save(partial, claim)
            except BaseException:  # the save failed too (the file-size limit): nothing is kept, no empty file
                claim.remove_if_empty()
                raise
            raise
        try:
            finish()
        except InputError:  # a file appeared at OUT meanwhile, kept: the result waits, whole, for --resume
            job.save(partial, claim)
            raise
        except BaseException:  # the disk refused the cube: a checkpoint written before stays, for --resume
            claim.remove_if_empty()
            raise
        claim.remove()
    finally:
        claim.release()


class Result(Protocol):
    """A finished job's result as a cube holds it (an :class:`Accumulation`'s, a shared job's once merged)."""

    def dataset(self) -> "xr.Dataset":
        """The result."""

    def attrs(self) -> "Mapping[str, Any]":
        """The cube's global attributes besides the dataset's own."""

    def inputs(self, f: "h5py.File") -> None:
        """What the cube keeps besides its data."""


def write_result(job: Result, out: Path, *, command: str, overwrite: bool, kept: Path) -> None:
    """The finished job's cube at ``out``: its dataset, attributes and family's inputs, written whole
    (:func:`sweep.io.cube.write_dataset`); a file that appeared there meanwhile is refused, naming ``kept``, where
    the result waits for ``--resume``."""
    # looked up at the call (not bound at import): tests stop a run right after this write
    cube.write_dataset(
        job.dataset(),
        out,
        command=command,
        attrs=job.attrs(),
        overwrite=overwrite,
        kept=kept,
        inputs=job.inputs,
    )


def run_share(job: Accumulation, shard: Path, *, resume: bool, finish: Callable[[], None]) -> bool:
    """A process's share of ``--distributed`` work that accumulates, under :func:`run_accumulated`'s rules: its
    checkpoint in ``OUT.partial`` of ``shard`` (kept when the run stops), then ``finish()`` writes the share
    whole to ``shard``. ``resume``: on from that checkpoint where one was written (none, or an empty one: the
    share from its first block; the shard whole: nothing is computed). Returns whether anything was computed."""
    partial = partial_path(shard)
    if resume and shard.exists() and not partial.exists():
        return False
    resume = resume and partial.exists() and partial.stat().st_size > 0  # empty: stopped before a checkpoint
    run_accumulated(job, shard, partial, resume=resume, command="", overwrite=True, finish=finish)
    return True
