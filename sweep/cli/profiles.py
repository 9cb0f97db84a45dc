"""``sweep profile measure`` and ``sweep profile import``: profiles from real runs."""

from pathlib import Path
from typing import Annotated

import typer

from netsweep_jax.sweep.cli import helptext
from netsweep_jax.sweep.cli.options import options, typed_number
from netsweep_jax.sweep.cli.parameters import Force

profile_app = helptext.Typer(
    help="Profiles from real runs: measure a PyTorch model, or import a torch.profiler trace.",
    no_args_is_help=True,
)
ProfileOut = Annotated[Path, typer.Option("--out", help="The JSON profile to write.")]


def _write_profile(profile, out, force, reads=None):
    import json

    from netsweep_jax.sweep.io.paths import check_new_file, write_atomically

    check_new_file(out, force=force, suffixes=(".json",), reads=reads)
    text = json.dumps(profile.to_json(), indent=1)
    write_atomically(out, lambda p: p.write_text(text + "\n"))
    typer.echo(
        f"wrote {out}: {len(profile.names)} tensors, {int(profile.total_bytes):,} gradient bytes, "
        f"backward {profile.backward_time * 1e3:.3f} ms, T1 {profile.t1 * 1e3:.3f} ms"
    )


@profile_app.command("measure")
@options()
def profile_measure(
    model: Annotated[
        str,
        typer.Argument(
            help="torchvision:NAME, hf:TYPE (transformers' default config) or FILE.py:FUNCTION returning (model, (inputs, target))."
        ),
    ],
    out: ProfileOut,
    batch: Annotated[
        int,
        typer.Option(
            "--batch", parser=typed_number(int), help="Samples per step (torchvision and hf models)."
        ),
    ] = 8,
    precision: Annotated[
        str, typer.Option("--precision", help="fp32, amp (autocast), bf16 or fp16 (the model in that type).")
    ] = "fp32",
    seq_len: Annotated[
        int | None,
        typer.Option(
            "--seq-len", parser=typed_number(int), help="hf models: tokens per sample (default: 128)."
        ),
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="cuda, cpu, ... (default: cuda when available).")
    ] = None,
    warmup: Annotated[
        int, typer.Option("--warmup", parser=typed_number(int), help="Steps before measuring.")
    ] = 2,
    iterations: Annotated[
        int, typer.Option("--iterations", parser=typed_number(int), help="Steps measured (medians).")
    ] = 5,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Also write a torch.profiler Chrome trace of one step.")
    ] = None,
    force: Force = False,
):
    """Measure a profile from a real PyTorch run (needs the torch extra: pip install -e '.\\[torch]').

    Example:

    \b
    sweep profile measure torchvision:resnet50 --batch 32 \\
        --out resnet50.json
    """
    from netsweep_jax.sweep.io.measure import measure
    from netsweep_jax.sweep.io.paths import check_new_file

    check_new_file(out, force=force, suffixes=(".json",))
    if trace is not None:
        check_new_file(trace, force=force, suffixes=(".json",), param="trace")
    profile = measure(
        model,
        batch=batch,
        precision=precision,
        device=device,
        warmup=warmup,
        iterations=iterations,
        seq_len=seq_len,
        trace=trace,
    )
    _write_profile(profile, out, force)


@profile_app.command("import")
@options()
def profile_import(
    trace: Annotated[
        Path,
        typer.Argument(
            help="A torch.profiler Chrome trace (export_chrome_trace) of a training step, recorded with record_shapes=True."
        ),
    ],
    out: ProfileOut,
    model: Annotated[str | None, typer.Option("--model", help="Profile name (default: the file's).")] = None,
    force: Force = False,
):
    """Extract a profile from a PyTorch profiler trace (no torch needed).

    Example: sweep profile import examples/tiny.trace.json --out tiny.json
    """
    from netsweep_jax.sweep.io.trace import import_trace

    _write_profile(import_trace(trace, model), out, force, reads={trace: "trace"})
