"""The layout model against published large-model runs: ``sweep validate --llm`` and ``calibrate`` of layouts.

Protocol (chosen before any held-out error was looked at, and the same for a user's file):

1. **Predict each row's published metric in the source's own units.** ``s_per_iter``: the
   iteration time. ``model_TFLOPs_per_GPU`` and Megatron-LM's ``TFLOPs_per_GPU`` (``flops``
   ``megatron``): model FLOPs, Megatron-LM's ``num_floating_point_operations`` (3 x forward, the
   attention core counted in full: ``12 B s L h^2 ((1 + g/a + s/h) w_q/h + f/h k (3/2 gated)) +
   6 B s h v``, the same count as :mod:`kernels.layout`'s model FLOPs), over time and GPUs.
   Megatron-Bridge's 2025 tables (``flops`` ``megatron-causal``): its own count, the attention core's
   causal half and no router (:func:`sweep.analysis.llm_predict.megatron_causal_flops`; each table's
   TFLOP/s over its tokens/s agrees with it within 0.3%, but for MB-B300-01's 0.41%); it was ``megatron`` until 2026-12-02, a
   mistake that put these rows 4% (Llama 3 405B) to 40% (gpt-oss) high.
   Narayanan et al.'s ``TFLOPs_per_GPU`` (``flops`` ``sc21-eq3``): their eq. 3,
   ``96 B s l h^2 (1 + s / 6h + v / 16 l h)``, which counts a recomputed forward, over time and GPUs.
2. **Fill what a source does not state by one rule per setting** (:func:`sweep.io.runs.settings`: the stack
   presets of :mod:`sweep.model.stacks`, where each rule and its source is declared once, and which
   ``--stack`` sets in ``sweep plan`` and ``sweep grid``), by the stack of the run's ``year``: Megatron-LM and DeepSpeed of 2021-22 (SC'21, Korthikanti) or
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
   ``CommOverlapConfig``). Recompute modules: as stated. Adam moments (``moment_bytes``): as stated, else the
   stack's recipe's for the model (Megatron-Core's DeepSeek-V3 recipe: bf16), else fp32. Multi-token
   prediction (``mtp_layers``): as stated, else the model's (DeepSeek-V3: 1; stated 0 where the source runs
   without it; modelled from 2026-12-03, when MB-H100-07 went from +20.2% to -1.8%). Expert
   TP of MoE rows (``expert_tp``): as stated, else 1, what Megatron-Bridge's performance recipes set for every
   MoE model they publish (``expert_tensor_parallel_size=1``; until 2026-12-03 the model took the TP size
   wherever EP divided DP x CP, which put MB-H100-07 at expert TP 2 where its recipe runs 1). MoE token
   dispatcher (``moe_dispatcher``): as stated, else ``alltoall``, the model's default (Megatron-Core's own,
   ``allgather``, is not modelled; called Megatron-Core's default until a hunt, 2026-12-06; added 2026-12-03,
   #40: the rows whose recipes set ``flex``, DeepEP or HybridEP, say so; until then every row was priced as
   NCCL's flat all-to-all).
   PyTorch FSDP stacks (``stack`` fsdp: torchtitan, llm-foundry): ZeRO 3, sequence parallelism with
   TP (torchtitan's TP plan shards the norms), flash attention, gradients in fp32 (FSDP2's and
   llm-foundry's default reduce dtype), recomputation as stated else none, and with pipelining as many
   micro-batches as stages (torchtitan's default), and on Hopper the flash kernel's efficiency
   FlashAttention-2's, 0.33 (PyTorch's SDPA ran it in these runs; Shah et al., FlashAttention-3, arXiv
   2407.08608, Figures 5-6: 318-335 of the H100's 989 TFLOP/s at head dim 128; added 2026-12-02, after
   held-out errors had been seen, from those sources: :func:`sweep.io.runs.settings`); the metric ``tokens_per_s_per_GPU`` (``flops``
   tokens) is global tokens per second over the GPUs, as both log it.
   Network: the GPU preset's system (DGX A100 = Selene's 8 x 200 Gbit/s; DGX H100 8 x 400;
   GB200 NVL72), the ``nccl`` collective, no latency or overhead term.
3. **Fit few global constants**: the matrix efficiency of each stack preset on each GPU die (``a100``,
   ``h100``, ``gb200``, ...;  a preset's ``die`` maps the H200 and other parts of one chip to it; one per
   die, whatever the stack, until 2026-12-03) and one memory efficiency shared by all (the achieved fraction
   of HBM bandwidth in memory-bound work, on the bytes the model counts), by least squares on
   log(predicted / measured) over the training rows (dense models only). A stack with no training row on a
   die takes the die's pooled efficiency (one efficiency fitted on every training row on that die, whatever
   its stack, the memory efficiency held at the per-stack fit's); a die with no training row at all the
   documented default 0.6. The training rows, chosen by source on 2026-12-03 before any held-out error of
   the per-stack fit was computed, one source per stack preset: SC'21 Table 1 (``sc21-t1``) for
   ``megatron-2021`` on the A100; llm-foundry's MPT tables (``llm-foundry``) for ``fsdp`` on the H100 and,
   with its one A100 row, the A100; Megatron-Bridge's performance tables (``megatron-bridge``: Llama 3 8B,
   70B and 405B on H100 and GB200, and from 2026-12-04, when every dense row of its 25.11 tables was in the
   runs file, on B200 and GB300 too) for ``megatron-core``, the source the preset's fill rules are read from
   and the only one of that stack with rows on both of its dies. Held out: SC'21 Table 2, Korthikanti et
   al., Megatron-LM's own pages (``megatron-lm``: its Llama 3 README and DeepSeek-V3 on GB200), torchtitan,
   and every MoE row.
   On 2026-12-06, after held-out errors had been seen and for a reason found apart from them (a user's
   hunt: 8 layers a stage as 3 chunks), the pipeline's bubble became (p - 1) max_i ceil(n_i / V) / n_i T_i
   over the stages, each stage's largest chunk's share of its time, where (p - 1) / V of the slowest stage's
   time had priced an uneven split's chunks alike (:mod:`kernels.layout_pipeline`; the largest over the
   stages, not the slowest stage's alone, after a review found the step could then rise with the NICs'
   rate); it changes the bubble of 15 rows at fixed constants: 7 training rows (SC'21 Table 1's 06, 15
   layers a stage in 2 chunks, and 09, 3 in 2; Megatron-Bridge's Llama 3.1 405B rows MB-H100-03,
   MB-H100-08, MB-GB200-02, MB-B200-04 and MB-GB300-05, whose last stage holds 15 layers in 8 or 4 chunks,
   or 7 in 4) and 8 held out (dense: MLM-LLAMA-03 and torchtitan's interleaved 405B; MoE: MB-H100-06,
   MB-H100-07, MB-GB200-03, MB-GB200-04, MLM-DSV3-GB200-01 and 02).
   The memory efficiency joined the fitted constants on 2026-12-02, after held-out errors had been seen;
   the training rows alone call for it (their mean squared log error falls from 0.0096 to 0.0051 with
   it), and it stands for what the byte count leaves out: memory-bound kernels read as well as write,
   and run below the HBM's peak (the data-parallel family's cost model has had one all along, 0.8 for
   its compressors). Fitted, it is about 0.4. The NIC utilization is not
   fitted: it is held at 0.92 (:data:`~sweep.analysis.llm_fit.NIC_UTILIZATION`), the share of the
   NICs' line rate NCCL's collectives reach as measured (NVIDIA/nccl-tests#290 and #119). It was fitted
   until 2026-12-02, and this was changed after held-out errors had been seen, for two reasons that
   do not depend on them: the training rows barely tell utilizations apart (their mean squared log
   error is 0.0096 at the fitted 0.248 and 0.0106 at 0.92), and a quarter of the links' rate
   contradicts every measurement of NCCL on these fabrics. Fitted, it stood in for whatever the
   training rows lacked and slowed every network term of the held-out runs by 4x. The fit uses
   ``calibrate``'s fitter
   (:mod:`kernels.fit`: the best of a coarse grid's starting points, then Adam steps through the
   layout kernel, the lowest loss kept). The report says which efficiency is fitted, pooled or the
   default. The trained constants are shipped per stack preset and die
   (``sweep/data/llm_constants.json``, :mod:`sweep.analysis.llm_constants`), for ``--stack``. Three columns:
   the defaults (nothing fitted), fitted on the training set (:data:`DEFAULT_TRAIN`, by source, not by
   row), fitted on every dense row (in-sample, per stack and die the same way).
4. **Report** the absolute percentage error of every row, per source group; dense held-out rows
   (median, maximum) apart from the MoE rows (the recipes force balanced routing: best cases). Beside the
   errors, how far the sources agree with each other through the model (:mod:`sweep.analysis.llm_sources`,
   added 2026-12-03): rows of one setup in two sources, and the lowest held-out median any per-GPU constants
   reach, searched on the held-out rows themselves (a floor, never a prediction).

Where each step lives: the runs file and the rules of step 2, :mod:`sweep.io.runs`; step 1,
:mod:`sweep.analysis.llm_predict`; step 3, :mod:`sweep.analysis.llm_fit`; step 4,
:mod:`sweep.analysis.llm_report`. This module runs them: ``validate --llm`` (:func:`run`) and
``calibrate`` of a runs file (:func:`calibrate_runs`, :func:`calibrate_table`, :func:`calibration_json`).
"""

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from netsweep_jax.sweep.analysis.llm_fit import (
    DEFAULT_TRAIN,
    MODELS,
    NIC_UTILIZATION,
    UTILIZATION_DEFAULT,
    Fit,
    Validation,
    at_range_ends,
    fit,
    fit_warnings,
)
from netsweep_jax.sweep.analysis.llm_predict import predict
from netsweep_jax.sweep.analysis.llm_report import FILES, memory_line, pct, plan_flags, signed, write_report
from netsweep_jax.sweep.analysis.llm_sources import LOWEST_MEDIAN, lowest_median
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.values import parse_names
from netsweep_jax.sweep.io.paths import check_report_directory
from netsweep_jax.sweep.io.runs import DATASET, Run, read_runs, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY, die

__all__ = [
    "DEFAULT_TRAIN",
    "calibrate_runs",
    "calibrate_table",
    "calibration_json",
    "run",
    "run_validation",
    "summary_lines",
]


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
                f"{path}: no run is in the default training group(s) {', '.join(absent)} (without --train the "
                f"fit takes the shipped file's {', '.join(train.split(','))}, each); its groups: "
                f"{', '.join(groups)}. Name the groups to fit on with --train (a 'group' column sets them; "
                "without one every run is in 'your runs')"
            )
    chosen = training_groups(train, runs)
    # MoE runs are never fitted (all held out); a run with no measured value is predicted, never trained on
    in_train = [r.group in chosen and not r.moe and r.value is not None for r in runs]
    if all(in_train):
        raise InputError(f"{train!r}: every run is in it; nothing would be held out", param="train")
    say = progress or (lambda text: None)
    fits = {
        "untrained": Fit(
            "untrained",
            {g: EFFICIENCY for g in sorted({die(r.gpu) for r in runs})},
            UTILIZATION_DEFAULT,
            (),
            (),
        )
    }
    say(f"fitting on {sum(in_train)} runs of {train} ...")
    fits["trained"] = fit(
        runs, in_train, "trained", utilization=NIC_UTILIZATION, memory_efficiency=None, by_stack=True
    )
    say(f"fitting on every dense run ({sum(not r.moe and r.value is not None for r in runs)}) ...")
    fits["in-sample"] = fit(
        runs,
        [True] * len(runs),
        "in-sample",
        utilization=NIC_UTILIZATION,
        memory_efficiency=None,
        by_stack=True,
    )
    held_dense = [not t and not r.moe for r, t in zip(runs, in_train)]
    say("searching the per-GPU constants of the lowest held-out median ...")
    floor = lowest_median(runs, held_dense, NIC_UTILIZATION)
    if floor is not None:  # a floor the report gives beside the three models, never a prediction
        fits[LOWEST_MEDIAN] = floor
    outputs = {
        name: predict(runs, f.efficiency, f.utilization, f.memory_efficiency) for name, f in fits.items()
    }
    return Validation(runs, in_train, fits, outputs, str(path))


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
    check_report_directory(out_dir, FILES, force=force, reads={dataset: "runs file"})
    v = run_validation(dataset, train, progress)
    return write_report(out_dir, v, command, force), v


def summary_lines(v: Validation) -> list[str]:
    """What the command prints: each model's held-out dense error, then the trained fit's warnings, as ``sweep
    calibrate`` prints its own (a hunt: a training run's step given in ms pulled every constant to an end of its
    range, and only the report said so)."""
    held = [not t and not r.moe for r, t in zip(v.runs, v.train)]
    moe = [not t and r.moe for r, t in zip(v.runs, v.train)]
    lines = []
    for name in MODELS:
        n, med, mx = v.summary(name, held)
        m, mmed, mmx = v.summary(name, moe)
        lines.append(
            f"{name:>9}: held-out dense median {pct(med)}, worst {pct(mx)} ({n} runs)"
            + (f"; MoE median {pct(mmed)}, worst {pct(mmx)} ({m})" if m else "")
        )
    return lines + [f"warning (trained): {w}" for w in _warnings(v.fits["trained"], v, "trained")]


def training_groups(train: str, runs: Sequence[Run]) -> list[str]:
    """The groups ``train`` names (comma-separated), each refused unless it holds a dense run with a measured
    value: the fit uses dense runs only (validate --llm's and calibrate's one rule: a review found calibrate
    fitting a list of which one group was MoE alone), and by every name list's rules (:func:`parse_names`: a
    group's name in any case, each once, no empty item: a hunt found ``sc21-t1,`` and a group named twice taken
    in silence, ``SC21-T1`` refused)."""
    groups = sorted({r.group for r in runs})
    folded = {g.lower() for g in groups}
    for g in (item.strip() for item in train.split(",")):
        if g and g.lower() not in folded:
            raise InputError(f"{g!r}: no runs in that group; groups: {', '.join(groups)}", param="train")
    chosen = parse_names(train, "train", groups)
    for g in chosen:
        if not any(r.group == g and not r.moe and r.value is not None for r in runs):
            raise InputError(
                f"{g!r}: no dense run with a measured value in that group; the fit uses dense runs only "
                f"(mixture-of-experts runs are reported, never fitted)",
                param="train",
            )
    return chosen


def calibrate_runs(path: str | Path, train: str | None = None) -> tuple[Fit, Validation]:
    """Fit the constants on a user's runs (those of the groups ``train`` names, comma-separated as validate
    --llm's; default every run with a measured value) and predict every run, the blank ones included:
    :func:`calibrate_table` shows each with its error."""
    runs = read_runs(path)
    # a list, as validate --llm takes it (a hunt: "a,b" was refused as no such group, naming both)
    chosen = None if train is None else training_groups(train, runs)
    # MoE runs are reported, never fitted (as validate --llm's): shown as held out, not as training runs.
    in_train = [r.value is not None and not r.moe and (chosen is None or r.group in chosen) for r in runs]
    if not any(in_train):  # every group named holds one: none named
        raise InputError(f"{path}: no dense run with a measured value to fit on (MoE runs are never fitted)")
    # validate --llm's trained constants, on these runs: the efficiency per stack and die, the memory efficiency
    # fitted, the NIC utilization held at NCCL's measured share (fitted, it fell to a few percent of line rate).
    fitted = fit(runs, in_train, "fitted", utilization=NIC_UTILIZATION, memory_efficiency=None, by_stack=True)
    v = Validation(
        runs,
        in_train,
        {"fitted": fitted},
        {"fitted": predict(runs, fitted.efficiency, fitted.utilization, fitted.memory_efficiency)},
        str(path),
    )
    return fitted, v


def _shown(value: float) -> str:
    """A rate or time in the table: four significant figures, whole numbers from 10,000 up as they are (10475, not
    1.048e+04: a hunt)."""
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def calibrate_table(fitted: Fit, v: Validation) -> str:
    """The fitted constants, then every run: measured, predicted, error (training or held out), what it waits on.
    A run with no measured value is predicted with the error of the held-out runs of its kind, dense or MoE (or,
    with none, the training runs) beside it: :func:`_spreads`."""
    err = v.errors("fitted")
    spreads = _spreads(v, err)
    width = max(18, *(len(r.id) for r in v.runs))  # the longest id keeps the columns in line (a hunt)
    lines = [
        fitted.describe(),
        # how a plan or grid prices with them, as the report says it (a hunt: the table named no option)
        "to plan with them, give " + plan_flags(v, fitted).replace("`", ""),
        *(f"warning: {w}" for w in _warnings(fitted, v, "fitted")),
        f"{'id':<{width}} {'set':<9} {'measured':>10} {'predicted':>10} {'error':>7}  waits on",
    ]
    out = v.outputs["fitted"]
    for i, r in enumerate(v.runs):
        if r.value is None:
            spread = spreads[r.moe][1]
            shown = (
                f"+/-{np.median(spread):.0%} (median), {spread.max():.0%} (worst)" if spread.size else "n/a"
            )
            what = "predict"
        else:
            what, shown = v.role(i), f"{err[i]:+7.1%}"
        measured = "-" if r.value is None else _shown(r.value)
        lines.append(
            f"{r.id:<{width}} {what:<9} {measured:>10} {_shown(out['predicted'][i]):>10} {shown}  "
            f"{v.terms('fitted', i)}"
        )
    for moe, (which, spread) in spreads.items():
        if spread.size:  # of runs of this kind (_spreads): there are some
            lines.append(
                f"error of {which} {'MoE' if moe else 'dense'} runs ({spread.size}): median {np.median(spread):.1%}, "
                f"worst {spread.max():.1%}"
            )
    return "\n".join(lines)


def _spreads(v: Validation, err: np.ndarray) -> dict[bool, tuple[str, np.ndarray]]:
    """Per kind (MoE or not): which runs' absolute errors a blank run of that kind is shown with, and them: the
    held-out runs of its kind, else the training runs (dense; MoE runs are never trained on)."""
    out = {}
    for moe in (False, True):
        kind = [r.moe == moe and np.isfinite(e) for r, e in zip(v.runs, err)]
        held = np.array([k and not t for k, t in zip(kind, v.train)], bool)
        trained = np.array([k and t for k, t in zip(kind, v.train)], bool)
        out[moe] = ("held-out", np.abs(err[held])) if held.any() else ("training", np.abs(err[trained]))
    return out


def calibrate_runs_file(
    path: str | Path, train: str | None, out: str | Path | None, force: bool, command: str
) -> tuple[Fit, Validation, dict[str, object]]:
    """``sweep calibrate RUNS`` and ``sweep.calibrate(RUNS)``: ``out`` checked first (a new .json unless
    ``force``), the fit (:func:`calibrate_runs`), and its document (:func:`calibration_json` after the provenance
    of ``command``) written to ``out`` where given; returns (the fit, its validation, the document)."""
    import json

    from netsweep_jax.sweep.io.paths import check_new_file, write_atomically
    from netsweep_jax.sweep.io.provenance import provenance

    if out is not None:
        check_new_file(Path(out), force=force, suffixes=(".json",), reads={path: "runs file"})
    fitted, v = calibrate_runs(path, train)
    # the version, command, time and device, as calibrate's other JSON
    document = {**provenance(command), **calibration_json(fitted, v)}
    if out is not None:
        text = json.dumps(document, indent=1, allow_nan=False)
        write_atomically(Path(out), lambda p: p.write_text(text + "\n"), overwrite=force)
    return fitted, v, document


def _warnings(fitted: Fit, v: Validation, model: str) -> list[str]:
    """The warnings of ``fitted`` (``v``'s model ``model``), and the runs that do not fit the memory model: a run
    that ran must fit, and one that does not is priced all the same, and said (validate's report says it; the JSON
    had left it out, a hunt)."""
    unfit = (v.outputs[model]["fits"] != 1).any()
    warned = fit_warnings(fitted)
    # how far, by the log of the ratio: a value 1000x too large is -99.9%, no further than -100% (a review: the
    # runs it pulled off the fit, at +208%, were named in its place); a value priced at 0 of itself (1e30 s a
    # step) is the furthest of all, not left out with a warning of NumPy's (a hunt)
    errors = v.errors(model)
    with np.errstate(divide="ignore"):
        ratio = np.log(np.abs(1.0 + errors))
    trained = [i for i, t in enumerate(v.train) if t and not np.isnan(ratio[i])]
    if at_range_ends(fitted) and trained:
        # which runs pull it there (a hunt: a step in ms, a rate in PFLOP/s, fitted with no row named)
        worst = sorted(trained, key=lambda i: -abs(ratio[i]))[:3]
        said = ", ".join(f"{v.runs[i].id} ({signed(errors[i])})" for i in worst)
        # another unit only where one is off by a factor of 2 or more (not a run 6% off)
        unit = " (a value in another unit?)" if abs(ratio[worst[0]]) >= np.log(2.0) else ""
        warned.append(f"the training runs furthest from the fit: {said}{unit}")
    return [*warned, *([memory_line(v, model).removeprefix("Memory: ")] if unfit else [])]


def calibration_json(fitted: Fit, v: Validation) -> dict[str, object]:
    """The fit and every run's prediction, as JSON-ready values (no NaN: null)."""
    err = v.errors("fitted")
    out = v.outputs["fitted"]

    def number(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    return {
        "constants": {
            "efficiency": fitted.efficiency,
            "utilization": fitted.utilization,
            "memory_efficiency": fitted.memory_efficiency,
        },
        "fitted": list(fitted.fitted),
        "warnings": _warnings(fitted, v, "fitted"),
        "trained_on": list(fitted.rows),
        "runs": [
            {
                "id": r.id,
                "set": v.role(i),
                "metric": r.metric,
                "measured": r.value,
                "predicted": number(out["predicted"][i]),
                "error": number(err[i]),
                "iteration_time_s": number(out["iteration_time"][i]),
                "fits_memory": bool(out["fits"][i] == 1),
                "memory_free_gb": number(out["memory_free_gb"][i]),
                "assumed": settings(r)[1],
            }
            for i, r in enumerate(v.runs)
        ],
    }
