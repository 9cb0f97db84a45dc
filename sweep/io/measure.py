"""``sweep profile measure``: a profile measured from a real PyTorch run (the optional ``torch`` extra).

As the paper's own measurement did, a hook on every parameter records when its
gradient is accumulated during ``loss.backward()``; forward hooks on every module
that owns parameters record its forward time. On a GPU each hook synchronizes the
device first, so a time is when the work before it has finished (the hooks slow
that measured step a little; T1 comes from separate steps without hooks).

- T1: the median over ``iterations`` steps (zero_grad, forward, loss, backward,
  optimizer step with SGD) without hooks, after ``warmup`` steps.
- backward waits: gradient ready times (median over ``iterations`` hooked steps)
  from the start of ``backward``, sorted into backward order.
- forward times: a module's forward time is put on its first parameter.

Models: ``torchvision:NAME`` (torchvision.models.NAME(), a batch of 3x224x224 images
and 1000-class labels), ``hf:TYPE`` (transformers' default configuration for a model
type, e.g. ``hf:gpt2``, as a causal LM on random tokens of ``seq_len``), or
``FILE.py:FUNCTION`` / ``module:FUNCTION`` returning ``(model, (inputs, target))``
(integer targets: cross-entropy; else mean squared error). This module is the
only one that imports torch; without it the command says how to install it.
"""

import importlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.paths import write_atomically
from netsweep_jax.sweep.model.compute import WORKLOAD_PRECISIONS
from netsweep_jax.sweep.model.profile import Profile, make_profile, recorded_t1

INSTALL = "pip install -e '.[torch]'"


def _torch():
    try:
        import torch
    except ImportError:
        raise InputError(f"torch is not installed; install the optional extra: {INSTALL}") from None
    return torch


def load(spec: str, batch: int, seq_len: int | None, torch: Any) -> tuple[Any, tuple[Any, Any]]:
    """(model, (inputs, target)) for a model spec (see the module docstring)."""
    kind, _, name = str(spec).partition(":")
    if kind == "torchvision":
        try:
            import torchvision
        except ImportError:
            raise InputError(f"{spec}: torchvision is not installed (pip install torchvision)") from None
        if not hasattr(torchvision.models, name):
            raise InputError(f"{spec}: torchvision.models has no {name!r}")
        model = getattr(torchvision.models, name)()
        return model, (torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,)))
    if kind == "hf":
        try:
            import transformers
        except ImportError:
            raise InputError(f"{spec}: transformers is not installed (pip install transformers)") from None
        config = transformers.AutoConfig.for_model(name)
        model = transformers.AutoModelForCausalLM.from_config(config)
        tokens = torch.randint(0, config.vocab_size, (batch, seq_len or 128))
        return _causal_lm(model, torch), (tokens, tokens)
    if not name:
        raise InputError(f"{spec!r}: expected torchvision:NAME, hf:TYPE or FILE.py:FUNCTION")
    module = _module(kind)
    if not hasattr(module, name):
        raise InputError(f"{spec}: {kind} has no function {name!r}")
    out = getattr(module, name)()
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], tuple) and len(out[1]) == 2):
        raise InputError(f"{spec}: must return (model, (inputs, target))")
    return out


def _causal_lm(model, torch):
    """A causal LM as a module: tokens -> logits [B * S, V], scored against the tokens [B * S]
    (its parameters keep their names under ``inner.``, which the profile strips)."""

    class CausalLM(torch.nn.Module):  # type: ignore[name-defined]  # torch is the caller's module
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, tokens: Any) -> Any:
            logits = self.inner(input_ids=tokens).logits
            return logits.reshape(-1, logits.shape[-1])

    return CausalLM()


def _module(text):
    if text.endswith(".py"):
        path = Path(text)
        if not path.is_file():
            raise InputError(f"{text}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise InputError(f"{text}: not a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(text)
    except ImportError as e:
        raise InputError(f"{text}: cannot import ({e})") from None


def measure(
    spec: str,
    *,
    batch: int = 8,
    precision: str = "fp32",
    device: Any = None,
    warmup: int = 2,
    iterations: int = 5,
    seq_len: int | None = None,
    trace: str | Path | None = None,
) -> Profile:
    """Measure a :class:`~sweep.model.profile.Profile` of one GPU (or CPU) training step.

    Args:
      spec: the model (module docstring).
      batch: samples per step (torchvision and hf models; a FILE:FUNCTION sets its own).
      precision: ``fp32``, ``amp`` (autocast), ``bf16`` or ``fp16`` (the model in that type).
      device: ``cuda``, ``cpu``, ... or a ``torch.device`` (default: cuda when available).
      warmup, iterations: steps before measuring, and steps measured.
      trace: also write a torch.profiler Chrome trace of one step there (``sweep profile import`` reads it).
    """
    torch = _torch()
    _check_options(precision, batch=batch, warmup=warmup, iterations=iterations)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model, inputs, target = _placed(spec, batch, seq_len, precision, device, torch)
    params = [(n.removeprefix("inner."), p) for n, p in model.named_parameters() if p.requires_grad]
    if not params:
        raise InputError(f"{spec}: the model has no trainable parameters")
    optimizer = torch.optim.SGD([p for _, p in params], lr=1e-6)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    step = _step_function(model, inputs, target, optimizer, precision, device, torch)
    t1 = _median_step(step, optimizer, sync, warmup, iterations)
    ready, forward = _hooked_times(model, params, step, optimizer, sync, iterations)
    if trace is not None:
        _write_trace(torch, step, optimizer, trace, device)
    return _profile(spec, params, ready, forward, t1, device, batch, precision, torch)


def _check_options(precision: str, **counts: int) -> None:
    """Refuse a precision not of :data:`WORKLOAD_PRECISIONS`, and a batch, warm-up or iteration count that is
    not a whole number of at least 1 (warm-up: 0)."""
    if precision not in WORKLOAD_PRECISIONS:
        raise InputError(f"{precision!r}: must be one of {', '.join(WORKLOAD_PRECISIONS)}", param="precision")
    for name, value in counts.items():
        low = 0 if name == "warmup" else 1
        if not (isinstance(value, int) and value >= low):
            raise InputError(f"{value}: must be an integer >= {low}", param=name)


def _placed(spec: str, batch: int, seq_len: int | None, precision: str, device: Any, torch: Any) -> Any:
    """The model of ``spec`` and its batch (inputs, target) on ``device``, the model (and floating-point inputs)
    in ``precision``'s type where it is bf16 or fp16."""
    model, (inputs, target) = load(spec, batch, seq_len, torch)
    model = model.to(device)
    if precision in ("bf16", "fp16"):
        model = model.to(torch.bfloat16 if precision == "bf16" else torch.float16)
    inputs, target = inputs.to(device), target.to(device)
    if precision in ("bf16", "fp16") and inputs.is_floating_point():
        inputs = inputs.to(next(model.parameters()).dtype)
    return model, inputs, target


def _step_function(
    model: Any, inputs: Any, target: Any, optimizer: Any, precision: str, device: Any, torch: Any
) -> Callable[[], Any]:
    """One training step up to its loss (zero_grad, forward under autocast with ``amp``, loss: cross-entropy
    for integer targets, else mean squared error); the caller runs backward and the optimizer."""

    def loss_of(out: Any) -> Any:
        if target.dtype in (torch.int64, torch.int32):
            return torch.nn.functional.cross_entropy(out.float(), target.reshape(-1))
        return torch.nn.functional.mse_loss(out.float(), target.float())

    def step() -> Any:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(
            device.type,
            enabled=precision == "amp",
            dtype=torch.float16 if device.type == "cuda" else torch.bfloat16,
        ):
            out = model(inputs)
        return loss_of(out)

    return step


def _median_step(
    step: Callable[[], Any], optimizer: Any, sync: Callable[[], Any], warmup: int, iterations: int
) -> float:
    """T1: the median time of ``iterations`` whole steps without hooks (s), after ``warmup`` steps."""
    for _ in range(warmup):
        step().backward()
        optimizer.step()
    t1s = []
    for _ in range(iterations):
        sync()
        t0 = time.perf_counter()
        step().backward()
        optimizer.step()
        sync()
        t1s.append(time.perf_counter() - t0)
    return statistics.median(t1s)


def _hooked_times(
    model: Any,
    params: list[tuple[str, Any]],
    step: Callable[[], Any],
    optimizer: Any,
    sync: Callable[[], Any],
    iterations: int,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Over ``iterations`` hooked steps: each parameter's gradient-ready times from the start of backward, and
    each module's forward time on its first parameter (s; name -> one per step). The hooks are removed after."""
    ready: dict[str, list[float]] = {n: [] for n, _ in params}
    forward: dict[str, list[float]] = {n: [] for n, _ in params}
    clock: dict[str, float] = {}
    owner = {id(p): n for n, p in params}
    handles = []

    def on_grad(p: Any) -> None:
        sync()
        ready[owner[id(p)]].append(time.perf_counter() - clock["backward"])

    handles += [p.register_post_accumulate_grad_hook(on_grad) for _, p in params]
    for module in model.modules():
        own = [owner[id(p)] for p in module.parameters(recurse=False) if id(p) in owner]
        if not own:
            continue

        def pre(module: Any, args: Any, first: str = own[0]) -> None:
            sync()
            clock[first] = time.perf_counter()

        def post(module: Any, args: Any, out: Any, first: str = own[0]) -> None:
            sync()
            forward[first].append(time.perf_counter() - clock[first])

        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        for _ in range(iterations):
            loss = step()
            sync()
            clock["backward"] = time.perf_counter()
            loss.backward()
            optimizer.step()
    finally:
        for h in handles:
            h.remove()
    return ready, forward


def _write_trace(torch, step, optimizer, path, device):
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        step().backward()
        optimizer.step()
        prof.step()
    write_atomically(Path(path), lambda p: prof.export_chrome_trace(str(p)))


def _profile(spec, params, ready, forward, t1, device, batch, precision, torch):
    times = {n: statistics.median(v) for n, v in ready.items() if v}
    missing = [n for n, _ in params if n not in times]
    if missing:
        raise InputError(f"{spec}: no gradient reached {missing[0]} (unused in the forward pass?)")
    order = sorted(params, key=lambda item: times[item[0]])  # backward order
    waits, last = [], 0.0
    for n, _ in order:
        waits.append(max(0.0, times[n] - last))
        last = max(last, times[n])
    forward_s = [statistics.median(forward[n]) if forward[n] else 0.0 for n, _ in order]
    name = str(spec).split(":")[-1] if ":" in str(spec) else str(spec)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({sys.platform})"
    t1, floored = recorded_t1(t1, waits, forward_s)
    return make_profile(
        name,
        [n for n, _ in order],
        [p.numel() * p.element_size() for _, p in order],
        waits,
        t1,
        spec,
        device=device_name,
        batch_size=batch,
        dtype=precision,
        shape=[tuple(p.shape) or (1,) for _, p in order],
        forward=forward_s,
        source=f"measured by netsweep with torch {torch.__version__} on {device_name}, {spec}, batch {batch}, "
        f"{precision}{floored}",
    )
