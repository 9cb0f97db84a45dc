"""Output paths: what netsweep may write, and writing so that nothing is left half-done.

netsweep writes and replaces regular files only (never a directory, a link, a device
or a FIFO), refuses a file another run holds, checks that the directory can be
written before any work starts, and writes each file to a temporary file of its own
first (:func:`new_temporary`: a new name beside it, created exclusively, so that no
existing file, link or hard link is ever written through or deleted), renaming it into
place only when it is complete. A sweep's resumable ``OUT.partial`` is :mod:`sweep.io.job`'s.
"""

import contextlib
import contextvars
import datetime
import fcntl
import glob
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from netsweep_jax.sweep.core.errors import InputError, WriteFailed, literal, reason

# A switch a refusal advises, as each front end spells it: force=True in Python, --force on the command line.
FORCE = ("force=True",)

# The files written inside the current all_or_nothing() block that did not exist before it.
_created: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar("created", default=None)
# The files the current all_or_nothing() block replaced (with --force), as (the file, a link to what it held).
_replaced: contextvars.ContextVar[list[tuple[Path, Path]] | None] = contextvars.ContextVar(
    "replaced", default=None
)


def stamped(name: str, suffix: str = "", directory: str | Path = "results") -> Path:
    """A default output, ``DIRECTORY/NAME-YYYYmmdd-HHMMSS[SUFFIX]``: new for each run, so a command run with no
    ``--out`` never meets an earlier run's output, nor a report committed to a checkout (``results/paper``). Where
    a run of the same second has it (or its partial file), ``NAME-YYYYmmdd-HHMMSS_2[SUFFIX]``, ``_3``, ...: two
    quick runs were refused the second's output, "file exists; pass --force", an --out never given (a hunt)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    # not hidden: a profile file named .csv had written results/.csv-...h5, which ls does not list (a hunt)
    name = name.lstrip(".") or "sweep"
    path, n = Path(directory) / f"{name}-{stamp}{suffix}", 2
    while path.exists() or path.is_symlink() or partial_path(path).exists():
        path, n = Path(directory) / f"{name}-{stamp}_{n}{suffix}", n + 1
    return path


PARTIAL_SUFFIX = ".partial"


def partial_path(out: str | Path) -> Path:
    """Where ``out`` is written until it is complete."""
    return Path(str(out) + PARTIAL_SUFFIX)


def regular_or_absent(path: str | Path, param: str = "out") -> None:
    """Refuse a path that exists as anything but a regular file."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a link" if path.is_symlink() else "a directory" if path.is_dir() else "not a regular file"
        raise InputError(f"{path}: {kind}; netsweep writes and replaces regular files only", param=param)


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def made_by_a_sweep(path: str | Path) -> bool:
    """Whether ``path`` (a regular file) can be a partial file a sweep made: empty (a run stopped before
    writing anything) or an HDF5 file, with no other hard link. Anything else is not netsweep's to delete."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if st.st_nlink > 1:
            return False
        if st.st_size == 0:
            return True
        with open(path, "rb") as fh:
            return fh.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
    except OSError:
        return False


def in_use(path: str | Path) -> bool:
    """True when another process has ``path`` open for writing (HDF5 holds a file lock while it does): a shared
    lock's probe alone, which no reader of the file ever waits on."""
    return holder(path, readers=False) == "writing"


def holder(path: str | Path, readers: bool = True) -> str | None:
    """``"writing"`` where another open of ``path`` holds HDF5's exclusive lock (a sweep writing it),
    ``"reading"`` where one holds its shared lock (HDF5 open to read: ``open_cube``, xarray or h5py in a notebook,
    ``sweep show``), else None (no such file, no lock held, or a file system that cannot tell: NFSv4 refuses an
    exclusive lock on a file open to read, a review). The probe holds each lock for an instant, never waiting:
    a reader opening the file in that instant is refused by HDF5 and told the file is held; without ``readers``
    the exclusive probe, which readers can meet, is not made (and "reading" never said)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        probes = ((fcntl.LOCK_SH, "writing"), (fcntl.LOCK_EX, "reading"))
        for lock, held in probes[: 2 if readers else 1]:
            try:
                fcntl.flock(fd, lock | fcntl.LOCK_NB)
            except BlockingIOError:
                return held
            except OSError:  # EBADF and the like: no answer, as for no lock
                return None
            fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def held_open(path: str | Path, how: str) -> str:
    """What to say of a cube another process holds ``how`` (:func:`holder`'s word): never that it is damaged or
    unreadable, lest a user delete or start over a good file (a hunt: a partial cube open in a notebook was called
    unreadable, and ``--force`` advised, which threw its finished blocks away)."""
    if how == "writing":
        return (
            f"{path}: another process has it open for writing (HDF5 locks it; a sweep still running?): read it "
            "once that process has finished"
        )
    return (
        f"{path}: another process has it open for reading (HDF5 locks it: open_cube, xarray or h5py in a "
        "notebook, or sweep show): close it there, then run again"
    )


KEPT = "netsweep_kept_partial"
"""Attribute set on an exception that stopped a sweep once its partial file held this run's blocks: that file."""


def kept_partial(error: BaseException) -> Path | None:
    """The partial file a stopped sweep kept for ``--resume`` (None: it kept none of its own)."""
    return getattr(error, KEPT, None)


def keep_partial(error: BaseException, partial: Path) -> None:
    """Say on ``error`` that the run it stopped kept ``partial`` for ``--resume``."""
    try:
        setattr(error, KEPT, partial)
    except AttributeError:
        pass


def remove_stale(partial: Path) -> None:
    """--force: delete an earlier run's partial file (checked by :func:`sweep.io.job.check_output`: netsweep's
    own, and no live run holds it); refuse once more if another run has taken it meanwhile. None there: nothing."""
    if not partial.exists():
        return
    if in_use(partial) or not made_by_a_sweep(partial):
        raise InputError(
            f"{partial.with_suffix('')}: another run holds the output ({partial}); wait for it or "
            f"choose another --out",
            param="out",
        )
    partial.unlink(missing_ok=True)


def writable_directory(out: str | Path, param: str = "out", create: bool = False) -> None:
    """Refuse ``out`` unless its directory can be written: it exists, or the folders missing from its path can
    be made in a writable one. They are made now with ``create`` (a sweep's cube, its partial file written
    block by block), else when the file is written (:func:`write_atomically`), as a report's ``--out`` makes
    its directory: a refusal before then leaves none behind."""
    parent = Path(out).parent
    existing = _existing(parent)
    if not existing.is_dir():
        made = (
            f"cannot be made ({existing} is not a directory)" if existing != parent else "is not a directory"
        )
        raise InputError(f"{out}: directory {parent} {made}", param=param)
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".netsweep-write-test-"):
            pass
    except OSError as e:  # read-only, no permission: the file system refuses the write, a fault (exit code 1)
        raise WriteFailed(
            f"{out}: directory {existing} cannot be written ({failure(e)}); nothing was written"
        ) from None
    if create:
        make_folders(parent)


def _missing(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist, innermost first (empty: ``folder`` exists)."""
    missing = []
    # lexists: a dangling link is there (refused as no directory), not a folder to make
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _existing(folder: Path) -> Path:
    """``folder``, or its nearest ancestor that exists."""
    missing = _missing(folder)
    return missing[-1].parent if missing else folder


def make_folders(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing ancestors; the ones this call made, innermost first (a failure: a fault,
    one line). One another run makes meanwhile (another process of ``--distributed``) is its own, not counted."""
    made: list[Path] = []
    for missing in reversed(_missing(folder)):
        try:
            missing.mkdir()
        except FileExistsError:
            if missing.is_dir():
                continue
            remove_folders(made)
            raise InputError(
                f"{folder}: cannot be made ({missing} is not a directory)", param="out"
            ) from None
        except OSError as e:  # the file system refuses it (read-only, no space)
            remove_folders(made)
            raise WriteFailed(f"{missing}: cannot be made ({failure(e)}); nothing was written") from None
        made.insert(0, missing)
    return made


def remove_folders(made: list[Path]) -> None:
    """Remove the folders ``made`` (innermost first) that are empty; one that is not keeps those above it."""
    for folder in made:
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty (another's file): kept, and the folders above it
            break


Reads = Mapping[str | Path, str]
"""The files a command reads, each with what it reads it as (``{"runs.csv": "measurements file"}``)."""


def refuse_reading_what_is_written(out: str | Path, reads: Reads, param: str = "out") -> None:
    """Refuse an output that is a file the command reads, by any name (a link, a hard link, ``./x``): even with
    ``--force`` it would replace the data read with what was made of it (a hunt: validate's predictions.csv over
    the measurements it read, a fabric file over its nccl-tests log)."""
    for given, what in reads.items():
        try:
            same = os.path.samefile(out, given)
        except OSError:  # either is absent (or unreadable: the reader says so)
            continue
        if same:
            raise InputError(
                f"{literal(str(out))}: the {literal(what)} this command reads; give another {{0}}",
                param=param,
                names=(param,),
            )


def check_report_directory(
    out_dir: str | Path,
    names: Collection[str],
    *,
    force: bool,
    param: str = "out",
    reads: Reads | None = None,
) -> Path:
    """Refuse a report directory before any work starts: a file or a link in its place, one that cannot be
    created or written, or any of the files ``names`` it would write that exists (without ``force``), is
    not a regular file (a link is refused even with ``force``: never replaced, never written through) or is one
    of the files the command ``reads`` (:func:`refuse_reading_what_is_written`). Creates nothing
    (:func:`report_directory` does, when the report is written)."""
    out_dir = Path(out_dir)
    if out_dir.is_symlink():  # never written through (a hunt read "not a directory" of a link to one)
        raise InputError(f"{out_dir}: a link; give the directory itself for the report", param=param)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: not a directory; give a directory for the report", param=param)
    for name in names:
        path = out_dir / name
        regular_or_absent(path, param)
        refuse_reading_what_is_written(path, reads or {}, param)
        if path.exists() and not force:
            raise InputError(
                f"{literal(str(path))}: file exists; pass {{0}} to overwrite it, or give another {{1}}",
                param=param,
                names=(*FORCE, param),
            )
    existing = _existing(out_dir)
    if not existing.is_dir():
        raise InputError(f"{out_dir}: cannot be made ({existing} is not a directory)", param=param)
    if not os.access(existing, os.W_OK | os.X_OK):  # the file system refuses it: a fault, as a failed write
        raise WriteFailed(f"{out_dir}: cannot be written ({existing} is not a writable directory)")
    return out_dir


def report_directory(
    out_dir: str | Path, names: Collection[str] = (), *, force: bool = False, param: str = "out"
) -> Path:
    """A directory for a report, checked (:func:`check_report_directory`), then created if absent."""
    out_dir = check_report_directory(out_dir, names, force=force, param=param)
    # a directory the checks could not foresee refusing (/proc as root: writable, yet nothing is made) is a fault
    make_folders(out_dir)
    writable_directory(out_dir / "REPORT.md", param)
    return out_dir


# What a cube's file may be called: HDF5 (netCDF-4 is HDF5), as xarray and h5py open it.
CUBE_SUFFIXES = (".h5", ".hdf5", ".nc")


def check_new_file(
    out: str | Path,
    *,
    force: bool,
    param: str = "out",
    suffixes: Collection[str] | None = None,
    reads: Reads | None = None,
) -> None:
    """Refuse an output file that cannot be written, is not a regular file, exists (without ``force``) or is one
    of the files the command ``reads`` (:func:`refuse_reading_what_is_written`)."""
    out = Path(out)
    regular_or_absent(out, param)
    refuse_reading_what_is_written(out, reads or {}, param)
    if suffixes and out.suffix.lower() not in suffixes:
        raise InputError(
            f"{out}: unknown file type {out.suffix!r}; use one of {', '.join(suffixes)}", param=param
        )
    writable_directory(out, param)
    if out.exists() and not force:
        raise InputError(
            f"{literal(str(out))}: file exists; pass {{0}} to overwrite it", param=param, names=FORCE
        )


def new_temporary(out: str | Path) -> Path:
    """A new empty file beside ``out`` (``OUT.<random>.partial``), created exclusively (``O_CREAT|O_EXCL``,
    never following a link), with the permissions a new file gets. No existing file is ever opened, so none
    is written through (a link, a hard link) or deleted."""
    out = Path(out)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temp = out.with_name(f"{out.name}.{secrets.token_hex(4)}.partial")
        try:
            os.close(os.open(temp, flags, 0o666))
            return temp
        except FileExistsError:
            continue


def exists(out: str | Path, kept: str | Path | None = None) -> InputError:
    """The refusal of an output that exists (found at the end of a run without ``--force``: the file that
    appeared while it computed is kept); ``kept``: where this run's finished result waits for ``--resume``."""
    out, named = literal(str(out)), (*FORCE, "resume=True")
    if kept is None:
        return InputError(f"{out}: file exists; pass {{0}} to overwrite it", param="out", names=named)
    return InputError(
        f"{out}: file exists; pass {{0}} to overwrite it (it appeared while this run computed; the "
        f"finished cube is kept in {literal(str(kept))}: move {out} away and finish with {{1}})",
        param="out",
        names=named,
    )


def write_atomically(
    out: str | Path,
    write: Callable[[Path], object],
    *,
    overwrite: bool = True,
    param: str = "out",
    kept: str | Path | None = None,
) -> Path:
    """Call ``write(path)`` on a new temporary file of its own (:func:`new_temporary`), then rename it to
    ``out``; nothing is left on failure. ``out`` is replaced only if it is a regular file (a link is never
    replaced), and only with ``overwrite`` (checked again just before the rename: a file that appeared
    while this one was computed is kept, and the refusal names ``kept``, where the caller keeps its result)."""
    out = Path(out)
    made = make_folders(out.parent)
    temp = new_temporary(out)
    written = False
    try:
        try:
            write(temp)
        except OSError as e:  # a full disk, a file-size limit, a failing disk: a fault, said in one line
            raise WriteFailed(f"{out}: could not be written ({failure(e)}); nothing was written") from None
        regular_or_absent(out, param)
        if not overwrite and out.exists():
            raise exists(out, kept)
        new = not out.exists()
        set_aside(out)
        os.replace(temp, out)
        created = _created.get()
        if new and created is not None:
            created.append(out)
        written = True
    finally:
        temp.unlink(missing_ok=True)  # this run's own name: nobody else's file
        if not written:
            remove_folders(made)
    return out


class Claim:
    """A run's hold on its checkpoint ``OUT.partial`` (a ``--reduce`` sweep's, a plan's), as HDF5's file lock
    holds a sweep's partial cube: an exclusive ``flock`` that :func:`in_use` sees, so a second run on the same
    ``--out`` is told another run is writing (with ``--force`` or ``--resume`` too). Each new checkpoint is
    locked before it is renamed over the old one (:meth:`replace`): the name never points at a free file
    while the run lives. The lock ends with the process, however it ends (kill -9 included)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def take(self, *, new: bool) -> None:
        """Hold ``path``: ``new``, created empty (exclusively: a file that appeared meanwhile is another
        run's), else the existing checkpoint being resumed. Refused when another run holds it."""
        out = self.path.with_suffix("")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | (os.O_CREAT | os.O_EXCL if new else 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except (FileExistsError, FileNotFoundError):
            raise InputError(
                f"{out}: another run holds the output ({self.path} {'appeared' if new else 'went away'} "
                f"while this one started); wait for it or choose another --out",
                param="out",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if holder(self.path) == "reading":  # a reader's shared lock, not a run (a hunt)
                raise InputError(held_open(self.path, "reading"), param="out") from None
            raise InputError(
                f"{out}: another run is writing {self.path}; wait for it or choose another --out", param="out"
            ) from None
        self._fd = fd
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        """Delete the new checkpoints an earlier run of this output left half-written (``OUT.partial.<random>
        .partial``, :func:`new_temporary`'s names: killed while writing one): held now, no run of it lives."""
        mine = re.compile(re.escape(self.path.name) + r"\.[0-9a-f]{8}\.partial")
        for stale in self.path.parent.glob(f"{glob.escape(self.path.name)}.*.partial"):
            if mine.fullmatch(stale.name) and stale.is_file() and not stale.is_symlink():
                with contextlib.suppress(OSError):
                    stale.unlink()

    def replace(self, temp: Path) -> None:
        """Rename ``temp`` (a complete new checkpoint) over ``path``, held before it gets the name."""
        fd = os.open(temp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file of this run's: nobody else holds it
        os.replace(temp, self.path)
        self.release()
        self._fd = fd

    def remove(self) -> None:
        """Delete ``path`` if it is still the file this run holds (the run is over: its result is in place,
        or it was refused), then let it go."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self._fd).st_ino:
                    self.path.unlink()
        self.release()

    def remove_if_empty(self) -> None:
        """:meth:`remove` if no checkpoint was written yet (the file this run created empty): a run that fails
        before keeping anything leaves nothing behind."""
        if self._fd is not None and os.fstat(self._fd).st_size == 0:
            self.remove()

    def release(self) -> None:
        """Let the file go (it stays, for ``--resume``)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def set_aside(out: str | Path) -> None:
    """Before ``out``, an existing regular file, is replaced inside an :func:`all_or_nothing` block: a hard link
    to what it holds, beside it (``OUT.<random>.replaced``), that puts it back if the block fails and is removed
    once it succeeds (an interrupted ``paper --force`` left a new cube beside the old REPORT.md, a hunt). Free
    for a cube of any size; where the file system has no hard links, nothing is set aside (the file stays
    replaced, as before)."""
    replaced, out = _replaced.get(), Path(out)
    if replaced is None or out.is_symlink() or not out.is_file():
        return
    for _ in range(8):
        keep = out.with_name(f"{out.name}.{secrets.token_hex(4)}.replaced")
        try:
            os.link(out, keep)
        except FileExistsError:
            continue
        except OSError:
            return
        replaced.append((out, keep))
        return


def record_created(path: str | Path) -> None:
    """Count ``path``, a file this run created by other means than :func:`write_atomically` (a sweep's
    cube), as one of the current :func:`all_or_nothing` block's."""
    created = _created.get()
    if created is not None:
        created.append(Path(path))


def failure(e: OSError) -> str:
    """An OSError's reason in a few words (HDF5's carry a paragraph after its first line)."""
    if e.errno is not None and e.strerror:
        return os.strerror(e.errno)
    return reason(e)


def write_report_files(
    out_dir: str | Path, files: Mapping[str, str | Callable[[Path], Path]], *, force: bool = False
) -> list[Path]:
    """A report's files written into ``out_dir`` (checked and made by :func:`report_directory`), in order, all
    or nothing (:func:`all_or_nothing`): each name -> its text, or a function that writes the file at the path
    it is given and returns it (a figure). An existing file is refused without ``force``, before any is
    written. The paths, in order."""
    with all_or_nothing(out_dir):
        out_dir = report_directory(out_dir, list(files), force=force)
        paths = []
        for name, content in files.items():
            if isinstance(content, str):
                paths.append(write_atomically(out_dir / name, _text_writer(content), overwrite=force))
            else:
                paths.append(content(out_dir / name))
    return paths


def _text_writer(text: str) -> Callable[[Path], object]:
    """A writer of ``text`` at the path it is given (:func:`write_atomically`'s ``write``)."""
    return lambda path: path.write_text(text)


@contextlib.contextmanager
def all_or_nothing(out_dir: str | Path) -> Iterator[None]:
    """A report's files: if the block fails (a write refused by the disk, a refusal, an interrupt), the files
    it created are removed, and ``out_dir`` too if the block created it and nothing else is in it. A file the
    block replaced (with --force) is put back as it was (:func:`set_aside`); no other file is touched. The
    folders above ``out_dir`` that the block made are removed as ``out_dir`` is."""
    missing = _missing(Path(out_dir))
    outer, outer_replaced = _created.get(), _replaced.get()
    created: list[Path] = []
    replaced: list[tuple[Path, Path]] = []
    token, replaced_token = _created.set(created), _replaced.set(replaced)
    try:
        yield
        if outer is not None:  # a block within another's: its files are the outer block's too
            outer.extend(created)
        if outer_replaced is not None:
            outer_replaced.extend(replaced)
        else:
            for _, keep in replaced:
                keep.unlink(missing_ok=True)
    except BaseException:
        for path, keep in reversed(replaced):  # each file as it was before the block, then the new ones gone
            with contextlib.suppress(OSError):
                if os.path.samefile(keep, path):  # never replaced (stopped between): rename would be a no-op
                    keep.unlink()
                else:
                    os.replace(keep, path)
        for path in created:
            path.unlink(missing_ok=True)
        remove_folders(missing)
        raise
    finally:
        _created.reset(token)
        _replaced.reset(replaced_token)
