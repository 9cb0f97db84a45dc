"""Profiles from real runs: importing a torch.profiler trace (no torch needed) and measuring (torch only)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import netsweep_jax.sweep as sweep
from helpers import invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.trace import import_trace

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "examples" / "tiny.trace.json"  # made by the command in the README (torch 2.13 on a CPU)
# examples/tiny_model.py's parameters in backward order (last layer first; a layer's weight before its bias
# in the trace: autograd accumulates the weight's gradient first).
SHAPES = [(10,), (10, 64), (64,), (64, 256), (16,), (16,), (16, 3, 3, 3), (16,)]


def test_the_committed_trace_gives_the_models_gradients_in_backward_order():
    p = import_trace(TRACE)
    assert p.shape == tuple(SHAPES)
    assert p.grad_bytes.tolist() == [4.0 * __import__("math").prod(s) for s in SHAPES]
    assert p.total_bytes == 70312
    assert (p.wait >= 0).all() and 0 < p.backward_time < p.t1 < 1.0
    assert (
        p.forward is not None and (p.forward > 0).sum() == 4
    )  # one forward op per layer: conv, bn, 2 linear
    ds = sweep.evaluate(p, bandwidth=[1, 10], nodes=2, compressor="none,powersgd:2")
    assert ds.scaling_factor.notnull().all()


def test_gpu_kernels_set_the_ready_times(tmp_path):
    data = json.loads(TRACE.read_text())
    grads = [e for e in data["traceEvents"] if e.get("name") == "torch::autograd::AccumulateGrad"]
    last = grads[-1]
    data["traceEvents"].append(
        {
            "ph": "X",
            "cat": "kernel",
            "name": "vectorized_add",
            "ts": last["ts"] + 5000.0,
            "dur": 100.0,
            "args": {"External id": 424242},
        }
    )
    last.setdefault("args", {})["External id"] = 424242
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    cpu, gpu = import_trace(TRACE), import_trace(path)
    # The last gradient is ready when its kernel ends, 5.1 ms after the op started.
    assert gpu.backward_time == pytest.approx(
        cpu.backward_time - (last["dur"] * 1e-6) + 5.1e-3, rel=1e-9, abs=1e-9
    )


def test_a_steps_gpu_copy_is_not_the_step(tmp_path):
    # A hunt: a CUDA trace copies each ProfilerStep onto the GPU's timeline (gpu_user_annotation), starting
    # later; taken as the step (the latest to start with a gradient in it), it left out the gradients before it.
    data = json.loads(TRACE.read_text())
    events = data["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    start, end = min(e["ts"] for e in spans), max(e["ts"] + e.get("dur", 0) for e in spans)
    grads = [e for e in events if e.get("name") == "torch::autograd::AccumulateGrad"]
    host = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": start, "dur": end - start}
    late = grads[4]["ts"] - 1.0  # the GPU's copy starts after half the gradients
    copy = {**host, "cat": "gpu_user_annotation", "ts": late, "dur": end + 5000.0 - late}
    data["traceEvents"] = [*events, host, copy]
    path = tmp_path / "step.json"
    path.write_text(json.dumps(data))
    assert import_trace(path).shape == tuple(SHAPES)


def test_a_last_step_cut_short_in_its_backward_is_not_the_profile(tmp_path):
    # A hunt: a trace ending in its last step's backward (the profiler stopped, the file cut) gave that step's half
    # of the gradients as the model, in silence. The last step with as many gradients as any is the profile.
    data = json.loads(TRACE.read_text())
    events = data["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    start, end = min(e["ts"] for e in spans), max(e["ts"] + e.get("dur", 0) for e in spans)
    first = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": start, "dur": end - start}
    shift = end - start + 1000.0
    later = [{**e, "ts": e["ts"] + shift} for e in spans]
    grads = sorted(e["ts"] for e in later if e["name"] == "torch::autograd::AccumulateGrad")
    cut = [e for e in later if e["ts"] < grads[len(grads) // 2]]  # half of the second step's gradients
    second = {**first, "name": "ProfilerStep#2", "ts": start + shift}
    data["traceEvents"] = [*events, first, *cut, second]
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(data))
    assert import_trace(path).shape == tuple(SHAPES)


def test_steps_without_profiler_step_spans_are_told_apart_by_the_optimizers(tmp_path):
    # Two steps recorded without prof.step() (a hunt): read as one, every parameter's gradient twice (16 tensors,
    # twice the bytes). torch.optim's Optimizer.step spans end each step: the last step is the profile, with the
    # one-step trace's gradients, backward and, shifted in time, the same tensors.
    data = json.loads(TRACE.read_text())
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    span = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)
    data["traceEvents"] += [{**e, "ts": e["ts"] + span + 100.0} for e in events]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    one, two = import_trace(TRACE), import_trace(path)
    assert two.shape == tuple(SHAPES) and two.total_bytes == one.total_bytes
    np.testing.assert_allclose(two.wait, one.wait, rtol=1e-6, atol=1e-9)
    # from one step's optimizer end to the next's
    assert two.t1 == pytest.approx((span + 100.0) * 1e-6, rel=1e-9)
    # A second optimizer in each step (Muon beside AdamW) ends the same step later, and a CUDA trace's copy of each
    # span on the GPU's timeline is not the host's (a review: max() of nothing, a traceback).
    steps = [e for e in data["traceEvents"] if str(e.get("name", "")).startswith("Optimizer.step#")]
    later = [
        {**e, "name": "Optimizer.step#AdamW.step", "ts": e["ts"] + e["dur"] + 1.0, "dur": 2.0} for e in steps
    ]
    gpu = [{**e, "cat": "gpu_user_annotation", "dur": e["dur"] + 500.0} for e in steps]
    data["traceEvents"] += later + gpu
    path.write_text(json.dumps(data))
    three = import_trace(path)
    assert three.shape == tuple(SHAPES) and three.total_bytes == one.total_bytes
    assert three.t1 == pytest.approx(two.t1, rel=1e-9)  # each step's end 3 us later, both steps alike
    # One step of two optimizers: one step, read whole (the traceback's case).
    single = json.loads(TRACE.read_text())
    sgd = next(e for e in single["traceEvents"] if str(e.get("name", "")).startswith("Optimizer.step#"))
    single["traceEvents"].append(
        {**sgd, "name": "Optimizer.step#AdamW.step", "ts": sgd["ts"] + sgd["dur"] + 1.0}
    )
    path.write_text(json.dumps(single))
    assert import_trace(path).shape == tuple(SHAPES)


def _event(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _linear_step(t0, annotated=True):
    """One step of three float32 linear layers (forward 1000, 2000 and 300 us; backward from t0 + 5000 us): the
    events a torch.profiler trace of it holds, by hand."""
    layers = [((512, 256), 1000), ((256, 512), 2000), ((10, 256), 300)]
    events, t = [], t0 + 100
    for (o, i), d in layers:
        events.append(
            _event(
                "aten::linear", t, d, **{"Input Dims": [[32, i], [o, i], [o]], "Input type": ["float"] * 3}
            )
        )
        t += d + 50
    events.append(_event("autograd::engine::evaluate_function: AddmmBackward0", t0 + 5000, 400))
    for shape, at in [
        ([10], 500),
        ([10, 256], 700),
        ([256], 1500),
        ([256, 512], 1700),
        ([512], 3000),
        ([512, 256], 3200),
    ]:
        events.append(_event("autograd::engine::evaluate_function: AccumulateGrad", t0 + 5000 + at - 1, 12))
        events.append(
            _event(
                "torch::autograd::AccumulateGrad",
                t0 + 5000 + at,
                10,
                **{"Input Dims": [shape], "Input type": ["float"]},
            )
        )
    events.append(_event("Optimizer.step#SGD.step", t0 + 9000, 500, cat="user_annotation"))
    return events + [_event("ProfilerStep#1", t0, 10_000, cat="user_annotation")] * annotated


def test_a_hand_made_step_reads_its_forward_past_what_is_not_the_forward(tmp_path):
    # Hunts: each of these made the importer drop or misread the forward times, or count gradients twice.
    def imported(events, name="t.json"):
        path = tmp_path / name
        path.write_text(json.dumps({"traceEvents": events}))
        return import_trace(path)

    step = _linear_step(1_000_000)
    forward = [0.0, 300e-6, 0.0, 2000e-6, 0.0, 1000e-6]  # backward order: a layer's weight op times its bias
    np.testing.assert_allclose(imported(step).forward, forward, rtol=1e-9)
    # zero_grad(set_to_none=False)'s aten::zero_ of each parameter, before the forward, is not the forward
    zeroing = [_event("Optimizer.zero_grad#SGD.zero_grad", 1_000_005, 60, cat="user_annotation")] + [
        _event("aten::zero_", 1_000_010 + k, 5, **{"Input Dims": [s]})
        for k, s in enumerate([[512, 256], [512], [256, 512], [256], [10, 256], [10]])
    ]
    np.testing.assert_allclose(imported(step + zeroing).forward, forward, rtol=1e-9)
    # nn.Module.zero_grad's have no span; each zero_ calls fill_ inside it (a review: the fill_ was read then)
    filled = [
        _event("aten::fill_", e["ts"] + 1, 3, **{"Input Dims": [e["args"]["Input Dims"][0], []]})
        for e in zeroing[1:]
    ]
    np.testing.assert_allclose(imported(step + zeroing[1:]).forward, forward, rtol=1e-9)
    np.testing.assert_allclose(imported(step + zeroing[1:] + filled).forward, forward, rtol=1e-9)
    # an op of another thread (a DataLoader's pin-memory thread) over the forward hides no op of this one
    pinned = [_event("aten::pin_memory", 1_000_050, 4000, tid=2, **{"Input Dims": [[32, 256]]})]
    np.testing.assert_allclose(imported(step + pinned).forward, forward, rtol=1e-9)
    # a 0-d parameter (CLIP's logit_scale) is matched by the op that lists it as []
    scalar = [
        _event("aten::mul", 1_003_500, 20, **{"Input Dims": [[32, 10], []]}),
        _event(
            "torch::autograd::AccumulateGrad", 1_005_100, 5, **{"Input Dims": [[]], "Input type": ["float"]}
        ),
    ]
    p = imported(step + scalar)
    assert p.shape[0] == (1,) and p.forward is not None and p.forward[0] == pytest.approx(20e-6)
    # two micro-batches' forward and backward in one step: refused, never every gradient twice
    first = [e for e in _linear_step(1_000_000, annotated=False) if not e["name"].startswith("Optimizer")]
    accumulated = first + _linear_step(1_010_000, annotated=False)
    accumulated.append(_event("ProfilerStep#1", 1_000_000, 20_000, cat="user_annotation"))
    with pytest.raises(
        InputError, match="a forward pass between two backward passes. Several steps: call prof"
    ):
        imported(accumulated)
    # a tensor list's shapes (aten::cat's) are read, not a traceback (a review)
    listed = [_event("aten::cat", 1_010_050, 10, **{"Input Dims": [[[32, 128], [32, 128]], []]})]
    with pytest.raises(InputError, match="a forward pass between two backward passes"):
        imported(first + listed + accumulated[len(first) :])
    # another thread's op between backward's spans reads a shape as a parameter's by chance: no forward (a review)
    chance = [_event("aten::pin_memory", 1_006_000, 10, tid=2, **{"Input Dims": [[256]]})]
    assert imported(step + chance).shape == imported(step).shape
    # a gzipped trace (torch writes them) reads as the trace
    import gzip

    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(TRACE.read_bytes()))
    assert import_trace(packed).content_hash() == import_trace(TRACE).content_hash()
    named = tmp_path / "packed.json"  # known by gzip's magic bytes, whatever its name
    named.write_bytes(packed.read_bytes())
    assert import_trace(named).content_hash() == import_trace(TRACE).content_hash()
    packed.write_bytes(gzip.compress(TRACE.read_bytes())[:40])
    with pytest.raises(InputError, match="not a gzipped UTF-8 trace file"):
        import_trace(packed)
    # a file whose name gives the profile none says so ("model name '' must be non-empty" blamed no file name)
    with pytest.raises(
        InputError, match=r"the file's name gives the profile no usable name \(''\); give one"
    ):
        imported(step, name=".pt.trace.json")


def test_a_cuda_steps_forward_and_backward_are_the_gpus(tmp_path):
    # A hunt: on a GPU the host's forward ops only launch kernels (20 us each read as the layers' forward).
    t0, events, kernel_at = 1_000_000, [], 1_002_000
    for k, e in enumerate(_linear_step(t0)):
        if (
            e["name"] == "aten::linear"
        ):  # 20 us on the host, its kernel 1000, 2000, 300 us on the GPU from t0 + 2000
            events.append({**e, "dur": 20, "args": {**e["args"], "External id": k}})
            events.append(_event("sgemm", kernel_at, e["dur"], cat="kernel", **{"External id": k}))
            kernel_at += e["dur"]
        elif e["name"] == "torch::autograd::AccumulateGrad":  # its kernel ends 500 us after it
            events += [{**e, "args": {**e["args"], "External id": k}}]
            events.append(_event("add", e["ts"] + 400, 100, cat="kernel", **{"External id": k}))
        else:
            events.append(e)
    path = tmp_path / "cuda.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = import_trace(path)
    np.testing.assert_allclose(p.forward, [0.0, 300e-6, 0.0, 2000e-6, 0.0, 1000e-6], rtol=1e-9)
    # from the host's backward (t0 + 5000) to the last gradient's kernel's end (t0 + 5000 + 3200 + 500)
    assert p.backward_time == pytest.approx(3700e-6, rel=1e-9)
    # a launch-bound layer's forward is the host's (a review: 5 us kernels under 1000 us of host time)
    bound = [{**e, "dur": 5} if e["cat"] == "kernel" and e["name"] == "sgemm" else e for e in events]
    bound = [{**e, "dur": 400} if e["name"] == "aten::linear" else e for e in bound]
    path.write_text(json.dumps({"traceEvents": bound}))
    np.testing.assert_allclose(import_trace(path).forward, [0.0, 400e-6, 0.0, 400e-6, 0.0, 400e-6], rtol=1e-9)
    # a layer's kernels on two streams at once run its forward's time once (summed, they had doubled it), and
    # one after another, the sum
    sgemms = [e for e in events if e["name"] == "sgemm"]
    twice = events + [{**e, "tid": 8, "ts": e["ts"] + e["dur"] / 2} for e in sgemms[:1]]
    twice += [{**e, "tid": 8, "ts": e["ts"] + e["dur"]} for e in sgemms[1:2]]
    path.write_text(json.dumps({"traceEvents": twice}))
    np.testing.assert_allclose(
        import_trace(path).forward, [0.0, 300e-6, 0.0, 4000e-6, 0.0, 1500e-6], rtol=1e-9
    )


def test_cli_import_writes_a_profile_that_loads(tmp_path):
    out = tmp_path / "tiny.json"
    r = invoke("profile", "import", str(TRACE), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert sweep.load_profile(out).shape == tuple(SHAPES)


def test_an_imported_profile_says_its_gradients_dtype(tmp_path):
    # A bf16 model's trace was imported as dtype float32 (the default), its bytes right from the shapes.
    assert import_trace(TRACE).dtype == "float32"
    data = json.loads(TRACE.read_text())
    grads = [e for e in data["traceEvents"] if e.get("name") == "torch::autograd::AccumulateGrad"]
    for g in grads:
        g["args"]["Input type"] = ["c10::BFloat16"] + g["args"]["Input type"][1:]
    path = tmp_path / "bf16.json"
    path.write_text(json.dumps(data))
    half = import_trace(path)
    assert half.dtype == "bfloat16" and half.total_bytes == 70312 / 2
    grads[0]["args"]["Input type"][0] = "float"
    path.write_text(json.dumps(data))
    assert import_trace(path).dtype == "float32+bfloat16"  # in backward order: the first gradient's first
    # and the GPU it ran on (a hunt: device unknown, priced as the paper's V100); a CPU trace lists none
    assert import_trace(TRACE).device == "unknown"
    data["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816}]
    path.write_text(json.dumps(data))
    assert import_trace(path).device == "NVIDIA H100 80GB HBM3"


def test_an_event_the_profile_reads_is_refused_with_a_bad_duration_and_another_dropped(tmp_path):
    # The profiler has written negative durations (pytorch/kineto#646). An operator's is refused (dropped, it
    # moved a forward time in silence); the trace's own span, whose times the profile does not read, is dropped:
    # the profile is the same to its hash.
    data = json.loads(TRACE.read_text())
    op = next(e for e in data["traceEvents"] if e.get("cat") == "cpu_op" and e["name"].startswith("aten::"))
    span = next(e for e in data["traceEvents"] if e.get("cat") == "Trace")
    path = tmp_path / "t.json"
    op["dur"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=f"{op['name']}\\): ts .* and dur -1 must be"):
        import_trace(path)
    op["dur"], span["dur"] = 1.0, -1
    path.write_text(json.dumps(data))
    op_only = json.loads(TRACE.read_text())
    next(e for e in op_only["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == op["name"])["dur"] = (
        1.0
    )
    reference = tmp_path / "r.json"
    reference.write_text(json.dumps(op_only))
    assert import_trace(path).content_hash() == import_trace(reference).content_hash()


@pytest.mark.parametrize(
    "text,message",
    [
        ("not json", "not valid JSON"),
        ('{"foo": 1}', "no traceEvents list"),
        ('{"traceEvents": []}', "no torch::autograd::AccumulateGrad events"),
        (
            '{"traceEvents": [{"ph": "X", "name": "torch::autograd::AccumulateGrad", "ts": 1, "dur": 1}, '
            '{"ph": "X", "name": "autograd::engine::evaluate_function: X", "ts": 0, "dur": 1}]}',
            "record_shapes=True",
        ),
        # a gradient's event with a negative duration was dropped: the profile lost that gradient, in silence
        (
            '{"traceEvents": [{"ph": "X", "name": "torch::autograd::AccumulateGrad", "ts": 1, "dur": -5}]}',
            "ts 1 and dur -5 must be a finite start and a duration >= 0",
        ),
    ],
)
def test_malformed_traces_are_refused(tmp_path, text, message):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        import_trace(path)
    r = invoke("profile", "import", str(path), "--out", str(tmp_path / "o.json"))
    assert r.exit_code == 2 and r.output.count("\n") == 1 and message in r.output
    assert not (tmp_path / "o.json").exists()


def test_measure_without_torch_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    r = invoke(
        "profile",
        "measure",
        f"{ROOT}/examples/tiny_model.py:model_and_batch",
        "--out",
        str(tmp_path / "p.json"),
    )
    assert r.exit_code == 2 and "pip install -e '.[torch]'" in r.output and r.output.count("\n") == 1


def test_measure_a_real_model(tmp_path):
    pytest.importorskip("torch", reason="torch is an optional extra (pip install -e '.[torch]')")
    from netsweep_jax.sweep.io.measure import measure

    p = measure(
        f"{ROOT}/examples/tiny_model.py:model_and_batch",
        warmup=1,
        iterations=3,
        device="cpu",
        trace=tmp_path / "t.json",
    )
    assert p.names[0] == "7.bias" and p.names[-1] in ("0.bias", "0.weight")
    assert sorted(p.shape) == sorted(SHAPES) and p.total_bytes == 70312
    assert p.forward is not None and p.t1 >= p.backward_time > 0
    assert import_trace(tmp_path / "t.json").total_bytes == 70312


def test_measured_hugging_face_gpt2_has_the_builtin_tensors():
    pytest.importorskip("torch", reason="torch is an optional extra (pip install -e '.[torch]')")
    pytest.importorskip("transformers", reason="hf: models need transformers")
    from netsweep_jax.sweep.engine.workloads import resolve_models
    from netsweep_jax.sweep.io.measure import measure

    measured = measure("hf:gpt2", batch=1, seq_len=8, warmup=0, iterations=1, device="cpu")
    builtin = resolve_models("gpt2")[0]
    assert sorted(measured.names) == sorted(builtin.names)
    assert measured.total_bytes == builtin.total_bytes == 4 * 124_439_808


def test_measure_a_torchvision_name(monkeypatch):
    torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install -e '.[torch]')")
    import types

    from netsweep_jax.sweep.io.measure import measure

    def tiny():  # stands in for a torchvision classifier: 3x224x224 images in, 1000 classes out
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 7, stride=8),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(4, 1000),
        )

    fake = types.SimpleNamespace(models=types.SimpleNamespace(tiny=tiny))
    monkeypatch.setitem(sys.modules, "torchvision", fake)
    p = measure("torchvision:tiny", batch=2, warmup=0, iterations=1, device="cpu")
    assert p.names[0] == "3.bias" and p.total_bytes == 4 * (4 * 3 * 49 + 4 + 4 * 1000 + 1000)
    assert p.batch_size == 2 and "torch" in p.source
    with pytest.raises(InputError, match="has no 'nope'"):
        measure("torchvision:nope", device="cpu")


def test_t1_floor_is_applied_and_said():
    from netsweep_jax.sweep.model.profile import recorded_t1

    assert recorded_t1(0.010, [0.002, 0.003], [0.001]) == (0.010, "")
    t1, note = recorded_t1(0.004, [0.002, 0.003], [0.001])
    assert t1 == pytest.approx(0.006)
    assert "raised from the step's 4 ms to the recorded forward + backward 6 ms" in note


@pytest.mark.parametrize("dims", [[1e20, 2], [2.5], [-1], [2**53]])
def test_a_gradients_shape_not_of_whole_numbers_says_the_rule(tmp_path, dims):
    # A hunt: [1e20, 1e20] (floats in JSON) was refused as "expected a list of integers >= 0", which it looked like.
    data = json.loads(TRACE.read_text())
    grad = next(e for e in data["traceEvents"] if e.get("name") == "torch::autograd::AccumulateGrad")
    grad["args"]["Input Dims"] = [dims]
    path = tmp_path / "dims.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"expected a list of whole numbers from 0 to 2\^53 \(no fractions"):
        import_trace(path)


def test_a_queued_gpus_gradients_are_ready_when_the_gpu_computed_them(tmp_path):
    # A hunt: the host enqueues a GPU's backward far ahead of it, and an AccumulateGrad launches no kernel
    # (set_to_none, torch's default): the gradients took the host's times, a 0.24 ms backward where the GPU ran
    # 32 ms. Each gradient's kernel (an aten::mm launched just before its AccumulateGrad) runs 1000 us on a GPU
    # that starts the backward at t0 + 20000: the gradients are ready at its kernels' ends, 6 ms of backward.
    t0, events = 1_000_000, []
    for k, e in enumerate(_linear_step(t0)):
        events.append(e)
        if e["name"] == "torch::autograd::AccumulateGrad":
            events.append(_event("aten::mm", e["ts"] - 5, 3, **{"External id": k}))
            at = t0 + 20_000 + 1000 * len([x for x in events if x["name"] == "aten::mm"][:-1])
            events.append(_event("wgrad", at, 1000, cat="kernel", **{"External id": k}))
    path = tmp_path / "queued.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = import_trace(path)
    np.testing.assert_allclose(p.wait, [1000e-6] * 6, rtol=1e-9)
    assert p.t1 == pytest.approx(26_000e-6, rel=1e-9)  # the step to its last kernel's end
    # DDP's all-reduce, from a hook after each AccumulateGrad, runs 5 ms on NCCL's stream, and a copy on a side
    # stream ends late: neither is a gradient's compute (a review: each gradient had waited on the all-reduce)
    comms = []
    for k, e in enumerate(events):
        if e["name"] == "torch::autograd::AccumulateGrad":
            comms.append(_event("record_param_comms", e["ts"] + e["dur"] + 1, 2, **{"External id": 500 + k}))
            kernel = _event("ncclDevKernel_AllReduce", t0 + 30_000 + 5000 * k, 5000, cat="kernel")
            comms.append({**kernel, "args": {"External id": 500 + k, "stream": 20}})
    side = _event("aten::copy_", t0 + 4000, 5, **{"External id": 999})
    late = _event("Memcpy HtoD", t0 + 4100, 40_000, cat="gpu_memcpy")
    comms += [side, {**late, "args": {"External id": 999, "stream": 30}}]
    kernels = [{**e, "args": {**e["args"], "stream": 7}} if e["name"] == "wgrad" else e for e in events]
    path.write_text(json.dumps({"traceEvents": kernels + comms}))
    np.testing.assert_allclose(import_trace(path).wait, [1000e-6] * 6, rtol=1e-9)
