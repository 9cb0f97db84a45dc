"""The layout model against published large-model runs: ``sweep validate --llm`` and ``calibrate`` of layouts.

Protocol (chosen before any held-out error was looked at, and the same for a user's file):

1. **Predict each row's published metric in the source's own units.** ``s_per_iter``: the
   iteration time. ``model_TFLOPs_per_GPU`` and Megatron-LM's ``TFLOPs_per_GPU`` (``flops``
   ``megatron``): model FLOPs, Megatron-LM's ``num_floating_point_operations`` (3 x forward, the
   attention core counted in full: ``12 B s L h^2 ((1 + g/a + s/h) w_q/h + f/h k (3/2 gated)) +
   6 B s h v``, the same count as :mod:`kernels.layout`'s model FLOPs), over time and GPUs.
   Narayanan et al.'s ``TFLOPs_per_GPU`` (``flops`` ``sc21-eq3``): their eq. 3,
   ``96 B s l h^2 (1 + s / 6h + v / 16 l h)``, which counts a recomputed forward, over time and GPUs.
2. **Fill what a source does not state by one rule per setting** (:func:`settings`), by the
   stack of the run's ``year``: Megatron-LM and DeepSpeed of 2021-22 (SC'21, Korthikanti) or
   Megatron-Core recipes of 2024-25 (NVIDIA's). Micro-batch 1 (the smallest; SC'21 Table 1 does
   not state it). Interleaving: V as stated; "interleaved" without V is V = 2 (the smallest
   interleaving); otherwise 1F1B. Recomputation: full for 2021-22 (SC'21's eq. 3 assumes it and
   Megatron-LM recomputed every layer then), none for the recipes (they say when they recompute).
   Sequence parallelism: off for 2021-22 (it came with Korthikanti et al., 2022), on for the
   recipes when tp > 1. ZeRO: as stated; otherwise 0 for 2021-22, 1 (the distributed optimizer
   the recipes turn on) for the recipes. Gradients: fp16 for 2021-22; bf16 for the recipes
   (Megatron-Bridge's performance recipes set ``grad_reduce_in_fp32 = False``, NeMo's do for fp8,
   Megatron-LM's Llama 3 script passes ``--grad-reduce-in-bf16``). Activation offload: as stated
   (``offload_layers``), else none. Attention: unfused for 2021-22, flash for the recipes.
   Overlap (``overlap``): as stated, else none for 2021-22 (Megatron-LM all-reduced the gradients
   after the pipeline flush and ran TP's collectives blocking), the gradient reduce and parameter
   gather for the recipes, and TP communication too where tp > 1 with SP (Megatron-Bridge's
   ``CommOverlapConfig``). Recompute modules and bf16 Adam moments (``moment_bytes``): as stated.
   PyTorch FSDP stacks (``stack`` fsdp: torchtitan, llm-foundry): ZeRO 3, sequence parallelism with
   TP (torchtitan's TP plan shards the norms), flash attention, gradients in fp32 (FSDP2's and
   llm-foundry's default reduce dtype), recomputation as stated else none, and with pipelining as many
   micro-batches as stages (torchtitan's default); the metric ``tokens_per_s_per_GPU`` (``flops``
   tokens) is global tokens per second over the GPUs, as both log it.
   Network: the GPU preset's system (DGX A100 = Selene's 8 x 200 Gbit/s; DGX H100 8 x 400;
   GB200 NVL72), the ``nccl`` collective, no latency or overhead term.
3. **Fit few global constants**: the matrix efficiency of each GPU die (``a100``, ``h100``,
   ``gb200``, ...;  a preset's ``die`` maps the H200 and other parts of one chip to it) and one NIC
   utilization, by least squares on log(predicted /
   measured) over the training rows (dense models only), on a grid fine enough that the grid's
   step changes a prediction by under 0.3%. A constant no training row depends on keeps its
   documented default (efficiency 0.6, utilization 1) and the report says so. Three columns:
   the defaults (nothing fitted), fitted on the training set (default: SC'21 Table 1 for the
   A100 and llm-foundry's MPT runs for the H100, by source, not by row), fitted on every dense row
   (in-sample).
4. **Report** the absolute percentage error of every row, per source group; dense held-out rows
   (median, maximum) apart from the MoE rows (the recipes force balanced routing: best cases).
"""

import collections
import csv
import dataclasses
import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from netsweep_jax.kernels.layout import STATUS
from netsweep_jax.sweep.analysis.plot import save
from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.layout_axes import (
    ATTENTIONS,
    BREAKDOWN,
    LAYOUT_PRECISIONS,
    OVERLAP_DEFAULT,
    OVERLAP_HELP,
    RECOMPUTE_HELP,
    overlap_mode,
    recompute_mode,
    waits_on,
)
from netsweep_jax.sweep.core.textfile import read_csv_records, read_lines
from netsweep_jax.sweep.core.values import number, whole_number
from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
from netsweep_jax.sweep.io.paths import (
    all_or_nothing,
    check_report_directory,
    report_directory,
    write_atomically,
)
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS
from netsweep_jax.sweep.model.llms import LLM, LLMS

DATASET = Path(__file__).resolve().parents[1] / "data" / "llm_runs.csv"
METRICS = {
    "s_per_iter": "s",
    "TFLOPs_per_GPU": "TFLOP/s",
    "model_TFLOPs_per_GPU": "TFLOP/s",
    "tokens_per_s_per_GPU": "tokens/s",
}
FLOP_RULES = ("megatron", "sc21-eq3", "time", "tokens")
# The metrics that count no FLOPs, each with its one rule.
COUNTED_BY = {"s_per_iter": "time", "tokens_per_s_per_GPU": "tokens"}
STACKS = ("megatron", "fsdp")


def die(gpu: str) -> str:
    """The GPU preset whose fitted matrix efficiency ``gpu`` shares (its ``die``, or itself)."""
    return GPUS[gpu].die or gpu


REQUIRED = ("id", "gpu", "gpus", "tp", "pp", "global_batch", "metric", "value")
SHAPE = ("layers", "hidden", "heads", "seq_len", "vocab")
# One source per GPU generation that has one with a plain stack, chosen by source before any held-out error of
# the FSDP rows was seen: SC'21 Table 1 (A100, Megatron-LM) and llm-foundry's MPT tables (H100, pure FSDP in
# bf16, 1B to 70B on 128 to 512 GPUs). GB200 has only NVIDIA's recipes, all held out.
DEFAULT_TRAIN = "sc21-t1,llm-foundry"
UTILIZATION_DEFAULT = 1.0
MODELS = ("defaults", "trained", "in-sample")


@dataclasses.dataclass(frozen=True)
class Run:
    """One published (or the user's) measured run: its settings as the file states them."""

    id: str
    line: int
    group: str
    year: int
    llm: LLM
    model: str
    gpu: str
    gpus: int
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    micro_batch: int | None
    global_batch: int
    precision: str
    zero: int | None
    chunks: str
    recompute: str
    sequence_parallel: int | None
    attention: str
    flops: str
    metric: str
    value: float | None
    source: str
    offload_layers: int = 0
    stack: str = "megatron"
    moment_bytes: int = 4
    overlap: str = ""

    @property
    def moe(self) -> bool:
        return self.llm.experts > 0


def _int(
    cells: dict[str, str],
    name: str,
    path: Path,
    line: int,
    rid: str,
    default: int | None = None,
    low: int = 1,
) -> int | None:
    text = cells.get(name, "").strip()
    if not text:
        if default is None and name in REQUIRED:
            raise InputError(f"{where(path, line)} (row {rid}): {name} is empty; it is required")
        return default
    value = number(text, f"{where(path, line)} (row {rid}): {name}")
    if not value.is_integer() or value < low or value > 1e9:
        raise InputError(f"{where(path, line)} (row {rid}): {name} {text} must be a whole number from {low}")
    return int(value)


def read_runs(path: str | Path) -> list[Run]:
    """Read and check a file of measured runs; any bad row is one error naming the file, line, row and rule."""
    path = Path(path)
    numbered = read_csv_records(path, "runs file")
    if not numbered:
        raise InputError(f"{path}: empty file; expected a header and rows")
    header_line, header = numbered[0][0], [c.strip() for c in numbered[0][1]]
    missing = [c for c in REQUIRED if c not in header]
    if "preset" not in header and any(c not in header for c in SHAPE):
        missing.append("preset (or the shape: " + ", ".join(SHAPE) + ")")
    if missing:
        raise InputError(f"{where(path, header_line)}: missing column(s) {', '.join(missing)}")
    if len(numbered) - 1 > MAX_RUNS:  # before any row is parsed: the fit's memory grows with the runs
        raise InputError(
            f"{path}: {len(numbered) - 1:,} rows; a runs file holds at most {MAX_RUNS:,} runs (the fit keeps "
            f"{len(EFFICIENCIES) * len(UTILIZATIONS):,} candidate constants per run); split it by source"
        )
    runs = []
    for line, cells_list in numbered[1:]:
        if not "".join(cells_list).strip():
            continue
        if len(cells_list) != len(header):
            raise InputError(f"{where(path, line)}: expected {len(header)} cells, got {len(cells_list)}")
        cells = dict(zip(header, (c.strip() for c in cells_list)))
        runs.append(_run(cells, path, line))
    if not runs:
        raise InputError(f"{path}: no runs after the header")
    counts = collections.Counter(r.id for r in runs)
    if len(counts) != len(runs):
        twice = sorted(i for i, n in counts.items() if n > 1)
        raise InputError(f"{path}: row id {twice[0]} appears twice; ids must be unique")
    _check_layouts(runs, path)
    return runs


def _check_layouts(runs: Sequence[Run], path: Path) -> None:
    """Refuse a run that cannot exist by the rules every sweep masks with (:data:`kernels.layout.STATUS`): a
    runs file describes runs that happened. One error naming the file, line, row and rule."""
    status = evaluate_rows(
        [settings(r)[0] for r in runs],
        np.full(len(runs), EFFICIENCY),
        np.ones(len(runs)),
        outputs=("status",),
    )["status"]
    for run, code in zip(runs, status.astype(int)):
        if code:
            raise InputError(
                f"{where(path, run.line)} (row {run.id}): this layout cannot exist: {STATUS[code]}"
            )


def _run(cells: dict[str, str], path: Path, line: int) -> Run:
    rid = cells["id"] or f"line {line}"

    def bad(rule: str) -> InputError:
        return InputError(f"{where(path, line)} (row {rid}): {rule}")

    preset = cells.get("preset", "").lower()
    if preset:
        if preset not in LLMS:
            raise bad(f"preset {preset!r} is not a large-model preset; presets: {', '.join(LLMS)}")
        llm = LLMS[preset]
        model = preset
        for name, field in (
            ("layers", "layers"),
            ("hidden", "hidden"),
            ("heads", "heads"),
            ("vocab", "vocab"),
        ):
            stated = _int(cells, name, path, line, rid, default=0)
            if stated and stated != getattr(llm, field):
                raise bad(
                    f"{name} {stated} is not preset {preset}'s {getattr(llm, field)}; leave it empty or give "
                    f"the shape instead of the preset"
                )
        seq = _int(cells, "seq_len", path, line, rid, default=0)
        if seq and seq != llm.seq:  # the sequence is the run's choice, not the model's
            llm = dataclasses.replace(llm, seq=seq)
    else:
        given = {name: _int(cells, name, path, line, rid) for name in SHAPE}
        if any(v is None for v in given.values()):
            raise bad(f"give a preset or every shape column ({', '.join(SHAPE)})")
        shape = {name: int(v or 0) for name, v in given.items()}
        llm = LLM(
            shape["layers"],
            shape["hidden"],
            shape["heads"],
            shape["seq_len"],
            shape["vocab"],
            tied=True,
            source="GPT shape from the row (4h GELU MLP, tied embeddings)",
        )
        model = f"gpt-{shape['layers']}x{shape['hidden']}"
    gpu = cells["gpu"].lower()
    if gpu not in GPUS:
        raise bad(f"gpu {cells['gpu']!r} is not a preset; presets: {', '.join(GPUS)}")
    precision = (cells.get("precision") or "bf16").lower()
    if precision not in LAYOUT_PRECISIONS:
        raise bad(f"precision {precision!r} must be one of {', '.join(LAYOUT_PRECISIONS)}")
    if precision == "fp8" and GPUS[gpu].fp8 == 0:
        raise bad(f"fp8 on a {gpu}, which has no fp8 tensor cores")
    gpus, tp, pp = (_int(cells, n, path, line, rid) for n in ("gpus", "tp", "pp"))
    cp = _int(cells, "cp", path, line, rid, default=1)
    ep = _int(cells, "ep", path, line, rid, default=1)
    dp = _int(cells, "dp", path, line, rid, default=0, low=1)
    assert gpus is not None and tp is not None and pp is not None and cp is not None and ep is not None
    if dp:
        if tp * pp * cp * dp != gpus:
            raise bad(
                f"tp x pp x cp x dp = {tp} x {pp} x {cp} x {dp} = {tp * pp * cp * dp} is not gpus {gpus}"
            )
    elif gpus % (tp * pp * cp):
        raise bad(f"gpus {gpus} is not divisible by tp x pp x cp = {tp * pp * cp}")
    dp = dp or gpus // (tp * pp * cp)
    global_batch = _int(cells, "global_batch", path, line, rid)
    assert global_batch is not None
    micro = _int(cells, "micro_batch", path, line, rid, default=0) or None
    if global_batch % ((micro or 1) * dp):
        raise bad(f"global_batch {global_batch} is not divisible by micro_batch x dp = {(micro or 1) * dp}")
    zero_text = cells.get("zero", "")
    zero = _int(cells, "zero", path, line, rid, default=0, low=0) if zero_text else None
    if zero is not None and zero > 3:
        raise bad(f"zero {zero} must be 0, 1, 2 or 3")
    chunks = cells.get("chunks", "").lower()
    if chunks and chunks != "interleaved" and not ((whole_number(chunks) or 0) >= 1):
        raise bad(f"chunks {chunks!r} must be a whole number (V) or 'interleaved'")
    recompute_text = cells.get("recompute", "")
    recompute = recompute_mode(recompute_text) if recompute_text else ""
    if recompute is None:
        raise bad(f"recompute {recompute_text!r} must be {RECOMPUTE_HELP}")
    sp_text = cells.get("sequence_parallel", "")
    if sp_text and sp_text not in ("0", "1"):
        raise bad(f"sequence_parallel {sp_text!r} must be 0 or 1")
    attention = cells.get("attention", "").lower()
    if attention and attention not in ATTENTIONS:
        raise bad(f"attention {attention!r} must be one of {', '.join(ATTENTIONS)}")
    metric = cells["metric"]
    if metric not in METRICS:
        raise bad(f"metric {metric!r} must be one of {', '.join(METRICS)}")
    flops = cells.get("flops") or COUNTED_BY.get(metric, "megatron")
    allowed = (
        [COUNTED_BY[metric]]
        if metric in COUNTED_BY
        else [f for f in FLOP_RULES if f not in COUNTED_BY.values()]
    )
    if flops not in allowed:
        raise bad(
            f"flops {flops!r} must be one of {', '.join(FLOP_RULES)} (time exactly for s_per_iter, tokens "
            f"exactly for tokens_per_s_per_GPU)"
        )
    stack = (cells.get("stack") or "megatron").lower()
    if stack not in STACKS:
        raise bad(f"stack {stack!r} must be one of {', '.join(STACKS)} (empty: megatron)")
    value_text = cells["value"]
    value = None
    if value_text:
        value = number(value_text, f"{where(path, line)} (row {rid}): value")
        if not (math.isfinite(value) and value > 0):
            raise bad(f"value {value_text} must be a positive number (or empty: predict it)")
    year = _int(cells, "year", path, line, rid, default=2025, low=2000)
    assert year is not None
    moments = _int(cells, "moment_bytes", path, line, rid, default=4, low=2)
    if moments not in (2, 4):
        raise bad(f"moment_bytes {moments} must be 4 (fp32 Adam moments) or 2 (bf16), or empty (4)")
    overlap_text = cells.get("overlap", "")
    overlap = overlap_mode(overlap_text) if overlap_text else ""
    if overlap is None:
        raise bad(f"overlap {overlap_text!r} must be {OVERLAP_HELP}, or empty (the stack's rule)")
    return Run(
        rid,
        line,
        cells.get("group") or "your runs",
        year,
        llm,
        model,
        gpu,
        gpus,
        tp,
        pp,
        dp,
        cp,
        ep,
        micro,
        global_batch,
        precision,
        zero,
        chunks,
        recompute,
        int(sp_text) if sp_text else None,
        attention,
        flops,
        metric,
        value,
        cells.get("source", ""),
        _int(cells, "offload_layers", path, line, rid, default=0, low=0) or 0,
        stack,
        moments or 4,
        overlap,
    )


def settings(run: Run) -> tuple[LayoutRow, list[str]]:
    """The run as the model sees it, and what was assumed (one phrase per rule applied)."""
    fsdp = run.stack == "fsdp"  # PyTorch FSDP / FSDP2 (torchtitan, llm-foundry)
    old = run.year <= 2022 and not fsdp  # Megatron-LM / DeepSpeed of 2021-22, else Megatron-Core recipes
    assumed = []
    micro = run.micro_batch
    if micro is None and fsdp and run.pp > 1:
        # torchtitan splits each data-parallel rank's batch into as many micro-batches as pipeline stages
        # (pipeline_parallel_microbatches unset).
        micro = max(1, run.global_batch // (run.dp * run.pp))
        assumed.append(f"micro-batch {micro} (as many micro-batches as stages)")
    if micro is None:
        micro = 1
        assumed.append("micro-batch 1")
    stated = whole_number(run.chunks)
    if stated is not None:
        chunks = stated
    else:
        chunks = 2 if run.chunks == "interleaved" and run.pp > 1 else 1
        if run.chunks == "interleaved" and run.pp > 1:
            assumed.append("interleaved V=2")
    recompute = run.recompute or ("full" if old else "none")
    if not run.recompute:
        assumed.append(f"recompute {recompute}")
    sp = run.sequence_parallel
    if sp is None:
        sp = 0 if old else int(run.tp > 1)
        if run.tp > 1:
            assumed.append(f"sequence parallelism {'on' if sp else 'off'}")
    zero = run.zero
    if zero is None:
        zero = 3 if fsdp else 0 if old else 1
        assumed.append(f"ZeRO {zero}")
    attention = run.attention or ("unfused" if old else "flash")
    if not run.attention:
        assumed.append(f"{attention} attention")
    # Megatron-LM of 2021-22 kept the precision's gradients (fp16 ones in fp16: 0 says so); the recipes keep
    # and reduce them in bf16 (Megatron-Bridge's performance recipes set grad_reduce_in_fp32 False, as NeMo's
    # do for fp8).
    # FSDP2's default mixed precision (torchtitan) and PyTorch FSDP's (llm-foundry) reduce in fp32: the
    # precision's gradients.
    grad_bytes = 0 if old or fsdp else 2
    if not (old or fsdp):
        assumed.append("bf16 gradients")
    # Megatron-LM of 2021-22 all-reduced the gradients after the pipeline flush and ran TP's collectives
    # blocking (DDP-impl local; training.py at f32a638 and 3f4e71d); Megatron-Core's recipes overlap the
    # gradient reduce and the parameter gather, and TP communication where TP >= 2 with SP (Megatron-Bridge's
    # CommOverlapConfig at 00b7660); FSDP overlaps its per-layer gathers and reduce-scatters.
    overlap = run.overlap
    if not overlap:
        recipe_tp = not (old or fsdp) and run.tp > 1 and sp
        overlap = "none" if old else OVERLAP_DEFAULT + ("+tp_comm" if recipe_tp else "")
        assumed.append(f"overlap {overlap}")
    row = LayoutRow(
        run.llm,
        run.gpu,
        run.precision,
        run.gpus,
        tp=run.tp,
        pp=run.pp,
        cp=run.cp,
        ep=run.ep,
        dp=run.dp,
        micro_batch=micro,
        global_batch=run.global_batch,
        chunks=chunks,
        recompute=recompute,
        grad_bytes=grad_bytes,
        offload_layers=run.offload_layers,
        moment_bytes=run.moment_bytes,
        overlap=overlap,
        sequence_parallel=sp,
        zero=zero,
        attention=attention,
    )
    return row, assumed


def source_flops(run: Run) -> float:
    """FLOPs per iteration as the run's source counts them (``sc21-eq3``; 0 for other rules)."""
    if run.flops != "sc21-eq3":
        return 0.0
    m = run.llm
    B, s, L, h, v = run.global_batch, m.seq, m.layers, m.hidden, m.vocab
    return 96.0 * B * s * L * h * h * (1 + s / (6 * h) + v / (16 * L * h))


def predict(runs: Sequence[Run], efficiency: dict[str, float], utilization: float) -> dict[str, np.ndarray]:
    """Each run's predicted metric (``predicted``) and the model's outputs, with the given constants."""
    rows = [settings(r)[0] for r in runs]
    eff = np.array([efficiency.get(die(r.gpu), EFFICIENCY) for r in runs])
    out = evaluate_rows(rows, eff, np.full(len(runs), utilization))
    out["predicted"] = _metric(runs, out["iteration_time"], out["tflops_per_gpu"])
    return out


def _metric(runs: Sequence[Run], time: np.ndarray, model_tflops: np.ndarray) -> np.ndarray:
    """The metric each run's source reports, from predicted iteration times [R, ...]."""
    extra = (1,) * (time.ndim - 1)
    kind = np.array([r.flops for r in runs]).reshape(-1, *extra)
    eq3 = np.array([source_flops(r) / r.gpus / 1e12 for r in runs]).reshape(-1, *extra)
    tokens = np.array([r.global_batch * r.llm.seq / r.gpus for r in runs]).reshape(-1, *extra)
    return np.select(
        [kind == "time", kind == "sc21-eq3", kind == "tokens"],
        [time, eq3 / time, tokens / time],
        model_tflops,
    )


# The fit's search: a coarse joint grid (efficiency in steps of 0.02, utilization in 40 log steps from
# 0.02 to 1), then each constant refined on 64 points within one coarse step of its best (steps of about
# 0.0006 in efficiency and 0.3% in utilization: a grid step moves a prediction by well under 1%).
EFFICIENCIES = np.round(np.arange(0.10, 1.0 + 1e-9, 0.02), 6)
UTILIZATIONS = np.geomspace(0.02, 1.0, 40)
REFINE = 64
# The most runs a file may hold: the fit's coarse search keeps [runs, candidates] float64 arrays (147 MB each
# at this size); a file of published or measured runs is far smaller.
MAX_RUNS = 10_000


@dataclasses.dataclass(frozen=True)
class Fit:
    """Constants of one model: efficiency per GPU, one utilization, and which were fitted."""

    name: str
    efficiency: dict[str, float]
    utilization: float
    fitted: tuple[str, ...]
    rows: tuple[str, ...]  # the ids it was fitted on

    def describe(self) -> str:
        eff = ", ".join(
            f"{g} {e:.4g}{'' if f'efficiency {g}' in self.fitted else ' (default)'}"
            for g, e in sorted(self.efficiency.items())
        )
        util = f"{self.utilization:.3g}{'' if 'utilization' in self.fitted else ' (default)'}"
        return f"efficiency {eff}; utilization {util}"


def _loss(
    rows: list[LayoutRow],
    runs: Sequence[Run],
    measured: np.ndarray,
    efficiency: np.ndarray,
    utilization: np.ndarray,
) -> np.ndarray:
    """Squared log errors [R, K] of ``rows`` for K candidate constants ([R, K] each); 1e6 where undefined."""
    out = evaluate_rows(rows, efficiency, utilization, outputs=("iteration_time", "tflops_per_gpu"))
    err = np.log(_metric(runs, out["iteration_time"], out["tflops_per_gpu"]) / measured[:, None]) ** 2
    return np.where(np.isfinite(err), err, 1e6)


def _local(grid: np.ndarray, best: float, log: bool = False) -> np.ndarray:
    """REFINE points within one step of ``grid`` around ``best``, inside the grid's range."""
    i = int(np.argmin(np.abs(grid - best)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    return np.geomspace(lo, hi, REFINE) if log else np.linspace(lo, hi, REFINE)


def fit(runs: Sequence[Run], train: Sequence[bool], name: str) -> Fit:
    """Least squares on log(predicted / measured) over the training rows: efficiency per GPU, one utilization."""
    idx = [i for i, (r, t) in enumerate(zip(runs, train)) if t and r.value is not None and not r.moe]
    gpus = sorted({die(r.gpu) for r in runs})
    efficiency = {g: EFFICIENCY for g in gpus}
    if not idx:
        return Fit(name, efficiency, UTILIZATION_DEFAULT, (), ())
    sub = [runs[i] for i in idx]
    measured = np.array([r.value for r in sub], np.float64)
    rows = [settings(r)[0] for r in sub]
    gpu_of = np.array([die(r.gpu) for r in sub])
    train_gpus = sorted(set(gpu_of))
    u_grid, e_grid = (a.ravel() for a in np.meshgrid(UTILIZATIONS, EFFICIENCIES, indexing="ij"))
    err = _loss(
        rows,
        sub,
        measured,
        np.broadcast_to(e_grid, (len(sub), e_grid.size)),
        np.broadcast_to(u_grid, (len(sub), u_grid.size)),
    )
    per_gpu = {
        g: err[gpu_of == g].sum(axis=0).reshape(len(UTILIZATIONS), len(EFFICIENCIES)) for g in train_gpus
    }
    per_u = sum(loss.min(axis=1) for loss in per_gpu.values())
    # Utilization is identifiable only if some training row's prediction depends on it.
    identifiable_u = bool(np.ptp(per_u) > 1e-9 * max(float(per_u.max()), 1e-30))
    u_index = int(np.argmin(per_u)) if identifiable_u else len(UTILIZATIONS) - 1
    utilization = float(UTILIZATIONS[u_index]) if identifiable_u else UTILIZATION_DEFAULT
    for g in train_gpus:
        efficiency[g] = float(EFFICIENCIES[int(np.argmin(per_gpu[g][u_index]))])
    for _ in range(2):  # refine each constant near its best, the others held
        for g in train_gpus:
            mask = gpu_of == g
            grid = _local(EFFICIENCIES, efficiency[g])
            e2 = _loss(
                [rows[i] for i in np.flatnonzero(mask)],
                [sub[i] for i in np.flatnonzero(mask)],
                measured[mask],
                np.broadcast_to(grid, (mask.sum(), REFINE)),
                np.full((mask.sum(), REFINE), utilization),
            )
            efficiency[g] = float(grid[int(np.argmin(e2.sum(axis=0)))])
        if identifiable_u:
            grid = _local(UTILIZATIONS, utilization, log=True)
            eff = np.array([efficiency[die(r.gpu)] for r in sub])[:, None]
            e2 = _loss(
                rows,
                sub,
                measured,
                np.broadcast_to(eff, (len(sub), REFINE)),
                np.broadcast_to(grid, (len(sub), REFINE)),
            )
            utilization = float(grid[int(np.argmin(e2.sum(axis=0)))])
    fitted = tuple(f"efficiency {g}" for g in train_gpus) + (("utilization",) if identifiable_u else ())
    return Fit(name, efficiency, utilization, fitted, tuple(r.id for r in sub))


@dataclasses.dataclass
class Validation:
    """Predictions of every run under the three models, with errors and the breakdown."""

    runs: list[Run]
    train: list[bool]
    fits: dict[str, Fit]
    outputs: dict[str, dict[str, np.ndarray]]
    path: str

    def errors(self, model: str) -> np.ndarray:
        """Signed relative error (predicted / measured - 1) per run; NaN without a measured value."""
        measured = np.array([r.value if r.value is not None else np.nan for r in self.runs])
        return self.outputs[model]["predicted"] / measured - 1.0

    def summary(self, model: str, rows: Sequence[bool]) -> tuple[int, float, float]:
        """(count, median |error|, max |error|) over ``rows`` with a measured value."""
        e = np.abs(self.errors(model))[np.asarray(rows, bool)]
        e = e[np.isfinite(e)]
        return (len(e), float(np.median(e)) if len(e) else math.nan, float(e.max()) if len(e) else math.nan)


def run_validation(
    path: str | Path = DATASET, train: str | None = None, progress: Callable[[str], None] | None = None
) -> Validation:
    """Fit and predict every run of ``path``; the training set is the runs whose ``group`` is one of ``train``
    (comma-separated; None: :data:`DEFAULT_TRAIN`, the shipped file's training sources)."""
    runs = read_runs(path)
    groups = sorted({r.group for r in runs})
    if train is None:
        train = DEFAULT_TRAIN
        if not set(train.split(",")) <= set(groups):  # a file of the user's: the shipped groups mean nothing
            absent = [g for g in train.split(",") if g not in groups]
            raise InputError(
                f"{path}: no run is in the default training group(s) {', '.join(absent)} (the shipped "
                f"file's); its groups: {', '.join(groups)}. Name the groups to fit on with --train (a 'group' "
                f"column sets them; without one every run is in 'your runs')"
            )
    chosen = [g.strip() for g in train.split(",") if g.strip()]
    for g in chosen or [train]:
        if g not in groups:
            raise InputError(f"{g!r}: no runs in that group; groups: {', '.join(groups)}", param="train")
    for g in chosen:
        if not any(r.group == g and not r.moe and r.value is not None for r in runs):
            raise InputError(
                f"{g!r}: no dense run with a measured value in that group; the fit uses dense runs only "
                f"(mixture-of-experts runs are reported, never fitted)",
                param="train",
            )
    in_train = [r.group in chosen for r in runs]
    if all(in_train):
        raise InputError(f"{train!r}: every run is in it; nothing would be held out", param="train")
    say = progress or (lambda text: None)
    fits = {
        "defaults": Fit(
            "defaults",
            {g: EFFICIENCY for g in sorted({die(r.gpu) for r in runs})},
            UTILIZATION_DEFAULT,
            (),
            (),
        )
    }
    say(f"fitting on {sum(in_train)} runs of {train} ...")
    fits["trained"] = fit(runs, in_train, "trained")
    say(f"fitting on every dense run ({sum(not r.moe and r.value is not None for r in runs)}) ...")
    fits["in-sample"] = fit(runs, [True] * len(runs), "in-sample")
    outputs = {name: predict(runs, f.efficiency, f.utilization) for name, f in fits.items()}
    return Validation(runs, in_train, fits, outputs, str(path))


# --- the report ----------------------------------------------------------------------------------------

FILES = ("predicted_over_measured.png", "predictions.csv", "REPORT.md")
GROUP_NAMES = {
    "sc21-t1": "Narayanan et al. SC'21, Table 1 (weak scaling, A100)",
    "sc21-t2": "Narayanan et al. SC'21, Table 2 (ZeRO-3 against TP x PP x DP, A100)",
    "k23": "Korthikanti et al. MLSys'23, Table 5 and text (A100)",
    "megatron-h100": "NVIDIA Megatron-LM / Megatron-Bridge recipes, H100",
    "megatron-gb200": "NVIDIA Megatron-LM / Megatron-Bridge recipes, GB200",
    "torchtitan": "PyTorch torchtitan benchmarks (FSDP2 with TP/PP/CP; A100, H100, H200)",
    "llm-foundry": "MosaicML llm-foundry MPT benchmarks (FSDP; H100, A100)",
}
TARGET_MEDIAN, TARGET_MAX = 0.08, 0.20


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:.1%}"


def _terms(v: Validation, model: str, i: int) -> str:
    """The step's two largest terms for row i, as shares."""
    out = v.outputs[model]
    return waits_on({k: out[k][i] for k in BREAKDOWN}, out["iteration_time"][i])


def findings(v: Validation, model: str = "trained") -> list[str]:
    """The published findings, checked against the model's numbers (rows absent from a user's file are skipped)."""
    ids = {r.id: i for i, r in enumerate(v.runs)}
    pred = v.outputs[model]["predicted"]
    lines = []
    if {"SC21-T2-01", "SC21-T2-03"} <= ids.keys():
        a, b = ids["SC21-T2-01"], ids["SC21-T2-03"]
        measured, predicted = v.runs[b].value / v.runs[a].value, pred[b] / pred[a]  # type: ignore[operator]
        out = v.outputs[model]
        share = [out["dp_exposed"][i] / out["iteration_time"][i] for i in (a, b)]
        ok = abs(predicted / measured - 1) <= 0.25
        head = (
            f"- **The ZeRO-3 collapse** (SC'21 Table 2, GPT-3 175B at a global batch of 1536): measured "
            f"{v.runs[a].value:g} to {v.runs[b].value:g} TFLOP/s per GPU from 384 to 1536 A100s, a ratio of "
            f"{measured:.2f}; predicted {pred[a]:.0f} to {pred[b]:.0f}, a ratio of {predicted:.2f} "
            f"({predicted / measured - 1:+.0%}: {'within' if ok else 'outside'} the 25% target). "
        )
        if ok:
            lines.append(
                head + f"The term: ZeRO-3's exposed parameter gathers and gradient reduce-scatters "
                f"(`dp_exposed`) grow from {share[0]:.0%} to {share[1]:.0%} of the step."
            )
        else:
            run = v.runs[b]
            step = source_flops(run) / (run.value * 1e12 * run.gpus)  # type: ignore[operator]
            busy = out["compute"][b] + out["recompute_time"][b]
            traffic = (
                3 * run.llm.parameters()["total"] * 2.0
            )  # gather forward and backward, reduce-scatter: 2 bytes
            lines.append(
                head + f"The model does not reproduce it: `dp_exposed` is {share[0]:.0%} and {share[1]:.0%} "
                f"of the step. A ZeRO-3 group of every GPU holds whole nodes, so each layer's gathers run "
                f"over all eight of a node's NICs, as NCCL's rings do (exposed: DeepSpeed's ZeRO-3 of 2021 "
                f"synchronized around each fetch; its reduce-scatters hide behind the backward). "
                f"Measured, the 1536-GPU step took {step:.0f} s where the model's compute takes {busy:.0f} s: "
                f"the gathers and reduce-scatters ({traffic / 1e9:,.0f} GB per GPU per step) ran at about "
                f"{traffic / max(step - busy, 1e-9) / 1e9:.0f} GB/s per GPU, far below the node's "
                f"{8 * 200 / 8:.0f} GB/s of NICs: DeepSpeed's ZeRO-3 of 2021 did not reach the links' rate, "
                f"and one utilization cannot say so without slowing every other run (fitted on every dense "
                f"run, utilization {v.fits['in-sample'].utilization:.2f})."
            )
    if {"SC21-T2-07", "SC21-T2-09"} <= ids.keys():
        a, b = ids["SC21-T2-07"], ids["SC21-T2-09"]
        lines.append(
            f"- **TP x PP x DP holds** (SC'21 Table 2, TP 8 x PP 12): measured {v.runs[a].value:g} to "
            f"{v.runs[b].value:g} TFLOP/s per GPU from 384 to 1536 A100s; predicted {pred[a]:.0f} to "
            f"{pred[b]:.0f} (ratio {v.runs[b].value / v.runs[a].value:.2f} measured, "  # type: ignore[operator]
            f"{pred[b] / pred[a]:.2f} predicted): the per-layer TP traffic stays on NVLink; what crosses the "
            f"NICs (pipeline sends, and the data-parallel gradients, all-reduced after the backward as "
            f"Megatron-LM did in 2021) stays small."
        )
    if {"K23-T5-03", "K23-T5-04"} <= ids.keys():
        a, b = ids["K23-T5-03"], ids["K23-T5-04"]
        lines.append(
            f"- **Full against selective recomputation** (Korthikanti Table 5, GPT-3 175B on 64 A100s): "
            f"measured {v.runs[a].value:g} s to {v.runs[b].value:g} s per iteration (ratio "
            f"{v.runs[b].value / v.runs[a].value:.3f}); predicted {pred[a]:.2f} s to {pred[b]:.2f} s "  # type: ignore[operator]
            f"(ratio {pred[b] / pred[a]:.3f}): the recomputed forward ({_terms(v, model, a)} with full; "
            f"{_terms(v, model, b)} with selective) and sequence parallelism's smaller TP time."
        )
    pairs = [
        ("MB-H100-02", "MLM-LLAMA-02"),
        ("MB-H100-03", "MLM-LLAMA-03"),
        ("MLM-DSV3-GB200-01", "MLM-DSV3-GB200-02"),
    ]
    same = [(x, y) for x, y in pairs if {x, y} <= ids.keys()]
    if same:
        text = "; ".join(
            f"{x} {v.runs[ids[x]].value:g} and {y} {v.runs[ids[y]].value:g} "
            f"({abs(v.runs[ids[y]].value / v.runs[ids[x]].value - 1):.0%} apart)"  # type: ignore[operator]
            for x, y in same
        )
        lines.append(
            f"- **How far the sources repeat themselves**: the same model, GPU and layout, published twice: "
            f"{text}. Where both Megatron-LM's and Megatron-Bridge's recipe pages publish a layout, they "
            f"disagree like this; the DeepSeek pair is one layout before and after software "
            f"optimizations. A model that predicts one of each pair cannot be "
            f"closer to the other than they are to each other, so a target of 8% median and 20% worst is "
            f"about as fine as the recipe rows themselves repeat."
        )
    return lines


def report(v: Validation, command: str = "sweep validate --llm") -> str:
    """REPORT.md text."""
    shipped = Path(v.path).resolve() == DATASET.resolve()
    held_dense = [not t and not r.moe for r, t in zip(v.runs, v.train)]
    groups = list(dict.fromkeys(r.group for r in v.runs))
    train_groups = list(dict.fromkeys(r.group for r, t in zip(v.runs, v.train) if t))
    lines = [
        "# netsweep's layout model against "
        + ("published large-model runs" if shipped else Path(v.path).name),
        "",
        f"Generated by `{command}`. {len(v.runs)} runs "
        + (
            "(`sweep/data/llm_runs.csv`, each row citing its source and table)"
            if shipped
            else f"(`{Path(v.path).name}`)"
        )
        + f"; the metric each source reports, in its own units (its FLOP counting). Constants fitted on "
        f"{', '.join(f'`{g}`' for g in train_groups)} ({sum(v.train)} runs: chosen by source, not by row), "
        "every other run held out. "
        "The protocol and the rules for what a source does not state are `sweep/analysis/llm_validation.py`'s "
        "docstring; they were fixed before any held-out error was seen.",
        "",
        "![predicted over measured](predicted_over_measured.png)",
        "",
        "## The three models",
        "",
        "| model | constants |",
        "|---|---|",
    ]
    for name in MODELS:
        lines.append(f"| {name} | {v.fits[name].describe()} |")
    lines += [
        "",
        "## Errors",
        "",
        "Absolute percentage error of the predicted metric; dense and mixture-of-experts (MoE) rows apart.",
        "",
        "| rows | n | defaults: median / max | trained: median / max | in-sample: median / max |",
        "|---|---|---|---|---|",
    ]

    def row(label: str, mask: Sequence[bool]) -> None:
        cells = []
        n = 0
        for name in MODELS:
            n, med, mx = v.summary(name, mask)
            cells.append(f"{_pct(med)} / {_pct(mx)}")
        if n:
            lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")

    row("**held-out dense (the targets: median <= 8%, none over 20%)**", held_dense)
    for stack, label in (("megatron", "Megatron-LM / Megatron-Core / DeepSpeed"), ("fsdp", "PyTorch FSDP")):
        if any(r.stack != stack for r in v.runs):  # by stack only where a file holds more than one
            row(
                f"held-out dense, {label} stacks",
                [h and r.stack == stack for r, h in zip(v.runs, held_dense)],
            )
    for g in groups:
        name = GROUP_NAMES.get(g, g) + (" (training)" if g in train_groups else "")
        row(f"{name}, dense", [r.group == g and not r.moe for r in v.runs])
        row(f"{name}, MoE", [r.group == g and r.moe for r in v.runs])
    n, med, mx = v.summary("trained", held_dense)
    met = med <= TARGET_MEDIAN and mx <= TARGET_MAX
    over = sum(1 for e, h in zip(np.abs(v.errors("trained")), held_dense) if h and e > TARGET_MAX)
    lines += [
        "",
        f"Held out and dense, trained: median {_pct(med)}, worst {_pct(mx)}, {over} of {n} rows over 20%: "
        f"the targets are {'met' if met else 'not met'}.",
        "",
        memory_line(v),
        "",
        "## Findings",
        "",
    ]
    lines += findings(v) or ["- (none of the published findings' rows are in this file)"]
    lines += [
        "",
        "## Row by row",
        "",
        "Predicted with the trained constants; `waits on`: the two largest terms of the predicted step; "
        "`assumed`: what the source does not state, filled by the rules.",
        "",
        "| id | set | model | GPUs | layout | measured | predicted | error | waits on | assumed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    out = v.outputs["trained"]
    err = v.errors("trained")
    for i, r in enumerate(v.runs):
        lay, assumed = settings(r)
        layout = (
            f"tp{r.tp} pp{r.pp} dp{r.dp}"
            + (f" cp{r.cp}" if r.cp > 1 else "")
            + (f" ep{r.ep}" if r.ep > 1 else "")
            + f" mb{lay.micro_batch}"
            + (f" V{lay.chunks}" if lay.chunks > 1 else "")
            + f" z{lay.zero}"
        )
        fits_note = "" if out["fits"][i] == 1 else " (memory: does not fit)"
        measured = f"{r.value:g}" if r.value is not None else "-"
        lines.append(
            f"| {r.id} | {'train' if v.train[i] else 'held out'} | {r.model}{' (MoE)' if r.moe else ''} | "
            f"{r.gpus} {r.gpu} | {layout} | {measured} {METRICS[r.metric]} | {out['predicted'][i]:.4g}"
            f"{fits_note} | {err[i]:+.1%} | {_terms(v, 'trained', i)} | {', '.join(assumed) or '-'} |"
        )
    worst = sorted(
        (i for i, h in enumerate(held_dense) if h and np.isfinite(err[i])), key=lambda i: -abs(err[i])
    )[:5]
    lines += ["", "## The worst held-out dense rows", ""]
    for i in worst:
        r = v.runs[i]
        lines.append(
            f"- **{r.id}** ({err[i]:+.1%}, {r.model} on {r.gpus} {r.gpu}): the step waits on "
            f"{_terms(v, 'trained', i)}. " + _why(v, i)
        )
    return "\n".join(lines) + "\n"


def memory_line(v: Validation) -> str:
    """Whether every run fits the memory model (a run that ran must), and the tightest."""
    out = v.outputs["trained"]
    free = out["memory_free_gb"]
    unfit = [r.id for r, f in zip(v.runs, out["fits"]) if f != 1]
    tight = int(np.nanargmin(free))
    tightest = f"the tightest, {v.runs[tight].id}, leaves {free[tight]:.1f} GB of its usable memory"
    if not unfit:
        return f"Memory: every one of the {len(v.runs)} runs fits the memory model; {tightest}."
    return (
        f"Memory: {len(unfit)} of the {len(v.runs)} runs do not fit the memory model ({', '.join(unfit)}), "
        f"though they ran: there the memory model is wrong, not the run; {tightest}."
    )


def _why(v: Validation, i: int) -> str:
    """Why a held-out row misses, from what the model knows of it."""
    r, fit_ = v.runs[i], v.fits["trained"]
    reasons = []
    key = die(r.gpu)
    if f"efficiency {key}" not in fit_.fitted:
        reasons.append(
            f"no training run is on a {key}, so its matrix efficiency is the default "
            f"{fit_.efficiency[key]:g} (in-sample it fits {v.fits['in-sample'].efficiency[key]:.3g})"
        )
    if settings(r)[0].zero == 3 and not any(settings(t)[0].zero == 3 for t in v.runs if t.id in fit_.rows):
        reasons.append(
            "ZeRO-3/FSDP: the gathers' overlap with compute is modelled per layer, none of the "
            "training runs use it"
        )
    if v.outputs["trained"]["fits"][i] != 1:
        reasons.append(
            "the memory model says this layout does not fit, so the run must save memory in a way the "
            "rules did not assume (recomputation, offloading), which also costs time"
        )
    if not reasons:
        reasons.append("nothing in the rules or the fit singles it out: the error is the model's")
    text = "; ".join(reasons)
    return text[0].upper() + text[1:] + "."


def predictions_csv(v: Validation) -> str:
    """predictions.csv text: every run's measured value, the three models' predictions and the memory the
    run leaves free by the model (GB; negative: what it lacks)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["id", "group", "model", "gpu", "gpus", "metric", "measured", *MODELS, "memory_free_gb"]
    w.writerow([*header, "set", "assumed"])
    for i, r in enumerate(v.runs):
        w.writerow(
            [
                r.id,
                r.group,
                r.model,
                r.gpu,
                r.gpus,
                r.metric,
                "" if r.value is None else f"{r.value:g}",
                *[f"{v.outputs[m]['predicted'][i]:.6g}" for m in MODELS],
                f"{v.outputs['trained']['memory_free_gb'][i]:.4g}",
                "train" if v.train[i] else "held out",
                "; ".join(settings(r)[1]),
            ]
        )
    return buf.getvalue()


def figure(v: Validation, out: Path, overwrite: bool = True) -> Path:
    """Predicted over measured, run by run, grouped by source: one marker per model; held-out rows filled."""
    fig = Figure(figsize=(9, 4.2))
    ax = fig.gca()
    x = np.arange(len(v.runs))
    for name, marker in zip(MODELS, "osD"):
        ratio = v.outputs[name]["predicted"] / np.array([r.value or np.nan for r in v.runs])
        held = ~np.array(v.train)
        line = ax.plot(x[held], ratio[held], marker, ms=5, label=f"{name}, held out")[0]
        ax.plot(
            x[~held],
            ratio[~held],
            marker,
            ms=5,
            mfc="none",
            color=line.get_color(),
            label=f"{name}, training",
        )
    ax.axhspan(0.8, 1.2, color="0.9", zorder=0, label="within 20%")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ticks = [0.5, 0.8, 1.0, 1.25, 2.0, 4.0]
    ax.set_yticks(ticks, [f"{tick:g}" for tick in ticks])
    ax.minorticks_off()
    ax.set_ylabel("predicted / measured")
    ax.set_xticks(x, [r.id for r in v.runs], rotation=90, fontsize=6)
    ax.legend(fontsize=6, ncol=4, loc="upper left")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return save(fig, out, overwrite=overwrite)


def write_report(
    out_dir: str | Path, v: Validation, command: str = "sweep validate --llm", force: bool = False
) -> list[Path]:
    """Write the figure, predictions.csv and REPORT.md into ``out_dir``; an existing one is refused without
    ``force`` (a link always), before any is written."""
    with all_or_nothing(out_dir):
        out_dir = report_directory(out_dir, FILES, force=force)
        paths = [figure(v, out_dir / FILES[0], overwrite=force)]
        text = predictions_csv(v)
        paths.append(write_atomically(out_dir / FILES[1], lambda p: p.write_text(text), overwrite=force))
        body = report(v, command)
        paths.append(write_atomically(out_dir / FILES[2], lambda p: p.write_text(body), overwrite=force))
    return paths


def run(
    out_dir: str | Path,
    *,
    dataset: str | Path = DATASET,
    train: str | None = None,
    command: str = "sweep validate --llm",
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Path], Validation]:
    """Check ``out_dir``, fit and predict, write the report; return (its paths, the validation)."""
    check_report_directory(out_dir, FILES, force=force)
    v = run_validation(dataset, train, progress)
    return write_report(out_dir, v, command, force), v


def summary_lines(v: Validation) -> list[str]:
    """What the command prints: each model's held-out dense error."""
    held = [not t and not r.moe for r, t in zip(v.runs, v.train)]
    moe = [not t and r.moe for r, t in zip(v.runs, v.train)]
    lines = []
    for name in MODELS:
        n, med, mx = v.summary(name, held)
        m, mmed, mmx = v.summary(name, moe)
        lines.append(
            f"{name:>9}: held-out dense median {_pct(med)}, worst {_pct(mx)} ({n} runs)"
            + (f"; MoE median {_pct(mmed)}, worst {_pct(mmx)} ({m})" if m else "")
        )
    return lines


def calibrate_runs(path: str | Path, train: str | None = None) -> tuple[Fit, Validation]:
    """Fit the constants on a user's runs (those of group ``train``, default every run with a measured value)
    and predict every run, the blank ones included: :func:`calibrate_table` shows each with its error."""
    runs = read_runs(path)
    if train is not None and train not in {r.group for r in runs}:
        groups = sorted({r.group for r in runs})
        raise InputError(f"{train!r}: no runs in that group; groups: {', '.join(groups)}", param="train")
    in_train = [r.value is not None and (train is None or r.group == train) for r in runs]
    if not any(t and not r.moe for r, t in zip(runs, in_train)):
        raise InputError(f"{path}: no dense run with a measured value to fit on", param="train")
    fitted = fit(runs, in_train, "fitted")
    v = Validation(
        runs,
        in_train,
        {"fitted": fitted},
        {"fitted": predict(runs, fitted.efficiency, fitted.utilization)},
        str(path),
    )
    return fitted, v


def calibrate_table(fitted: Fit, v: Validation) -> str:
    """The fitted constants, then every run: measured, predicted, error (training or held out), what it waits on.
    A run with no measured value is predicted with the error of the held-out runs (or, with none, the
    training runs) beside it."""
    err = v.errors("fitted")
    held = [not t and np.isfinite(e) for t, e in zip(v.train, err)]
    basis = held if any(held) else [t and np.isfinite(e) for t, e in zip(v.train, err)]
    spread = np.abs(err[np.asarray(basis, bool)])
    lines = [
        fitted.describe(),
        f"{'id':<18} {'set':<9} {'measured':>10} {'predicted':>10} {'error':>7}  waits on",
    ]
    out = v.outputs["fitted"]
    for i, r in enumerate(v.runs):
        if r.value is None:
            what, shown = "predict", f"+/-{np.median(spread):.0%} (median), {spread.max():.0%} (worst)"
        else:
            what, shown = ("train" if v.train[i] else "held out"), f"{err[i]:+7.1%}"
        measured = "-" if r.value is None else f"{r.value:.4g}"
        lines.append(
            f"{r.id:<18} {what:<9} {measured:>10} {out['predicted'][i]:>10.4g} {shown}  "
            f"{_terms(v, 'fitted', i)}"
        )
    n = len(spread)
    lines.append(
        f"error of {'held-out' if any(held) else 'training'} runs ({n}): median {np.median(spread):.1%}, "
        f"worst {spread.max():.1%}"
    )
    return "\n".join(lines)


def is_runs_file(path: str | Path) -> bool:
    """Whether a CSV holds large-model runs, not data-parallel ones: any of a runs file's own columns (``tp``,
    ``pp``, ``metric``) and neither data-parallel measurement (so a runs file missing ``tp`` is told so, not
    asked for data-parallel columns)."""
    try:
        for line in read_lines(Path(path), "measurements file"):
            if not line.startswith("#"):
                header = {c.strip() for c in next(csv.reader([line]), [])}
                return (
                    bool({"tp", "pp", "metric"} & header)
                    and not {"scaling_factor", "iteration_time"} & header
                )
    except InputError:
        return False
    return False


def calibration_json(fitted: Fit, v: Validation) -> dict[str, object]:
    """The fit and every run's prediction, as JSON-ready values (no NaN: null)."""
    err = v.errors("fitted")
    out = v.outputs["fitted"]

    def number(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    return {
        "constants": {"efficiency": fitted.efficiency, "utilization": fitted.utilization},
        "fitted": list(fitted.fitted),
        "trained_on": list(fitted.rows),
        "runs": [
            {
                "id": r.id,
                "set": "train" if v.train[i] else ("predict" if r.value is None else "held out"),
                "metric": r.metric,
                "measured": r.value,
                "predicted": number(out["predicted"][i]),
                "error": number(err[i]),
                "iteration_time_s": number(out["iteration_time"][i]),
                "assumed": settings(r)[1],
            }
            for i, r in enumerate(v.runs)
        ],
    }
