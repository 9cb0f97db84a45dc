"""Layer-wise backward profiles and their file formats.

A profile is the model's parameter tensors in backward order (last layer first):
for tensor i its name, gradient bytes and backward wait w_i (seconds from the
previous gradient becoming ready; the first from the start of backward). Gradient
i is ready at R_i = w_0 + ... + w_i. ``t1`` is the single-GPU iteration time
(forward + backward + update, seconds).

Formats read here (``load_profile`` picks by extension):

- ``.json``: netsweep's own (see ``Profile.to_json``/README).
- ``.csv``: a header naming ``name,grad_bytes,backward_us`` and optionally ``forward_us``, ``unit`` and
  ``shape``, in any order, then one row per tensor in backward order; ``t1`` is passed by the caller.
- ``.bk.log``: the paper's format (comment line, batch count, tensor count, then
  ``wait_us,grad_bytes`` rows); ``t1`` is passed by the caller.
"""

import dataclasses
import difflib
import hashlib
import math
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords
from netsweep_jax.sweep.core.textfile import read_csv_records, read_json_file, read_lines
from netsweep_jax.sweep.core.values import decimal, real_scalar, whole_number


@dataclasses.dataclass(frozen=True)
class Profile:
    """One model's backward profile.

    Attributes:
      model: short name, used as the cube's ``model`` coordinate.
      names: [L] tensor names, backward order.
      grad_bytes: [L] float64 gradient bytes per tensor.
      wait: [L] float64 seconds from the previous gradient being ready.
      t1: single-GPU iteration time (s).
      device, batch_size, dtype, source: metadata (free text).
      forward: [L] float64 seconds of forward compute per tensor, or None (needed by FSDP).
      unit: [L] int FSDP unit of each tensor (a transformer block, say), or None (one per tensor).
      shape: [L] tuples, each tensor's shape (needed by low-rank compression), or None.
      compute_scale: the factor :meth:`scaled_to` put its compute on (a T1 given for another GPU or batch over
        its own; 1 where it is its own).
      t1_given: T1 was given for a file that keeps none of its own (.csv, .bk.log, a JSON without one or with
        one shorter than its passes): its
        passes are as measured, and a measured run's T1 replaces it (:meth:`at_run_t1`).
    """

    model: str
    names: tuple[str, ...]
    grad_bytes: np.ndarray
    wait: np.ndarray
    t1: float
    device: str = "unknown"
    batch_size: int = 0
    dtype: str = "float32"
    source: str = ""
    forward: np.ndarray | None = None
    unit: np.ndarray | None = None
    shape: tuple[tuple[int, ...], ...] | None = None
    compute_scale: float = 1.0
    t1_given: bool = False

    @property
    def element_bytes(self) -> np.ndarray:
        """[L] bytes per gradient element: from the shapes, else from ``dtype`` (4 unless half precision)."""
        if self.shape is not None:
            return self.grad_bytes / np.array([max(1, math.prod(s)) for s in self.shape], np.float64)
        return np.full(len(self.grad_bytes), 2.0 if half_dtype(self.dtype) else 4.0)

    @property
    def ready(self) -> np.ndarray:
        """[L] seconds from the start of backward at which each gradient is ready."""
        return np.cumsum(self.wait)

    @property
    def backward_time(self) -> float:
        """Seconds from the start of backward to the last gradient (R_last)."""
        return float(np.sum(self.wait))

    @property
    def total_bytes(self) -> float:
        """Gradient bytes of one iteration, all tensors."""
        return float(np.sum(self.grad_bytes))

    def content_hash(self) -> str:
        """SHA-256 over the numbers that determine results (names excluded)."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.grad_bytes, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(self.wait, dtype=np.float64).tobytes())
        h.update(repr(float(self.t1)).encode())
        for extra in (self.forward, self.unit):  # absent in older profiles: their hash is unchanged
            if extra is not None:
                h.update(np.ascontiguousarray(extra, dtype=np.float64).tobytes())
        if self.shape is not None:
            h.update(repr(self.shape).encode())
        return h.hexdigest()

    def scaled_to(self, t1: float, where: str = "<profile>") -> "Profile":
        """This profile on faster or slower compute: every backward wait (and forward time)
        scaled by t1 / T1, the gradients unchanged (another GPU or batch size, same model)."""
        t1 = _seconds(t1, where)
        if t1 == self.t1:
            return self
        scale = t1 / self.t1
        return dataclasses.replace(
            self,
            wait=self.wait * scale,
            t1=t1,
            source=f"{self.source}; compute x{scale:.4g} to T1 = {t1:g} s",
            forward=None if self.forward is None else self.forward * scale,
            compute_scale=self.compute_scale * scale,
        ).checked(where)

    def checked(self, where: str | None = None) -> "Profile":
        """This profile, refused (:class:`InputError`, naming ``where``, default the profile) where it breaks
        :func:`make_profile`'s rules: one built or changed in Python (``dataclasses.replace``) as a file's would
        be."""
        return make_profile(
            self.model,
            self.names,
            self.grad_bytes,
            self.wait,
            self.t1,
            where or f"profile {self.model!r}",
            device=self.device,
            batch_size=self.batch_size,
            dtype=self.dtype,
            source=self.source,
            forward=self.forward,
            unit=self.unit,
            shape=self.shape,
            compute_scale=self.compute_scale,
            t1_given=self.t1_given,
        )

    def at_run_t1(self, t1: float, where: str = "<profile>") -> "Profile":
        """This profile at a measured run's own T1 (a calibrate row's ``t1``): its compute scaled to it
        (:meth:`scaled_to`) where T1 is its own (a built-in's, a JSON's), replaced where T1 was given for a file
        that keeps none (``t1_given``: a CSV's measured passes are never rescaled; a review: --iteration-time
        0.01, then a row's t1 of 2 s, had scaled them x200)."""
        if not self.t1_given:
            return self.scaled_to(t1, where)
        return dataclasses.replace(self, t1=_seconds(t1, where)).checked(where)

    def to_json(self) -> dict[str, Any]:
        """The project's JSON format (a dict): metadata plus a list of tensors."""
        return {
            "format": "netsweep-profile-1",
            "model": self.model,
            "iteration_time_s": float(self.t1),  # a NumPy number given is written as JSON's (a hunt)
            "device": self.device,
            "batch_size": int(self.batch_size),
            "dtype": self.dtype,
            "source": self.source,
            "tensors": [
                {
                    "name": n,
                    "grad_bytes": int(b),
                    "backward_us": float(w) * 1e6,
                    **({"forward_us": float(self.forward[i]) * 1e6} if self.forward is not None else {}),
                    **({"unit": int(self.unit[i])} if self.unit is not None else {}),
                    **({"shape": [int(d) for d in self.shape[i]]} if self.shape is not None else {}),
                }
                for i, (n, b, w) in enumerate(zip(self.names, self.grad_bytes, self.wait))
            ],
        }


HALF_DTYPES = ("bf16", "fp16", "float16", "bfloat16", "half")  # dtype names with 2-byte gradients


def half_dtype(name: object) -> bool:
    """Whether a profile's ``dtype`` names 2-byte gradients: :data:`HALF_DTYPES` in any case, PyTorch's spelling
    too (``torch.float16``, ``torch.half``: read as float32, its 4 bytes halved by fp16 in silence, a hunt)."""
    return str(name).strip().lower().removeprefix("torch.") in HALF_DTYPES


ELEMENT_BYTES = (1, 2, 4, 8)  # a gradient element's possible sizes

# Bounds that keep every result finite in float32 (a petabyte of gradients, 10^4 s).
MAX_TOTAL_BYTES = 1e15
MAX_SECONDS = 1e4


class ShortIterationTime(InputError):
    """A profile's T1 shorter than its own passes: :func:`load_profile` takes a ``t1`` given in its place."""


MIN_SECONDS = 1e-6  # a T1 shorter than a microsecond would leave float32 results 0 (the waits underflow)


def recorded_t1(step_s: float, wait_s: Iterable[float], forward_s: Iterable[float] = ()) -> tuple[float, str]:
    """T1 (s) of a recorded step, and a note for the profile's ``source`` ("" when none).

    T1 is the step's time, at least the recorded backward waits + forward times: hooks
    and the profiler inflate those, and a T1 below their sum would leave the model
    negative compute. The note says when the floor was applied, and by how much.
    """
    floor = float(sum(wait_s) + sum(forward_s))
    if step_s >= floor:
        return float(step_s), ""
    return floor, (
        f"; T1 raised from the step's {step_s * 1e3:.4g} ms to the recorded forward + backward "
        f"{floor * 1e3:.4g} ms (profiling overhead)"
    )


def _seconds(t1: object, where: str) -> float:
    """A T1 given to :meth:`Profile.scaled_to` or :meth:`Profile.at_run_t1` as a float, refused unless a finite
    number of seconds above 0."""
    value = real_scalar(t1)
    if value is None or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: t1 {t1!r} must be a number of seconds above 0")
    return value


def make_profile(
    model: str,
    names: Sequence[str],
    grad_bytes: ArrayLike,
    wait_s: ArrayLike,
    t1: float | None,
    path: str | Path = "<profile>",
    **meta: Any,
) -> Profile:
    """Validate arrays and build a :class:`Profile` (errors name ``path``)."""
    grad_bytes = np.asarray(grad_bytes, dtype=np.float64)
    wait_s = np.asarray(wait_s, dtype=np.float64)
    if grad_bytes.ndim != 1 or grad_bytes.shape != wait_s.shape or len(names) != len(grad_bytes):
        raise InputError(
            f"{path}: {len(names)} names, gradient bytes of shape {grad_bytes.shape} and waits of shape "
            f"{wait_s.shape}: one of each per tensor"
        )
    if len(grad_bytes) == 0:
        raise InputError(f"{path}: profile has no tensors")
    if not (
        np.all(np.isfinite(grad_bytes)) and np.all(grad_bytes >= 0) and grad_bytes.sum() <= MAX_TOTAL_BYTES
    ):
        raise InputError(f"{path}: gradient bytes must be >= 0 and add up to at most {MAX_TOTAL_BYTES:.0e}")
    if not (np.all(np.isfinite(wait_s)) and np.all(wait_s >= 0) and wait_s.sum() <= MAX_SECONDS):
        raise InputError(f"{path}: backward waits must be >= 0 and add up to at most {MAX_SECONDS:.0e} s")
    t1 = _check_t1(t1, path)
    if t1 < wait_s.sum():
        raise ShortIterationTime(
            f"{path}: iteration time {t1:.6g} s is shorter than the profile's backward pass "
            f"({wait_s.sum():.6g} s); T1 covers forward, backward and update"
        )
    if not isinstance(model, str):  # a Profile built in Python (a hunt: a TypeError deep in the grid)
        raise InputError(f"{path}: model name {model!r} must be text, not {type(model).__name__}")
    if not good_name(model):
        raise InputError(
            f"{path}: model name {model!r} must be non-empty, without '/' or ',' or control characters or spaces "
            f"at its ends, not '.' or '..', and at most {MAX_NAME} bytes in UTF-8 (a cube keeps each profile under its "
            "name, and a sweep's default file is named after it; a comma list names several models)"
        )
    _check_text(path, names, meta)
    forward, unit = meta.pop("forward", None), meta.pop("unit", None)
    if forward is not None:
        forward = np.asarray(forward, dtype=np.float64)
        if forward.shape != wait_s.shape or not (np.all(np.isfinite(forward)) and np.all(forward >= 0)):
            raise InputError(f"{path}: forward times must be one number >= 0 per tensor")
        if t1 < wait_s.sum() + forward.sum() * (1 - 1e-9):
            raise ShortIterationTime(
                f"{path}: iteration time {t1:.6g} s is shorter than the forward and backward passes "
                f"({forward.sum() + wait_s.sum():.6g} s)"
            )
    if unit is not None:
        unit = np.asarray(unit, dtype=np.float64)
        if unit.shape != wait_s.shape:
            raise InputError(f"{path}: one FSDP unit per tensor")
        if not (
            np.all(np.isfinite(unit))
            and np.all(unit == np.floor(unit))
            and np.all((0 <= unit) & (unit < 2**31))
        ):
            raise InputError(f"{path}: FSDP units must be whole numbers from 0 to 2^31 - 1, one per tensor")
        unit = unit.astype(np.int64)
    scale = real_scalar(meta.get("compute_scale", 1.0))
    if scale is None or not (math.isfinite(scale) and scale > 0):  # a Profile changed in Python (a hunt)
        raise InputError(f"{path}: compute_scale {meta['compute_scale']!r} must be a number above 0")
    meta["compute_scale"] = float(scale)  # a float, as batch_size is an int
    shape = meta.pop("shape", None)
    if shape is not None:
        if len(shape) != len(grad_bytes):
            raise InputError(f"{path}: one shape per tensor")
        shape = tuple(_check_shape(s, b, n, path) for s, b, n in zip(shape, grad_bytes, names))
    return Profile(
        model, tuple(names), grad_bytes, wait_s, float(t1), forward=forward, unit=unit, shape=shape, **meta
    )


def _check_shape(shape, nbytes, name, path):
    """A tensor's shape as a tuple of ints >= 1 whose element count times 1, 2, 4 or 8 bytes is its gradient."""
    try:
        dims = tuple(int(d) for d in shape)
        ok = all(float(d) == int(d) for d in shape) and len(dims) >= 1 and all(d >= 1 for d in dims)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite dim (JSON's 1e400)
        ok = False
    if not ok:
        raise InputError(f"{path}: tensor {name}: shape {shape!r} must be a list of integers >= 1")
    if not any(math.prod(dims) * size == nbytes for size in ELEMENT_BYTES):
        raise InputError(
            f"{path}: tensor {name}: shape {'x'.join(map(str, dims))} has {math.prod(dims)} elements, "
            f"which at 1, 2, 4 or 8 bytes each is not its {nbytes:.15g} gradient bytes"
        )
    return dims


# A model name's length at most: a sweep's default cube is results/<model>-<timestamp>.h5, and a file's name is
# at most 255 bytes on the usual file systems (a 300-character name was taken, then its cube could not be made).
MAX_NAME = 128
MAX_BATCH = 1e9  # samples a GPU: 0 is unknown


def good_name(model: str) -> bool:
    """Whether ``model`` can name a profile: an HDF5 group of a cube, one item of a comma list of models and a
    part of a file's name."""
    return (
        0 < len(model.encode()) <= MAX_NAME  # bytes, as a file's name is limited
        and model == model.strip()
        and model not in (".", "..")
        and not set(model) & set("/,")
        and not _control(model)
    )


def _control(text: str) -> str | None:
    """The first control character of ``text`` (NUL, a newline, ...), or None: HDF5 stores no NUL in a string,
    and a cube's names are shown one a line."""
    return next((c for c in text if unicodedata.category(c) == "Cc"), None)


def _check_text(path: str | Path, names: Sequence[str], meta: dict[str, Any]) -> None:
    """Refuse a tensor's name or a text field holding a control character (a NUL was a traceback as the cube was
    written, and left its checkpoint behind), and a batch size that is not a whole number of samples."""
    fields = [(f"tensor {i} name", n) for i, n in enumerate(names)]
    fields += [(key, meta[key]) for key in ("device", "dtype", "source") if isinstance(meta.get(key), str)]
    for what, text in fields:
        if (c := _control(str(text))) is not None:
            raise InputError(
                f"{path}: {what} {str(text)!r} holds the control character {c!r}; give text without"
            )
    batch = meta.get("batch_size")
    if batch is not None:
        samples = real_scalar(batch)
        if samples is None or not (0 <= samples <= MAX_BATCH and samples == math.floor(samples)):
            raise InputError(
                f"{path}: batch_size {batch!r} must be a whole number of samples from 0 to {MAX_BATCH:g}"
            )
        meta["batch_size"] = int(samples)


def _check_t1(t1: object, path: str | Path) -> float:
    if t1 is None:
        raise InputError(f"needed: {path} has no single-GPU iteration time; give it in seconds", param="t1")
    seconds = real_scalar(t1)  # NumPy's numbers too
    if seconds is None or not (MIN_SECONDS <= seconds <= MAX_SECONDS):
        raise InputError(f"{path}: iteration time {t1!r} must be a number of seconds in [1e-6, 1e4]")
    return seconds


def _number(text, path, line, what, whole=False):
    try:
        value = decimal(text)
    except ValueError:
        raise InputError(f"{where(path, line)}: {what} {text.strip()!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{where(path, line)}: {what} {text.strip()!r} must be finite and >= 0")
    if whole and value != math.floor(
        value
    ):  # gradient bytes: a saved profile writes them whole (4.5 became 4)
        raise InputError(f"{where(path, line)}: {what} {text.strip()!r} must be a whole number of bytes")
    return value


def read_bklog(path: str | Path, t1: float | None, model: str | None = None) -> Profile:
    """Read the paper's ``.bk.log`` (waits in microseconds, backward order)."""
    path = Path(path)
    lines = _read_lines(path)
    if len(lines) < 3:
        raise InputError(f"{path}: expected a comment, a batch count and a tensor count line")
    count_text = lines[2].strip()
    # ASCII digits, as every number here (int() took '3_0' as 30 and Arabic-Indic digits, a hunt)
    count = whole_number(count_text)
    if count is None:
        raise InputError(
            f"{where(path, 3)}: tensor count {count_text!r} is not a whole number in ASCII digits"
        )
    batches = lines[1].strip()
    if whole_number(batches) is None:  # read by no model, but a file whose line is not a count is no .bk.log
        raise InputError(f"{where(path, 2)}: batch count {batches!r} is not a whole number in ASCII digits")
    rows = [(i + 1, text) for i, text in enumerate(lines) if i >= 3 and text.strip()]
    if len(rows) != count:
        raise InputError(f"{where(path, 3)}: count line says {count} tensors but {len(rows)} rows follow")
    waits, sizes = [], []
    for lineno, text in rows:
        cols = text.split(",")
        if len(cols) != 2:
            raise InputError(f"{where(path, lineno)}: expected 2 columns wait_us,grad_bytes, got {len(cols)}")
        waits.append(_number(cols[0], path, lineno, "wait_us") * 1e-6)
        sizes.append(_number(cols[1], path, lineno, "grad_bytes", whole=True))
    name = model or path.name.split(".")[0]
    names = [f"tensor{i}" for i in range(count)]
    return make_profile(name, names, sizes, waits, t1, path, source=str(path))


CSV_HEADER = ["name", "grad_bytes", "backward_us"]
# read where the header has them: forward_us and unit for FSDP (its gathers, and the unit each tensor is gathered
# in: one a tensor without it), shape for low-rank compression
CSV_OPTIONAL = ["forward_us", "unit", "shape"]
CSV_COLUMNS = ", ".join(CSV_HEADER) + ", and optionally " + ", ".join(CSV_OPTIONAL)
# The units a column is read in, for a column named in another (a hunt: backward_ms, grad_MB were refused with
# "header must be exactly ...", the header read never shown, no word of the unit)
CSV_UNITS = {
    "backward": ("backward_us", "microseconds"),
    "forward": ("forward_us", "microseconds"),
    "grad": ("grad_bytes", "bytes"),
}


def read_csv(path: str | Path, t1: float | None, model: str | None = None) -> Profile:
    """Read a CSV profile: a header naming the columns ``name,grad_bytes,backward_us`` and optionally
    ``forward_us`` (microseconds), ``unit`` (the FSDP unit, a whole number) and ``shape`` (``768x3072``), in any
    order; one row per tensor, in backward order."""
    path = Path(path)
    # Records at the lines they start on (a quoted name across lines put every later error a line early, a
    # hunt), '#' comments before the header as a measurements file has them (after it, a tensor's name).
    records = read_csv_records(path, "profile file", comments_after_header=False)
    if not records:
        raise InputError(
            f"{path}: empty; a CSV profile's first line is its header, the columns {CSV_COLUMNS}"
        )
    header_line, cells = records[0]
    header = [c.strip() for c in cells]
    column = _csv_columns(header, path, header_line)
    names, sizes, waits, forwards, units, shapes = [], [], [], [], [], []
    for lineno, cols in records[1:]:
        if not cols or not "".join(cols).strip():
            continue
        if len(cols) != len(header):
            raise InputError(
                f"{where(path, lineno)}: expected {len(header)} columns {','.join(header)}, got {len(cols)}"
            )
        names.append(cols[column["name"]].strip())
        sizes.append(_number(cols[column["grad_bytes"]], path, lineno, "grad_bytes", whole=True))
        waits.append(_number(cols[column["backward_us"]], path, lineno, "backward_us") * 1e-6)
        if "forward_us" in column:
            forwards.append(_number(cols[column["forward_us"]], path, lineno, "forward_us") * 1e-6)
        if "unit" in column:
            units.append(_number(cols[column["unit"]], path, lineno, "unit"))
        if "shape" in column:
            shapes.append(_shape_text(cols[column["shape"]], path, lineno))
    return make_profile(
        model or path.stem,
        names,
        sizes,
        waits,
        t1,
        path,
        source=str(path),
        **({"shape": shapes} if "shape" in column else {}),
        **({"forward": forwards} if "forward_us" in column else {}),
        **({"unit": units} if "unit" in column else {}),
    )


def _csv_columns(header: list[str], path: Path, line: int) -> dict[str, int]:
    """Each column a CSV profile's ``header`` names -> its index; refused, naming the header read, where a
    column is missing, given twice, or not one the reader reads (with what it may have meant: :func:`_csv_hint`)."""
    said = f"; header is {','.join(header)}"
    for mark, name in (("\t", "tabs"), (";", "semicolons")):
        if len(header) == 1 and mark in header[0]:
            raise InputError(
                f"{where(path, line)}: columns separated by {name}; a CSV profile separates them by commas"
            )
    for c in header:
        if header.count(c) > 1:
            raise InputError(f"{where(path, line)}: column {c!r} given twice{said}")
        if c not in CSV_HEADER + CSV_OPTIONAL:
            raise InputError(
                f"{where(path, line)}: column {c!r} is not read{_csv_hint(c)}; the columns: {CSV_COLUMNS}{said}"
            )
    missing = [c for c in CSV_HEADER if c not in header]
    if missing:
        raise InputError(f"{where(path, line)}: missing column(s) {', '.join(missing)}{said}")
    return {c: header.index(c) for c in header}


def _csv_hint(column: str) -> str:
    """What a CSV profile's column that is not read may have meant: a column in another case, one whose name
    says another unit (convert it) or the same (rename it), an empty name, or the nearest name."""
    low, known = column.lower(), CSV_HEADER + CSV_OPTIONAL
    if not column:
        return " (an empty name: a trailing comma, or pandas' index column, which to_csv(index=False) leaves out)"
    if low in known:
        return f" ({low} in another case: name it {low})"
    stem, _, rest = low.partition("_")
    if stem in CSV_UNITS:
        read, unit = CSV_UNITS[stem]
        suffix = column.rpartition("_")[2] if rest else ""
        if suffix.lower() == read.rpartition("_")[2]:
            return f" ({read} is read, in {unit}: name the column so)"
        return f" ({read} is read, in {unit}" + (
            f": convert the column from {suffix} and name it so)" if suffix else ")"
        )
    close = difflib.get_close_matches(low, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _shape_text(text, path, line):
    """``768x3072`` -> (768, 3072)."""
    try:
        return tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError:
        raise InputError(f"{where(path, line)}: shape {text.strip()!r} must look like 768x3072") from None


JSON_FORMAT = "netsweep-profile-1"  # what :meth:`Profile.to_json` writes
PROFILE_KEYS = ("format", "model", "iteration_time_s", "device", "batch_size", "dtype", "source", "tensors")
TENSOR_KEYS = ("name", "grad_bytes", "backward_us", "forward_us", "unit", "shape")


def _check_keys(data: dict, path: Path) -> None:
    """Refuse a JSON profile of another format, or with a key it does not read: a misspelt key is never ignored
    (a hunt: ``"froward_us"`` and ``"iteration_time"`` were read as absent, ``"format": "netsweep-profile-2"`` as
    this one)."""
    if "format" in data and data["format"] != JSON_FORMAT:
        raise InputError(
            f"{path}: format {data['format']!r}; this reads {JSON_FORMAT!r} (sweep profile import writes it)"
        )
    _refuse_unknown(data, PROFILE_KEYS, str(path))


def _refuse_unknown(obj: dict, known: tuple[str, ...], label: str) -> None:
    """Refuse a key of ``obj`` not in ``known``, naming the closest known one."""
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (keys: {', '.join(known)})"
            raise InputError(f"{label}: key {key!r} is not read{hint}")


def read_json(path: str | Path, t1: float | None = None, model: str | None = None) -> Profile:
    """Read netsweep's JSON profile; ``t1`` overrides the file's iteration time."""
    path = Path(path)
    data = read_json_file(path, "profile file", "an object with a 'tensors' list")
    if not isinstance(data, dict) or not isinstance(data.get("tensors"), list):
        raise InputError(f"{path}: expected an object with a 'tensors' list")
    _check_keys(data, path)
    for key, kinds, what in (
        ("model", (str,), "a name"),
        ("source", (str,), "text"),
        ("device", (str,), "text"),
        ("dtype", (str,), "text"),
        ("batch_size", (int, float), "a number"),
    ):
        if (
            key in data
            and data[key] is not None
            and (isinstance(data[key], bool) or not isinstance(data[key], kinds))
        ):
            raise InputError(f"{path}: '{key}' is {data[key]!r}; expected {what}")
    names, sizes, waits, forwards, units, shapes = [], [], [], [], [], []
    for i, t in enumerate(data["tensors"]):
        label = f"{path}: tensors[{i}]"
        if not isinstance(t, dict):
            raise InputError(f"{label} needs grad_bytes and backward_us")
        # first: a misspelt grad_bytes is named, not said missing (a hunt)
        _refuse_unknown(t, TENSOR_KEYS, label)
        if "grad_bytes" not in t or "backward_us" not in t:
            raise InputError(f"{label} needs grad_bytes and backward_us")
        names.append(str(t.get("name", f"tensor{i}")))
        sizes.append(_number(str(t["grad_bytes"]), label, None, "grad_bytes", whole=True))
        waits.append(_number(str(t["backward_us"]), label, None, "backward_us") * 1e-6)
        if "forward_us" in t:
            forwards.append(_number(str(t["forward_us"]), label, None, "forward_us") * 1e-6)
        if "unit" in t:
            units.append(_number(str(t["unit"]), label, None, "unit"))
        if "shape" in t:
            if not isinstance(t["shape"], list):
                raise InputError(f"{label}: shape must be a list of integers, like [768, 3072]")
            shapes.append(t["shape"])
    t1 = t1 if t1 is not None else data.get("iteration_time_s")
    meta = {k: data[k] for k in ("device", "batch_size", "dtype") if k in data}
    for key, values in (("forward", forwards), ("unit", units), ("shape", shapes)):
        if values and len(values) != len(waits):
            raise InputError(f"{path}: '{key}' is given for some tensors but not all")
        if values:
            meta[key] = values
    return make_profile(
        model or data.get("model") or path.stem,
        names,
        sizes,
        waits,
        t1,
        path,
        source=data.get("source") or str(path),
        **meta,
    )


def _read_lines(path):
    return read_lines(path, "profile file")


def _read(path: str | Path, t1: float | None = None, model: str | None = None) -> Profile:
    """A profile file read by its extension's reader, ``t1`` (if given) its T1 whatever the file holds."""
    name = str(path).lower()
    if name.endswith(".json"):
        return read_json(path, t1, model)
    if name.endswith(".csv"):
        return read_csv(path, t1, model)
    if name.endswith(".log"):
        return read_bklog(path, t1, model)
    raise InputError(f"{path}: unknown profile format; expected .json, .csv or .bk.log")


@refuse_unknown_keywords
def load_profile(path: str | Path, *, t1: float | None = None, model: str | None = None) -> Profile:
    """Read a profile file, choosing the reader by extension.

    Args:
      path: a ``.json`` (netsweep's own format), ``.csv`` (columns ``name,grad_bytes,backward_us``,
        optionally ``forward_us``, ``unit``, ``shape``, in any order)
        or ``.bk.log`` (the paper's) file.
      t1: single-GPU iteration time (s). A file without one (.csv, .bk.log) takes it as its T1 (required
        there); a file with one of its own has its compute scaled to it (:meth:`Profile.scaled_to`: every wait
        and forward time by t1 / T1, the gradients unchanged), as a built-in model's is, and as ``sweep grid``'s
        ``--iteration-time`` and ``sweep calibrate``'s ``t1`` column read it. A file whose own T1 is shorter than its
        passes takes ``t1`` as its T1; one whose own T1 is no number of seconds is refused.
      model: the profile's name (default: the file's, else its stem).

    Returns:
      The :class:`Profile`. A malformed file raises ``InputError`` naming the file and line; a file without an
      iteration time and no ``t1``, one with ``param="t1"`` (``--iteration-time`` on the command line).
    """
    if model is not None and not (isinstance(model, str) and model.strip()):
        raise InputError(f"{model!r}: a profile's name is a non-empty string", param="model")
    if t1 is None or not str(path).lower().endswith(".json"):  # .csv and .bk.log keep no T1: t1 is theirs
        return _given_t1(_read(path, t1, model), t1)
    try:
        own = _read(path, None, model)
    except InputError as e:
        # None of its own (param t1), or its own shorter than its passes: t1 is its T1. Any other error is the
        # file's, its own T1 that is no number of seconds too (NaN, -1, "abc" had been taken in silence: a hunt).
        if not (e.param == "t1" or isinstance(e, ShortIterationTime)):
            raise
        return _given_t1(_read(path, t1, model), t1)
    return own if t1 is None else own.scaled_to(t1, f"{path}: t1")


def _given_t1(profile: Profile, t1: float | None) -> Profile:
    """``profile`` read with ``t1`` as its T1 where its file keeps none: marked so (``t1_given``)."""
    return profile if t1 is None else dataclasses.replace(profile, t1_given=True)
