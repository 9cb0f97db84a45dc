"""Files of large-model runs (``validate --llm``, ``calibrate``): read, checked, and their blanks filled in.

Columns (header required; one row per run): ``id``, ``gpu`` (a GPU preset), ``gpus``, ``tp``, ``pp``,
``global_batch``, ``metric`` (one of :data:`METRICS`) and ``value`` (empty: predict it), and a ``preset``
(:data:`sweep.model.llms.LLMS`), an ``arch`` (``--arch``'s keys in one cell) or the shape (``layers``, ``hidden``,
``heads``, ``seq_len``, ``vocab``: heads of hidden / heads each, tied embeddings);
optional: ``group``, ``stack`` (a stack preset of :data:`sweep.model.stacks.STACKS`, or ``megatron`` or
``fsdp``, read with the ``year``), ``year``, ``dp``, ``cp``, ``ep``, ``expert_tp`` (1 unless given: NVIDIA's MoE
recipes set expert_tensor_parallel_size 1), ``micro_batch``, ``precision``, ``zero``,
``chunks``, ``recompute``, ``sequence_parallel``, ``attention``, ``offload_layers``, ``overlap``,
``moment_bytes``, ``mtp_layers`` (the multi-token-prediction depths the run trains; empty: the model's),
``moe_dispatcher`` (MoE rows: ``alltoall`` or ``flex``, Megatron-Core's names; empty: alltoall, its default),
``flops`` (:data:`FLOP_RULES`); notes no rule reads (:data:`NOTES`: ``source``, ``table``,
``model``, ``notes``, ...). Any other column is refused by name (a misspelt setting is never ignored). Lines
starting with ``#`` are comments.

:func:`read_runs` refuses a bad row, a layout that does not add up or one that cannot exist by the rules
every sweep masks with, in one error naming the file, line, row and rule. :func:`settings` fills what a
row does not state by one rule per setting, its stack preset's (:mod:`sweep.model.stacks`, where each rule and its
source is declared once; the protocol is :mod:`sweep.analysis.llm_validation`'s), and says what it assumed.
"""

import collections
import csv
import dataclasses
import difflib
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from netsweep_jax.kernels.layout import STATUS
from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.layout_axes import (
    ATTENTIONS,
    AXES,
    LAYOUT_PRECISIONS,
    RECOMPUTE_HELP,
    recompute_mode,
)
from netsweep_jax.sweep.core.sweep_settings import MOE_DISPATCHERS, OVERLAP_HELP, SweepSettings, overlap_mode
from netsweep_jax.sweep.core.textfile import read_csv_table, read_lines
from netsweep_jax.sweep.core.values import number, whole_number
from netsweep_jax.sweep.engine.layout_grid import parse_schedule
from netsweep_jax.sweep.engine.layouts import LayoutRow, rows_status
from netsweep_jax.sweep.model.compute import GPUS, PRECISIONS, die, refuse_on_volta
from netsweep_jax.sweep.model.llms import ARCH_KEYS, LLM, LLMS, parse_arch, uneven_heads
from netsweep_jax.sweep.model.stacks import STACKS, Stack, stack_of

DATASET = Path(__file__).resolve().parents[1] / "data" / "llm_runs.csv"  # the published runs, shipped
METRICS = {
    "s_per_iter": "s",
    "TFLOPs_per_GPU": "TFLOP/s",
    "model_TFLOPs_per_GPU": "TFLOP/s",
    "tokens_per_s_per_GPU": "tokens/s",
}
FLOP_RULES = ("megatron", "megatron-causal", "sc21-eq3", "time", "tokens")
# The metrics that count no FLOPs, each with its one rule.
COUNTED_BY = {"s_per_iter": "time", "tokens_per_s_per_GPU": "tokens"}

REQUIRED = ("id", "gpu", "gpus", "tp", "pp", "global_batch", "metric", "value")
SHAPE = ("layers", "hidden", "heads", "seq_len", "vocab")
OPTIONAL = (
    "preset",
    "arch",
    "group",
    "stack",
    "year",
    "dp",
    "cp",
    "ep",
    "expert_tp",
    "micro_batch",
    "precision",
    "zero",
    "chunks",
    "recompute",
    "sequence_parallel",
    "attention",
    "offload_layers",
    "overlap",
    "moment_bytes",
    "mtp_layers",
    "moe_dispatcher",
    "flops",
)
# Columns read by no rule, kept for the reader (the published files' own): where a run comes from and what it
# says in words. Any other column is refused by name, so that a misspelt setting (recompte) is never ignored
# while the fill-in rules take its place.
NOTES = (
    "source",
    "table",
    "model",
    "notes",
    "interconnect",
    "params_b",
    "stated_precision",
    "stated_recompute",
)
COLUMNS = (*REQUIRED, *SHAPE, *OPTIONAL, *NOTES)
# The most runs a file may hold, checked before any row is parsed: the fit (sweep/analysis/llm_fit.py) keeps
# [runs, candidates] float64 arrays over FIT_CANDIDATES candidate constants per run, its coarse grid of 46
# efficiencies by 40 utilizations (147 MB each at this size); a file of published or measured runs is far
# smaller. tests/test_llm_validation.py checks that FIT_CANDIDATES is the fit's grid.
MAX_RUNS = 10_000
FIT_CANDIDATES = 46 * 40


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
    moment_bytes: int | None = None  # as the row states (None: its stack's recipe's, else 4)
    overlap: str = ""
    expert_tp: int | None = None
    preset: str = ""  # its stack preset (sweep.model.stacks.STACKS); "": the one of its stack and year
    mtp_layers: int | None = None  # the multi-token-prediction depths the row states (None: the model's)
    moe_dispatcher: str = ""  # "": not stated (the model's default, alltoall)
    # the defaults reading took where the row is silent (its assumed phrases' first)
    unstated: tuple[str, ...] = ()

    @property
    def moe(self) -> bool:
        return self.llm.experts > 0

    @property
    def trained(self) -> LLM:
        """The model as the run trains it: with the multi-token-prediction depths the row states."""
        if self.mtp_layers is None or self.mtp_layers == self.llm.mtp_layers:
            return self.llm
        return dataclasses.replace(self.llm, mtp_layers=self.mtp_layers)


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
    spec = AXES.get(name)  # a layout setting is held to the rule the sweeps hold it to
    if spec is not None and value >= low and not (spec.allows(value) and value.is_integer()):
        raise InputError(f"{where(path, line)} (row {rid}): {name} {text} {spec.rule()}")
    if not value.is_integer() or value < low or value > 1e9:
        raise InputError(f"{where(path, line)} (row {rid}): {name} {text} must be a whole number from {low}")
    return int(value)


def read_runs(path: str | Path) -> list[Run]:
    """Read and check a file of measured runs; any bad row is one error naming the file, line, row and rule."""
    path = Path(path)
    header_line, header, table = read_csv_table(path, "runs file")
    missing = [c for c in REQUIRED if c not in header]
    if "preset" not in header and "arch" not in header and any(c not in header for c in SHAPE):
        missing.append("preset (or arch, or the shape: " + ", ".join(SHAPE) + ")")
    if missing:
        cased = [c for c in header if c not in COLUMNS and c.lower() in COLUMNS]
        hint = f" ({', '.join(cased)}: a column's name is in lower case)" if cased else ""
        raise InputError(f"{where(path, header_line)}: missing column(s) {', '.join(missing)}{hint}")
    for column in header:
        if column not in COLUMNS:
            close = difflib.get_close_matches(column, COLUMNS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            if column in ARCH_KEYS:  # a shape key: the arch cell takes it, not a column (a hunt: kv_heads)
                hint = f"{column} is a key of the arch cell (arch 'layers=...,{column}=...', --arch's keys); "
            raise InputError(
                f"{where(path, header_line)}: unknown column {column!r}; {hint}a runs file's columns are "
                f"{', '.join(COLUMNS)}"
            )
    if len(table) > MAX_RUNS:  # before any row is parsed: the fit's memory grows with the runs
        raise InputError(
            f"{path}: {len(table):,} rows; a runs file holds at most {MAX_RUNS:,} runs (the fit keeps "
            f"{FIT_CANDIDATES:,} candidate constants per run); split it by source"
        )
    runs = [_run(cells, path, line) for line, cells in table]
    if not runs:
        raise InputError(f"{path}: no runs after the header")
    counts = collections.Counter(r.id for r in runs)
    if len(counts) != len(runs):
        twice = sorted(i for i, n in counts.items() if n > 1)
        raise InputError(f"{path}: row id {twice[0]} appears twice; ids must be unique")
    _check_layouts(runs, path)
    return runs


# The settings a status rule reads beyond the layout's degrees (kernels.layout_inputs.degrees), named where a row
# breaks it.
RULE_SETTINGS = {
    STATUS[4]: ("chunks",),
    STATUS[9]: ("chunks",),
    STATUS[11]: ("sequence_parallel",),
    STATUS[12]: ("recompute", "chunks"),
    STATUS[13]: ("offload_layers", "recompute"),
    STATUS[14]: ("sequence_parallel",),
}


def _check_layouts(runs: Sequence[Run], path: Path) -> None:
    """Refuse a run that cannot exist by the rules every sweep masks with (:data:`kernels.layout.STATUS`): a
    runs file describes runs that happened. One error naming the file, line, row and rule."""
    status = rows_status([settings(r)[0] for r in runs])
    for run, code in zip(runs, status):
        if code:
            row, _ = settings(run)
            names = ("gpus", "tp", "pp", "cp", "dp", "ep", *(("expert_tp",) if run.moe else ()))
            # and the settings the rule reads beyond the layout, as the row's stack filled them where it gave none
            # (a review: an offload refused for a recompute the row never stated, and not named)
            names = (*names, "micro_batch", "global_batch", *RULE_SETTINGS.get(STATUS[code], ()))
            layout = ", ".join(f"{name} {getattr(row, name)}" for name in names)
            if code == 12:  # moe_a2a's rule: and the MTP depth it trains, the model's own (a review)
                layout += f", mtp_layers {run.trained.mtp_layers}, overlap {row.settings.overlap}"
            if code == 14:  # sequence parallelism's: and the sequence it splits, the model's (a review)
                layout += f", seq_len {row.llm.seq}"
            raise InputError(
                f"{where(path, run.line)} (row {run.id}): this layout cannot exist: {STATUS[code]} ({layout})"
            )


def _run_id(cells: dict[str, str], path: Path, line: int) -> str:
    """A row's id, refused where empty: a report's rows and a fit's runs are named by it."""
    if not cells["id"]:
        raise InputError(f"{where(path, line)}: id is empty; each run needs its own")
    return cells["id"]


def _run(cells: dict[str, str], path: Path, line: int) -> Run:
    rid = _run_id(cells, path, line)

    def bad(rule: str) -> InputError:
        return InputError(f"{where(path, line)} (row {rid}): {rule}")

    llm, model = _model(cells, bad, path, line, rid)
    gpu = cells["gpu"].lower()
    if gpu not in GPUS:
        raise bad(f"gpu {cells['gpu']!r} is not a preset; presets: {', '.join(GPUS)}")
    precision = (cells.get("precision") or "bf16").lower()
    if precision not in LAYOUT_PRECISIONS:
        raise bad(f"precision {precision!r} must be one of {', '.join(LAYOUT_PRECISIONS)}")
    gpus, tp, pp = (_int(cells, n, path, line, rid) for n in ("gpus", "tp", "pp"))
    cp = _int(cells, "cp", path, line, rid, default=1)
    ep = _int(cells, "ep", path, line, rid, default=1)
    dp = _int(cells, "dp", path, line, rid, default=0, low=1)
    assert gpus is not None and tp is not None and pp is not None and cp is not None and ep is not None
    # The sweeps' rules (kernels.layout.STATUS) are checked once every row is read (_check_layouts); a dp the row
    # leaves out is derived here for the fill-in rules, and a GPU count none fits refused (a dp rounded down
    # blamed the batch)
    if not dp and gpus % (tp * pp * cp):
        raise bad(f"gpus {gpus} is not a multiple of tp x pp x cp = {tp * pp * cp}: no dp fits")
    dp = dp or gpus // (tp * pp * cp)
    global_batch = _int(cells, "global_batch", path, line, rid)
    assert global_batch is not None
    micro = _int(cells, "micro_batch", path, line, rid, default=0) or None
    zero_text = cells.get("zero", "")
    zero = _int(cells, "zero", path, line, rid, default=0, low=0) if zero_text else None
    if zero is not None and zero > 3:
        raise bad(f"zero {zero} must be 0, 1, 2 or 3")
    chunks, recompute, sp_text, attention = _schedule_and_kernels(cells, bad)
    metric, flops, value = _metric(cells, bad, path, line, rid)
    year = _int(cells, "year", path, line, rid, default=2025, low=2000)
    assert year is not None
    try:
        preset = stack_of((cells.get("stack") or "").lower(), year)
    except InputError as e:
        raise bad(e.detail) from None
    _on_its_gpu(bad, gpu, precision, attention or STACKS[preset].attention, cells, preset)
    _within_peak(bad, gpu, precision, metric, value, llm, gpus * 1.0 / (global_batch * llm.seq))
    moments, mtp_layers, overlap, dispatcher, offload = _recipe(cells, bad, llm, path, line, rid)
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
        offload,
        STACKS[preset].family,
        moments,
        overlap,
        _int(cells, "expert_tp", path, line, rid, default=None),
        preset,
        mtp_layers,
        dispatcher,
        _unstated(cells, preset, metric, flops, llm.experts > 0),
    )


def _on_its_gpu(
    bad: Callable[[str], InputError],
    gpu: str,
    precision: str,
    attention: str,
    cells: dict[str, str],
    preset: str,
) -> None:
    """Refuse a row its GPU cannot have run: bf16 or flash attention on a V100, the sweeps' one rule, for the
    row as filled (its stack's attention where it states none: predicted with flash, grid refused it), said
    with where the value came from (``cells``: what the row states; ``preset``: its stack's); its rate against
    the GPU's peak is :func:`_within_peak`'s."""
    if precision == "fp8" and GPUS[gpu].fp8 == 0:
        raise bad(f"fp8 on the {gpu}, which has no fp8 tensor cores")
    try:  # a runs file states a column, not an option: no '--attention' advice
        refuse_on_volta(
            gpu, precision=precision, whose="" if cells.get("precision") else " (the default: state fp16)"
        )
        refuse_on_volta(
            gpu,
            attention=attention,
            whose="" if cells.get("attention") else f" (stack {preset}'s: state unfused)",
            advice="",
        )
    except InputError as e:
        raise bad(str(e)) from None


# The least share of its GPU's dense peak a run's rate may imply: a thousandth, 60 times below the slowest
# published run (a hunt: 1,000 times off, a step in ms or a rate in PFLOP/s, lands below it).
FLOOR = 1e-3


def _within_peak(
    bad: Callable[[str], InputError],
    gpu: str,
    precision: str,
    metric: str,
    value: float | None,
    llm: LLM,
    gpus_per_token: float,
) -> None:
    """Refuse a time or token rate its GPUs cannot have run at: training takes at least 6 FLOPs a token for each
    active parameter but the input embedding's (each matrix multiplied forward once and backward twice), so a
    rate whose 6 N tokens/s a GPU passes the dense peak is an error (a hunt: 512,000 tokens/s a GPU, a job's
    total in the per-GPU column, was priced and reported 98% off); and any rate under :data:`FLOOR` of the peak,
    a FLOP rate or one implied that way (a hunt: a training run's step of 8417 s, given in ms, was fitted and
    pulled every constant to an end of its range; the slowest published row is at 6% of its peak, and attention
    at a million tokens of context adds about 40 times the 6 N). ``gpus_per_token``: gpus / (global batch x
    seq), which turns seconds a step into tokens a second a GPU."""
    if value is None or value <= 0:
        return
    peak = getattr(GPUS[gpu], PRECISIONS[precision].math) / 1e12  # TFLOP/s, dense
    if METRICS[metric] == "TFLOP/s":
        if value > peak:  # a typo drove the fit to its bounds, in silence
            raise bad(
                f"value {value:g} TFLOP/s is above the {gpu}'s dense {precision} peak of {peak:g} TFLOP/s a GPU"
            )
        if value < FLOOR * peak:
            raise bad(
                f"value {value:g} TFLOP/s a GPU is under {FLOOR:g} of the {gpu}'s dense {precision} peak of "
                f"{peak:g} TFLOP/s: PFLOP/s, or another unit?"
            )
        return
    per_gpu = value if METRICS[metric] == "tokens/s" else 1.0 / (value * gpus_per_token)
    matrices = llm.parameters()["active"] - llm.vocab * llm.hidden
    implied = 6.0 * matrices * per_gpu / 1e12
    if implied < FLOOR * peak:
        tokens = METRICS[metric] == "tokens/s"
        said = f"{value:g} tokens/s a GPU" if tokens else f"{value:g} s a step"
        raise bad(
            f"value {said} is {implied:.3g} TFLOP/s a GPU at 6 FLOPs a token per active parameter, under "
            f"{FLOOR:g} of the {gpu}'s dense {precision} peak of {peak:g} TFLOP/s: "
            f"{'another unit' if tokens else 'a step in ms, or another unit'}?"
        )
    if implied > peak:
        said = f"{value:g} tokens/s a GPU" if METRICS[metric] == "tokens/s" else f"{value:g} s a step"
        raise bad(
            f"value {said} is {implied:,.0f} TFLOP/s a GPU at 6 FLOPs a token per active parameter, above the "
            f"{gpu}'s dense {precision} peak of {peak:g} TFLOP/s: a whole job's rate, or another unit?"
        )


def _unstated(cells: dict[str, str], preset: str, metric: str, flops: str, moe: bool) -> tuple[str, ...]:
    """What reading took where the row is silent, as its assumed phrases: the precision, the stack preset of a
    row that names none and no year (the year assumed: 2025), the FLOP count of a FLOP rate, a mixture of
    experts' one expert group (a hunt: priced at EP 1 in silence)."""
    stack, year = cells.get("stack", "").strip().lower(), cells.get("year")
    # Said where a year is assumed: a preset named, or a year stated (a blank stack is Megatron's, the file's
    # documented rule), chooses the stack with nothing assumed.
    why = (
        ""
        if stack == preset or year
        else "(no stack or year stated)"
        if not stack
        else f"({stack}, no year stated: 2025's)"
    )
    return (
        *(["precision bf16"] if not cells.get("precision") else []),
        *([f"stack {preset} {why}"] if why else []),
        *([f"FLOP count {flops}"] if not cells.get("flops") and metric not in COUNTED_BY else []),
        *(["ep 1"] if moe and not cells.get("ep") else []),
    )


def _schedule_and_kernels(
    cells: dict[str, str], bad: Callable[[str], InputError]
) -> tuple[str, str, str, str]:
    """The row's schedule (chunks), recompute modes, sequence parallelism and attention kernel, as given (""
    where empty: the stack's rules fill them)."""
    chunks = cells.get("chunks", "").strip().lower()
    if chunks and chunks != "interleaved" and not ((whole_number(chunks) or 0) >= 1):
        try:  # a schedule as --schedule spells it (1f1b, interleaved:V), read by the sweeps' own parser
            chunks = str(int(parse_schedule(chunks)))
        except InputError:
            raise bad(
                f"chunks {chunks!r} must be V (model chunks per stage), 'interleaved' (V not stated), or a "
                f"schedule as --schedule takes it (1f1b, interleaved:V)"
            ) from None
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
    return chunks, recompute, sp_text, attention


def _model(
    cells: dict[str, str], bad: Callable[[str], InputError], path: Path, line: int, rid: str
) -> tuple[LLM, str]:
    """The row's transformer and its name: a preset (its shape columns, where given, must agree; the sequence is
    the run's), an ``arch`` (``--arch``'s keys: a hunt had no way to state a Llama or a Mixtral but by a
    preset), or a GPT shape from the shape columns (4h GELU MLP, tied embeddings, a key/value head a head)."""
    preset = cells.get("preset", "").lower()
    arch = cells.get("arch", "").strip()
    if arch:
        shaped = [name for name in ("preset", *SHAPE) if cells.get(name, "").strip()]
        if shaped:
            raise bad(
                f"arch and {shaped[0]} both given: arch states the whole shape; leave {shaped[0]} empty"
            )
        try:
            llm = parse_arch(arch)
        except InputError as e:
            raise bad(f"arch {arch!r}: {e.detail}") from None
        # a preset's shape is that preset, whose name the FLOP count reads (a review: GPT-OSS's, priced as another
        # model's); any other is named by its whole shape, never shared by two
        same = [
            name for name, p in LLMS.items() if dataclasses.replace(p, source=llm.source, seq=llm.seq) == llm
        ]
        return llm, same[0] if same else f"arch {arch}"
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
            raise bad(f"give a preset, an arch or every shape column ({', '.join(SHAPE)})")
        shape = {name: int(v or 0) for name, v in given.items()}
        if uneven := uneven_heads(shape["hidden"], shape["heads"]):  # as --arch refuses it (a hunt)
            raise bad(
                f"{uneven}: the shape columns' heads are hidden / heads wide; give an arch with head_dim="
            )
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
    return llm, model


def _metric(
    cells: dict[str, str], bad: Callable[[str], InputError], path: Path, line: int, rid: str
) -> tuple[str, str, float | None]:
    """The row's metric, the FLOP rule its value counts by, and its value (None: predict it)."""
    # in any case, as the other names a row gives (presets, GPUs, stacks); kept as METRICS spells it
    metric = {m.lower(): m for m in METRICS}.get(cells["metric"].strip().lower(), cells["metric"])
    if metric not in METRICS:
        raise bad(f"metric {metric!r} must be one of {', '.join(METRICS)} (in any case)")
    flops = (cells.get("flops") or COUNTED_BY.get(metric, "megatron")).strip().lower()
    allowed = (
        [COUNTED_BY[metric]]
        if metric in COUNTED_BY
        else [f for f in FLOP_RULES if f not in COUNTED_BY.values()]
    )
    if flops not in allowed:
        # the rules this metric takes (a hunt: 'time' for a TFLOP/s metric was told time was among them)
        raise bad(f"flops {flops!r}: {metric} counts by {', '.join(allowed)} only")
    value_text = cells["value"]
    value = None
    if value_text:
        value = number(value_text, f"{where(path, line)} (row {rid}): value")
        if not (math.isfinite(value) and value > 0):
            raise bad(f"value {value_text} must be a positive number (or empty: predict it)")
    return metric, flops, value


def _recipe(
    cells: dict[str, str], bad: Callable[[str], InputError], llm: LLM, path: Path, line: int, rid: str
) -> tuple[int | None, int | None, str, str, int]:
    """The recipe's columns a stack fills where empty: Adam moments' bytes, MTP layers, overlap, dispatcher; and
    the layers offloaded to the CPU (fewer than the model's, as Megatron-Core requires: more were clamped, in
    silence)."""
    # Held to its axis's choices (4, 2 or 1) by _int; empty: the stack's recipe's, else 4.
    moments = _int(cells, "moment_bytes", path, line, rid, default=None, low=1)
    mtp_layers = _int(cells, "mtp_layers", path, line, rid, default=None, low=0)
    if mtp_layers is not None and mtp_layers > AXES["mtp_layers"].high:
        raise bad(
            f"mtp_layers {mtp_layers} must be from 0 to {AXES['mtp_layers'].high:g}, or empty (the model's)"
        )
    overlap_text = cells.get("overlap", "")
    overlap = overlap_mode(overlap_text) if overlap_text else ""
    if overlap is None:
        raise bad(f"overlap {overlap_text!r} must be {OVERLAP_HELP}, or empty (the stack's rule)")
    dispatcher = cells.get("moe_dispatcher", "").strip().lower()
    if dispatcher and dispatcher not in MOE_DISPATCHERS:
        raise bad(
            f"moe_dispatcher {dispatcher!r} must be {' or '.join(MOE_DISPATCHERS)}, or empty (alltoall)"
        )
    if dispatcher and not llm.experts:
        raise bad(f"moe_dispatcher {dispatcher}: a mixture-of-experts setting on a dense model")
    offload = _int(cells, "offload_layers", path, line, rid, default=0, low=0) or 0
    if offload >= llm.layers:
        raise bad(
            f"offload_layers {offload} must be fewer than the model's {llm.layers} layers (Megatron-Core's rule)"
        )
    return moments, mtp_layers, overlap, dispatcher, offload


def settings(run: Run) -> tuple[LayoutRow, list[str]]:
    """The run as the model sees it, and what was assumed (one phrase per rule applied): what the row does not
    state, its stack preset's (:data:`sweep.model.stacks.STACKS`, by the row's ``stack`` and ``year``)."""
    stack = STACKS[run.preset or stack_of(run.stack, run.year)]
    assumed: list[str] = list(run.unstated)
    micro, chunks = _micro_batches_and_chunks(run, stack, assumed)
    recompute = run.recompute or stack.recompute
    if not run.recompute:
        assumed.append(f"recompute {recompute}")
    sp = run.sequence_parallel
    if sp is None:
        sp = int(stack.sequence_parallel and run.tp > 1)
        if run.tp > 1:
            assumed.append(f"sequence parallelism {'on' if sp else 'off'}")
    zero = run.zero
    if zero is None:
        zero = stack.zero
        assumed.append(f"ZeRO {zero}")
    attention = run.attention or stack.attention
    if not run.attention:
        assumed.append(f"{attention} attention")
    grad_bytes = stack.grad_bytes
    if grad_bytes == 2:
        assumed.append("bf16 gradients")
    overlap = run.overlap
    if not overlap:
        overlap = stack.overlap_with(run.tp, sp)
        assumed.append(f"overlap {overlap}")
    attention_efficiency = float(AXES["attention_efficiency"].default)
    flash = stack.attention_efficiency(die(run.gpu), attention)
    if flash is not None:
        attention_efficiency = flash[0]
        assumed.append(f"attention efficiency {flash[0]} ({flash[1]})")
    imbalance, expert_tp, moment_bytes, dispatcher = _experts_and_moments(run, stack, assumed)
    row = LayoutRow(
        run.trained,
        run.gpu,
        run.precision,
        run.gpus,
        tp=run.tp,
        pp=run.pp,
        cp=run.cp,
        ep=run.ep,
        expert_tp=expert_tp,
        dp=run.dp,
        micro_batch=micro,
        global_batch=run.global_batch,
        chunks=chunks,
        recompute=recompute,
        grad_bytes=grad_bytes,
        offload_layers=run.offload_layers,
        settings=SweepSettings(
            moment_bytes=moment_bytes,
            overlap=overlap,
            attention_efficiency=attention_efficiency,
            moe_dispatcher=dispatcher,
            zero3_gather_once=stack.zero3_gather_once,
        ),
        sequence_parallel=sp,
        zero=zero,
        attention=attention,
        imbalance=imbalance,
    )
    return row, assumed


def _micro_batches_and_chunks(run: Run, stack: Stack, assumed: list[str]) -> tuple[int, int]:
    """The run's micro-batch and model chunks per stage, the stack's rule where it states neither (each rule
    applied appended to ``assumed``)."""
    micro = run.micro_batch
    if micro is None and (micro := stack.micro_batch(run.global_batch, run.dp, run.pp)) is not None:
        assumed.append(f"micro-batch {micro} (as many micro-batches as stages)")
    if micro is None:
        micro = 1
        assumed.append("micro-batch 1")
    stated = whole_number(run.chunks)
    if stated is not None:
        chunks = stated
    else:
        chunks = 2 if run.chunks == "interleaved" and run.pp > 1 else 1
        # at pp 1 a source's blanket 'interleaved' (SC'21 Table 1) runs 1f1b: said
        if run.chunks == "interleaved":
            assumed.append("interleaved V=2" if run.pp > 1 else "1f1b (interleaved needs pp > 1)")
    return micro, chunks


def _experts_and_moments(run: Run, stack: Stack, assumed: list[str]) -> tuple[float, int, int, str]:
    """The run's load imbalance, expert TP, Adam moments' bytes and MoE dispatcher, the stack's rules where it
    states none (each rule applied appended to ``assumed``)."""
    imbalance = stack.imbalance
    if run.llm.experts > 0:
        assumed.append(f"load imbalance {imbalance:g} (balanced routing, as the recipes force it)")
    expert_tp = run.expert_tp or stack.expert_tp
    if run.moe and run.expert_tp is None and run.tp > 1:
        assumed.append(f"expert TP {stack.expert_tp} (the recipes' expert_tensor_parallel_size)")
    moment_bytes = run.moment_bytes
    recipe = stack.moments(run.model)
    if moment_bytes is None:
        moment_bytes = recipe[0] if recipe else 4
        if recipe:
            assumed.append(f"Adam moments of {recipe[0]} bytes ({recipe[1]})")
    if run.mtp_layers is None and run.llm.mtp_layers:
        assumed.append(f"{run.llm.mtp_layers} multi-token-prediction depth (the model's)")
    dispatcher = run.moe_dispatcher or MOE_DISPATCHERS[0]
    if run.moe and not run.moe_dispatcher:
        assumed.append(
            f"dispatcher {dispatcher} (the model's default; Megatron-Core's, allgather, is not modelled)"
        )
    return imbalance, expert_tp, moment_bytes, dispatcher


def is_runs_file(path: str | Path) -> bool:
    """Whether a CSV holds large-model runs, not data-parallel ones: any of a runs file's own columns (``tp``,
    ``pp``, ``metric``) and neither data-parallel measurement (so a runs file missing ``tp`` is told so, not
    asked for data-parallel columns)."""
    try:
        for line in read_lines(Path(path), "measurements file"):
            if line.strip() and not line.startswith("#"):  # the header: blank lines before it are not
                header = {c.strip() for c in next(csv.reader([line]), [])}
                return (
                    bool({"tp", "pp", "metric"} & header)
                    and not {"scaling_factor", "iteration_time"} & header
                )
    except InputError:
        return False
    return False
