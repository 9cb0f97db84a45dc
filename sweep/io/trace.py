"""``sweep profile import``: a profile from a PyTorch profiler Chrome trace (no torch needed).

A trace written by ``torch.profiler.profile(record_shapes=True, ...)`` and
``export_chrome_trace`` holds, for one training step:

- one ``torch::autograd::AccumulateGrad`` event per parameter gradient, in the
  order backward produces them, with the gradient's shape (``Input Dims``) and
  dtype (``Input type``): the gradient is ready when the event ends and, on a GPU,
  when the GPU has run its own kernels and the backward's compute the host had launched
  by then on its streams (the kernels that computed it: a stream runs in launch order;
  kernels carry their launching op's ``External id``; NCCL's communication left out);
- the forward ops before backward, whose inputs include each parameter's shape;
- the step itself (a ``ProfilerStep#k`` span when the profiler's ``step()`` was
  called; else, where torch.optim marked several steps' ends, ``Optimizer.step#...``
  spans, from the end of one to the end of the next; else the span of the step's
  events), extended to the end of the last GPU kernel its ops launched.

From these: tensors in backward order with their bytes (elements x dtype size)
and shapes, backward waits from the start of backward (the first
``autograd::engine::evaluate_function`` event; on a GPU, the start of the first work
launched from then on), T1 = the step's span, and each
parameter's forward time: the duration of the first top-level forward op that reads
its shape (on a GPU, the longer of it and the time of the kernels it and the ops
inside it launched), walking parameters and ops both in forward order (omitted,
with a note in the source, when not every parameter is matched). With several
steps in one trace the last complete one is used; a trace of several steps with
neither span (no ``prof.step()`` and an optimizer of one's own) is read as one, and so
refused as a step of several micro-batches is (an operator of the forward's thread
reading a parameter's shape outside backward, between the gradients). Ops are nested
on their own thread, ``zero_grad``'s zeroing is no forward, and a gzipped trace is
unpacked first.
"""

import bisect
import math
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.textfile import parsed_json, read_lines
from netsweep_jax.sweep.model.profile import Profile, good_name, make_profile, recorded_t1

# torch's name of a gradient's dtype in a trace -> (the profile's dtype name, bytes an element)
DTYPES = {
    "float": ("float32", 4),
    "double": ("float64", 8),
    "c10::Half": ("float16", 2),
    "half": ("float16", 2),
    "c10::BFloat16": ("bfloat16", 2),
    "bfloat16": ("bfloat16", 2),
}
ACCUMULATE = "torch::autograd::AccumulateGrad"
BACKWARD = "autograd::engine::evaluate_function"
OPTIMIZER_STEP = "Optimizer.step#"  # torch.optim's span of each optimizer step (Optimizer.step#SGD.step)
ZERO_GRAD = "Optimizer.zero_grad#"  # and of zero_grad, whose aten::zero_ ops read every parameter's shape
HOST_CATEGORIES = (None, "cpu_op", "user_annotation", "python_function")  # the host's events, not the GPU's
# The categories of the events whose times the profile reads (None: an event with no category, read as any).
READ_CATEGORIES = (*HOST_CATEGORIES, "kernel", "gpu_memcpy", "gpu_memset")


def _device(data: object) -> str | None:
    """The GPU the trace ran on: its ``deviceProperties``' name (the profiler lists the process's GPUs; the
    first where they differ), None for a CPU trace (an empty list) or one without them. A hunt: an H100's trace
    was imported as device unknown and priced as the paper's V100."""
    devices = data.get("deviceProperties") if isinstance(data, dict) else None
    names = [
        d["name"].strip() for d in devices or [] if isinstance(d, dict) and isinstance(d.get("name"), str)
    ]
    return names[0] if names and names[0] else None


def _events(path):
    text = _trace_text(Path(path))
    # As JSON reads it: the profiler writes each key once, and a Python hook per object of a trace of millions of
    # events would be its parser's cost several times over.
    data = parsed_json(text, path, "a torch.profiler Chrome trace", param="trace", object_pairs_hook=None)
    return _complete(data, path), _device(data)


def _trace_text(path: Path) -> str:
    """The trace's text; a gzipped one's (torch's ``export_chrome_trace("t.json.gz")`` and
    ``tensorboard_trace_handler(use_gzip=True)`` write them; refused as "not a text file" before, a hunt)
    unpacked first, known by gzip's magic bytes whatever the file's name."""
    try:
        with open(path, "rb") as head:
            packed = head.read(2) == b"\x1f\x8b"
    except OSError:
        packed = False  # not a readable file: read_lines says which
    if not packed:
        return "\n".join(read_lines(path, "trace file"))
    import gzip
    import zlib

    try:
        with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as text:
            return text.read()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a gzipped UTF-8 trace file ({e})", param="trace") from None


def _complete(data, path):
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise InputError(
            f"{path}: no traceEvents list; expected a torch.profiler Chrome trace", param="trace"
        )
    # Complete events ("X") with a name, a finite start and a duration >= 0; ``args`` an object (else none).
    # One the profile reads without them is refused (dropped, a gradient went missing from the profile, or an
    # operator's forward time moved, in silence): a gradient's, a backward function's, a step's, and every
    # event of the categories read (operators, annotations, GPU kernels and copies; or of none). Any other
    # (the CUDA runtime's calls, the trace's own span) is dropped, as the profiler has written negative durations
    # (pytorch/kineto#646) on events the profile reads no number of.
    complete = []
    for i, event in enumerate(events):
        if not (isinstance(event, dict) and event.get("ph") == "X" and isinstance(event.get("name"), str)):
            continue
        if _finite(event.get("ts")) and _finite(event.get("dur")) and event["dur"] >= 0:
            complete.append({**event, "args": event["args"] if isinstance(event.get("args"), dict) else {}})
        elif (
            event["name"] == ACCUMULATE
            or event["name"].startswith(("ProfilerStep#", BACKWARD))
            or event.get("cat") in READ_CATEGORIES
        ):
            raise InputError(
                f"{path}: traceEvents[{i}] ({event['name']}): ts {event.get('ts')!r} and dur "
                f"{event.get('dur')!r} must be a finite start and a duration >= 0 (us)",
                param="trace",
            )
    return complete


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _key(value: object) -> object:
    """An ``External id`` usable as a key (a number or text), else None."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _inside(event, span):
    """Whether ``event`` starts inside ``span`` (both trace events, us)."""
    return span["ts"] <= event["ts"] <= span["ts"] + span["dur"]


def _step_window(path, spans):
    """(start, end) in us of the last ProfilerStep with gradients, or of the one before it where the last one
    never reached the optimizer's step that the one before it did (a trace cut short in its last step's backward:
    that step had been read as the model, 2 of its 4 tensors, a hunt), or of all events."""
    grads = [e for e in spans if e["name"] == ACCUMULATE]
    if not grads:
        raise InputError(
            f"{path}: no {ACCUMULATE} events: record a full training step (forward, backward, "
            f"optimizer) with torch.profiler",
            param="trace",
        )
    # The host's steps only: a CUDA trace copies each onto the GPU's timeline (gpu_user_annotation), starting
    # later, and the copy taken as the step left out the gradients before it (a hunt: 2 of 4 tensors).
    steps = [
        e for e in spans if str(e["name"]).startswith("ProfilerStep#") and e.get("cat") in HOST_CATEGORIES
    ]
    taken = [step for step in sorted(steps, key=lambda e: e["ts"]) if any(_inside(g, step) for g in grads)]
    optimizers = [
        e for e in spans if str(e["name"]).startswith(OPTIMIZER_STEP) and e.get("cat") in HOST_CATEGORIES
    ]

    def finished(step):  # its optimizer ran after its gradients (where torch.optim marks its steps at all)
        return any(_inside(o, step) for o in optimizers)

    # only the last can be cut short (a review: counting gradients took an earlier step of two passes)
    if taken:
        cut = len(taken) > 1 and finished(taken[-2]) and not finished(taken[-1])
        step = taken[-2 if cut else -1]
        return step["ts"], step["ts"] + step["dur"]
    # No ProfilerStep (the profiler's step() never called): steps end at torch.optim's Optimizer.step spans;
    # the last one after gradients, from the end of the one before it. Read as one step before, two steps'
    # gradients were one profile of every parameter twice (a hunt).
    # The host's spans only (a CUDA trace copies each onto the GPU's timeline, ending later); optimizers that end
    # with no gradient between them (Muon beside AdamW) end one step, at the last of them.
    ends = sorted(e["ts"] + e["dur"] for e in optimizers)
    bounds: list[float] = []
    for end in ends:
        if any((bounds[-1] if bounds else -math.inf) < g["ts"] <= end for g in grads):
            bounds.append(end)
        elif bounds:
            bounds[-1] = end
    if len(bounds) > 1:
        return bounds[-2], bounds[-1]
    cpu = [e for e in spans if e.get("cat") in HOST_CATEGORIES[1:]] or spans  # named host events, else any
    return min(e["ts"] for e in cpu), max(e["ts"] + e["dur"] for e in cpu)


def _shape_dtype_bytes(path, event, index):
    args = event.get("args", {})
    dims, types = args.get("Input Dims"), args.get("Input type")
    if (
        not isinstance(dims, list)
        or not isinstance(types, list)
        or not dims
        or not types
        or not isinstance(dims[0], list)
    ):
        raise InputError(
            f"{path}: gradient {index} has no shape: record the trace with record_shapes=True", param="trace"
        )
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**53 for d in dims[0]):
        raise InputError(
            f"{path}: gradient {index} has shape {str(dims[0])[:60]}; expected a list of whole numbers from 0 to 2^53 "
            "(no fractions, no exponent notation)",
            param="trace",
        )
    shape = tuple(int(d) for d in dims[0])
    dtype = DTYPES.get(str(types[0])) if isinstance(types[0], str) else None
    if dtype is None:
        raise InputError(
            f"{path}: gradient {index} has dtype {types[0]!r}; known: {', '.join(DTYPES)}", param="trace"
        )
    # a 0-d parameter (CLIP's logit_scale) keeps its shape (): forward ops list it as [], and (1,) matched none,
    # dropping every parameter's forward time (a hunt)
    return shape, dtype[0], dtype[1] * max(1, math.prod(shape))


def _gpu_end(spans):
    """External id -> end (us) of the last GPU kernel that op launched."""
    out: dict[Any, float] = {}
    for e in spans:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            key = _key(e["args"].get("External id"))
            if key is not None:
                out[key] = max(out.get(key, 0.0), e["ts"] + e["dur"])
    return out


# Communication's GPU work: NCCL's kernels and the ops that launch them (DDP's all-reduce starts from a hook of each
# AccumulateGrad, on its own stream): never a gradient's compute (a review: a DDP trace's gradients had been
# made ready at each all-reduce's end, the communication the sweep adds again).
COMMUNICATION_OPS = ("record_param_comms", "nccl:", "c10d::")


def _gpu_launched(spans, inside, backward_start):
    """The backward's compute on the GPU in the order the host launched it: ([T] the host start, us, of each
    kernel's, copy's or memset's launching op in the step (``inside``), ascending; [T] the end of the last of them
    launched by then, us; [T] each one's start, us). A stream runs its work in launch order, so what the host had
    launched by a time is done on the GPU at that end: the work on the streams the backward computes on (those
    of the compute kernels its ops launch from ``backward_start`` on), less communication
    (:data:`COMMUNICATION_OPS`, NCCL's kernels); work whose op is not in the step is left out (a trace's ids
    may repeat across steps: a review)."""
    ops = {
        k: e
        for e in inside
        if e.get("cat") in HOST_CATEGORIES and (k := _key(e.get("args", {}).get("External id"))) is not None
    }
    work = [
        (ops[k]["ts"], e)
        for e in spans
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and (k := _key(e["args"].get("External id"))) in ops
        and e["ts"] >= ops[k]["ts"]  # run after its launch: not an earlier step's of the same id
        and not str(e["name"]).startswith("nccl")
        and not str(ops[k]["name"]).startswith(COMMUNICATION_OPS)
    ]
    streams = {
        _key(e["args"].get("stream")) for at, e in work if at >= backward_start and e.get("cat") == "kernel"
    }
    ordered = sorted(
        (at, e["ts"] + e["dur"], e["ts"]) for at, e in work if _key(e["args"].get("stream")) in streams
    )
    ends, latest = [], -math.inf
    for _, end, _ in ordered:
        latest = max(latest, end)
        ends.append(latest)
    return [w[0] for w in ordered], ends, [w[2] for w in ordered]


def _done_on_gpu(launched, host_time):
    """The end (us) of the GPU work the host had launched by ``host_time`` (:func:`_gpu_launched`), 0 where none."""
    times, ends, _ = launched
    i = bisect.bisect_right(times, host_time)
    return ends[i - 1] if i else 0.0


def _backward_start_on_gpu(launched, host_start, first_gradient):
    """Where backward starts: on the GPU, the first work launched from the host's start of backward on (the GPU
    may still run the forward when the host begins backward: a trace of queued kernels), where the GPU computed
    the first gradient (work launched before its AccumulateGrad began, at host time ``first_gradient``); else
    the host's start."""
    times, _, starts = launched
    i, j = bisect.bisect_left(times, host_start), bisect.bisect_left(times, first_gradient)
    return min(starts[i:j], default=host_start)


def _thread(event):
    """The (process, thread) an event ran on, as keys (None where one is not a number or text)."""
    return _key(event.get("pid")), _key(event.get("tid"))


def _nesting(ops):
    """Each op with the top-level op it runs inside on its own thread (itself where it is one), in time order: an
    op of another thread (a DataLoader's pin-memory thread) overlapping the forward had hidden the ops inside its
    span, and every forward time was dropped (a hunt)."""
    tops: dict[tuple[object, object], dict[str, Any]] = {}
    for e in sorted(ops, key=lambda e: (e["ts"], -e["dur"])):
        top = tops.get(_thread(e))
        if top is None or e["ts"] >= top["ts"] + top["dur"]:
            tops[_thread(e)] = top = e
        yield e, top


def _top_level(ops):
    """Ops not nested inside another op of the list on their own thread (:func:`_nesting`), in time order."""
    return [e for e, top in _nesting(ops) if e is top]


def _kernel_seconds(ops, spans):
    """id(top-level op) -> seconds the GPU ran the kernels it and the ops inside it launched (kernels name their
    launching op by ``External id``; a top-level op as :func:`_top_level` finds it): the time any of them ran,
    so kernels on concurrent streams count once (summed, two overlapping kernels had doubled a layer's
    forward). Empty on a CPU trace."""
    kernels: dict[Any, list[tuple[float, float]]] = {}
    for e in spans:
        if e.get("cat") == "kernel" and (k := _key(e["args"].get("External id"))) is not None:
            kernels.setdefault(k, []).append((e["ts"], e["ts"] + e["dur"]))
    launched: dict[int, list[tuple[float, float]]] = {}
    for e, top in _nesting(ops):
        launched.setdefault(id(top), []).extend(kernels.get(_key(e["args"].get("External id")), ()))
    return {
        top: sum(end - begin for begin, end in _merged(runs)) * 1e-6 for top, runs in launched.items() if runs
    }


def _forward_times(forward_ops, shapes_forward, gpu_seconds):
    """Seconds of forward per parameter (forward order), or None when not every parameter is matched: the longer of
    a top-level op's duration on the host and its GPU kernels' (``gpu_seconds``, :func:`_kernel_seconds`: a CUDA
    trace's host op only launches them, and its 20 us had been read as a layer's forward, a hunt; a launch-bound
    layer's is the host's, a review)."""
    times = [0.0] * len(shapes_forward)
    i = 0
    for op in _top_level(forward_ops):
        dims = _tensor_shapes(op)
        first = True
        while i < len(shapes_forward) and shapes_forward[i] in dims:
            dims.remove(shapes_forward[i])
            if first:
                times[i] = max(op["dur"] * 1e-6, gpu_seconds.get(id(op), 0.0))
                first = False
            i += 1
    return times if i == len(shapes_forward) else None


def _spans(events, *prefixes):
    """The (start, end) us of the host's events named one of ``prefixes``..., merged where they overlap, in time
    order."""
    return _merged(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if str(e["name"]).startswith(prefixes) and e.get("cat") in HOST_CATEGORIES
    )


def _merged(intervals):
    """(start, end) intervals, merged where they overlap, in time order (lists of two)."""
    merged: list[list[float]] = []
    for begin, finish in sorted(intervals):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], finish)
        else:
            merged.append([begin, finish])
    return merged


def _within(spans, ts):
    """Whether ``ts`` falls inside one of the merged ``spans`` (:func:`_spans`)."""
    import bisect

    at = bisect.bisect_right(spans, [ts, math.inf]) - 1
    return at >= 0 and spans[at][0] <= ts <= spans[at][1]


def _tensor_shapes(op, lists=False):
    """The shapes of the tensors an operator's ``Input Dims`` lists, in order (each a list of integers); with
    ``lists``, each of a tensor list's too (``aten::cat`` lists [[[32, 128], [32, 128]], []]: unhashable where
    read as one shape, a review)."""
    listed = op["args"].get("Input Dims")
    shapes = []
    for d in listed if isinstance(listed, list) else []:
        nested = lists and isinstance(d, list) and d and all(isinstance(x, list) for x in d)
        shapes += [
            tuple(s)
            for s in (d if nested else [d])
            if isinstance(s, list) and all(isinstance(x, int) for x in s)
        ]
    return shapes


def _shapes_read(op):
    """The shapes of every tensor an operator reads, its tensor lists' included (:func:`_tensor_shapes`)."""
    return set(_tensor_shapes(op, lists=True))


def _refuse_micro_batches(path, ops, inside, grads, shapes, backward_start):
    """Refuse a step of several forward and backward passes (micro-batches, or steps with no span to tell them
    apart): an operator outside backward, on a thread that ran the forward, that reads a parameter's shape
    between the first gradient and the last is a forward pass between two backward passes. Read as one, every
    gradient counted once a pass: 12 tensors of a model of 6, twice its bytes on the network (a hunt). A 0-d
    shape is every scalar argument's and tells nothing; another thread's op (a pin-memory thread's) is no
    forward (a review)."""
    backward, params = _spans(inside, BACKWARD), {s for s in shapes if s}
    threads = {_thread(e) for e in ops if e["ts"] < backward_start and _shapes_read(e) & params}
    first, last = grads[0]["ts"], grads[-1]["ts"]
    for e in ops:
        if (
            first < e["ts"] < last
            and _thread(e) in threads
            and not _within(backward, e["ts"])
            and _shapes_read(e) & params
        ):
            raise InputError(
                f"{path}: {e['name']} at {e['ts']:,.0f} us reads a parameter's shape between the step's "
                "gradients, outside backward: a forward pass between two backward passes. Several steps: call "
                "prof.step() at each; several micro-batches (gradient accumulation): profile a step of one and "
                "give sweeps --accum",
                param="trace",
            )


def _forward_ops(ops, inside, backward_start):
    """The host's operators of the forward: before backward, and not zero_grad(set_to_none=False)'s aten::zero_
    of each parameter (read as its forward time, 5 us for every layer, a hunt), nor anything inside one (its
    aten::fill_, a review): the optimizer's span, and nn.Module.zero_grad's zero_ ops, which have none."""
    zeroing = _spans(inside, ZERO_GRAD, "aten::zero_")
    return [e for e in ops if e["ts"] < backward_start and not _within(zeroing, e["ts"])]


def import_trace(path: str | Path, model: str | None = None) -> Profile:
    """The :class:`~sweep.model.profile.Profile` of the training step in a torch.profiler Chrome trace."""
    spans, device = _events(path)
    start, end = _step_window(path, spans)
    inside = [e for e in spans if start <= e["ts"] <= end]
    grads = sorted((e for e in inside if e["name"] == ACCUMULATE), key=lambda e: e["ts"])
    backward = [e["ts"] for e in inside if e["name"].startswith(BACKWARD)]
    if not backward:
        raise InputError(
            f"{path}: no {BACKWARD} events in the step: record a full training step (forward, "
            f"backward, optimizer) with torch.profiler",
            param="trace",
        )
    backward_start = min(backward)
    gpu = _gpu_end(spans)  # a GPU kernel may end after the CPU side of the step has
    launched = [gpu[k] for k in (_key(e["args"].get("External id")) for e in inside) if k in gpu]
    end = max([end] + launched)
    ready, shapes, sizes, dtypes = [], [], [], []
    queued = _gpu_launched(spans, inside, backward_start)
    for i, g in enumerate(grads):
        shape, dtype, size = _shape_dtype_bytes(path, g, i)
        dtypes.append(dtype)
        key = _key(g["args"].get("External id"))
        # ready when its event has ended on the host, its own kernels (if any) have, and the GPU has run what the
        # host had launched by then (the kernels that computed it: a hunt, an AccumulateGrad that launches no
        # kernel, set_to_none's, had taken the host's time, the GPU still 32 ms behind); its own kernels too,
        # on whatever stream
        own = gpu.get(key, 0.0) if key is not None else 0.0
        ready.append(max(g["ts"] + g["dur"], own, _done_on_gpu(queued, g["ts"] + g["dur"])))
        shapes.append(shape)
        sizes.append(size)
    ready = [max(ready[: i + 1]) for i in range(len(ready))]  # a gradient is ready once its event has ended
    ops = [e for e in inside if e.get("cat") == "cpu_op" and str(e["name"]).startswith("aten::")]
    _refuse_micro_batches(path, ops, inside, grads, shapes, backward_start)
    # Waits from backward's start where it ran: on the GPU, its first kernel launched from the host's start of
    # backward (the GPU may still be running the forward then); on the host where it launched none.
    began = _backward_start_on_gpu(queued, backward_start, grads[0]["ts"])
    waits = [(r - p) * 1e-6 for r, p in zip(ready, [began] + ready[:-1])]
    forward_ops = _forward_ops(ops, inside, backward_start)
    forward = _forward_times(forward_ops, shapes[::-1], _kernel_seconds(forward_ops, spans))
    t1, floored = recorded_t1((end - start) * 1e-6, waits, forward or [])
    if model is not None and not model.strip():  # empty is refused, never "the file's name"
        raise InputError("'': give the profile a name, or leave --model out for the file's", param="model")
    name = model or Path(path).name.split(".")[0]
    if model is None and not good_name(name):  # the file's name gives none: said as that, with the way out
        raise InputError(
            f"{path}: the file's name gives the profile no usable name ({name!r}); give one with --model",
            param="trace",
        )
    note = "" if forward is not None else "; forward times omitted (not every parameter matched a forward op)"
    return make_profile(
        name,
        [f"grad{i}" for i in range(len(grads))],
        sizes,
        waits,
        t1,
        path,
        source=f"imported from torch.profiler trace {Path(path).name}{note}{floored}",
        # a 0-d parameter kept as one element, as a profile's shapes have it
        shape=[s or (1,) for s in shapes],
        # The gradients' dtype as the trace has it ("float32+bfloat16" where they differ), not the default's.
        dtype="+".join(dict.fromkeys(dtypes)),
        **({"device": device} if device else {}),
        **({"forward": forward[::-1]} if forward is not None else {}),
    )
