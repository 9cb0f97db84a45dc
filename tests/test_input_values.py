"""#42, input values: an empty value is refused by name everywhere (never 0 or a default), one notation for
every number in every place, a runs file's unknown column and a launch file's unreadable value refused, a
blank measured value predicted, MoE settings on a dense model refused, the API's values taken as the CLI's.
Each refusal is one line naming the value and the rule, exit code 2, nothing written, and comes on the host
before any kernel is compiled (the blank-value test reads a runs file, which compiles the rows block other
tests share)."""

import collections
import csv
import dataclasses
import re
import sys

import numpy as np
import pytest
import typer

import netsweep_jax.sweep as sweep
from helpers import invoke
from netsweep_jax.sweep.analysis.llm_fit import MODELS, Fit, Validation
from netsweep_jax.sweep.analysis.llm_report import findings, predictions_csv, report
from netsweep_jax.sweep.cli import entry
from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core import values
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.core.schema import cli_message
from netsweep_jax.sweep.core.values import number, parse_values
from netsweep_jax.sweep.engine.layout_options import make_layout_grid
from netsweep_jax.sweep.io import runs as runs_file
from netsweep_jax.sweep.io.launch import read_launch
from netsweep_jax.sweep.io.runs import DATASET, read_runs

LLAMA = dict(gpus=8, global_batch=8)


def run_cli(monkeypatch, capsys, *args):
    """``sweep ARGS`` as the console script runs it (usage errors included): (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["sweep", *map(str, args)])
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # restored after: the script wraps it
    code = entry._run()
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_refusal(code, err, *named):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and all(n in lines[0] for n in named), err
    return lines[0]


# -- 1. an empty value: refused by name, for every option of these commands that takes a value -------------

BASE = {
    "grid": ["--model", "resnet50", "--bw", "10", "--nodes", "2"],
    "plan": ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"],
    "need": ["--model", "resnet50", "--target", "0.9", "--solve", "ratio", "--bw", "10"],
    "compare": ["--model", "resnet50", "--bw", "10"],
    "calibrate": [],  # the measurements file, made by the test
}
# --distributed's own options are checked with --distributed (tests/test_distributed.py); --profile takes
# paths (a profile file's rules); need's --solve axis refuses any value (need's own rule).
SKIPPED = {"coordinator", "num_processes", "process_id", "stitch_timeout", "profile"}


def valued_options(command):
    """Every option of ``command`` that takes a value other than a path: (its longest flag, its name)."""
    click_command = typer.main.get_command(app).commands[command]
    for p in click_command.params:
        if p.param_type_name == "option" and not p.is_flag and p.bare_type() not in ("Path", "bool"):
            if p.name not in SKIPPED and p.name != "out":
                yield max(p.opts, key=len), p


@pytest.mark.parametrize("command", list(BASE))
def test_an_empty_value_is_refused_by_name_for_every_option(command, tmp_path, monkeypatch, capsys):
    measurements = tmp_path / "m.csv"
    measurements.write_text(
        "framework,model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        "x,resnet50,1,8,10,,0.9\ny,resnet50,2,8,10,0.2,0.8\nx,resnet50,4,8,10,0.2,0.7\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    checked = 0
    for flag, p in valued_options(command):
        if command == "need" and p.name == "ratio":
            continue
        args = list(BASE[command]) or [measurements]
        for o in p.opts:  # the option itself, given empty, in place of the base's value
            if o in args:
                del args[args.index(o) : args.index(o) + 2]
        if command == "plan" and p.name == "nodes":  # --nodes is the GPU count's other spelling
            del args[args.index("--gpus") : args.index("--gpus") + 2]
        target = (
            out / f"{p.name}{'.json' if command == 'calibrate' else '.h5' if command != 'compare' else ''}"
        )
        code, _, err = run_cli(monkeypatch, capsys, command, *args, flag, "", "--out", target)
        line = one_line_refusal(code, err)
        assert any(o in line for o in p.opts), (flag, line)
        assert list(out.iterdir()) == [], flag
        checked += 1
    assert (
        checked >= {"grid": 61, "plan": 46, "need": 26, "compare": 14, "calibrate": 16}[command]
    )  # all found


@pytest.mark.parametrize(
    "args, named",
    [
        (["--gpus", ""], "--gpus ''"),  # was tp8xpp8xcp4xdp0 with an infinite MFU
        (["--gpus", "8", "--efficiency", ""], "--efficiency ''"),  # was an infinite step
        (["--gpus", "8", "--usable-memory", ""], "--usable-memory ''"),  # was every layout unfit
        (["--gpus", "8", "--bw", ""], "--bw ''"),  # was the GPU's default
        (["--gpus", "8", "--iterations-factor", ""], "--iterations-factor"),
    ],
)
def test_plan_refuses_the_issues_empty_values(tmp_path, monkeypatch, capsys, args, named):
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "plan",
        "--model",
        "llama3-8b",
        "--global-batch",
        "8",
        *args,
        "--out",
        tmp_path / "p.h5",
    )
    one_line_refusal(code, err, named)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["efficiency", "gpus", "usable_memory", "bandwidth", "tp"])
@pytest.mark.parametrize("empty", [[], "", (), np.zeros(0)])
def test_the_api_refuses_an_empty_value_for_a_layout_option(name, empty):
    with pytest.raises(InputError, match=rf"^{name} .*give at least one value"):
        sweep.evaluate_layouts("llama3-8b", **{**LLAMA, name: empty})


@pytest.mark.parametrize("name", ["batch", "seq_len", "gpu", "precision"])
def test_an_empty_transformer_setting_is_refused_by_its_name(name):
    with pytest.raises(InputError, match=rf"^{name} (\[\]|''): give at least one value"):
        sweep.evaluate("gpt2", bandwidth=10, **{name: []})


def test_an_empty_iterations_factor_is_refused_in_the_api_too():
    with pytest.raises(InputError, match="^iterations_factor '': give COMPRESSOR=FACTOR"):
        sweep.evaluate("resnet50", bandwidth=10, compressor="fp16", iterations_factor="")


# -- 2. a runs file's unknown column ------------------------------------------------------------------------


def _runs(tmp_path, edit=lambda rows: rows, rename=None):
    lines = [line for line in DATASET.read_text().splitlines() if not line.startswith("#")]
    rows = edit(list(csv.DictReader(lines)))
    header = [rename.get(c, c) if rename else c for c in rows[0]]
    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows([list(r.values()) for r in rows])
    return path


@pytest.mark.parametrize(
    "column, meant", [("recompute", "recompte"), ("zero", "zreo"), ("sequence_parallel", "sequence_paralel")]
)
def test_a_misspelt_runs_column_is_refused_naming_the_one_meant(tmp_path, column, meant):
    path = _runs(tmp_path, rename={column: meant})
    with pytest.raises(InputError, match=rf"runs.csv:\d+: unknown column '{meant}'; did you mean {column}\?"):
        read_runs(path)
    r = invoke("calibrate", path, "--out", tmp_path / "fit.json")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and meant in r.output
    assert not (tmp_path / "fit.json").exists()


def test_the_shipped_runs_files_columns_are_all_known_and_each_is_once(tmp_path):
    header = next(csv.reader(line for line in DATASET.read_text().splitlines() if not line.startswith("#")))
    assert set(header) <= set(runs_file.COLUMNS)
    path = _runs(tmp_path, rename={"notes": "tp"})
    with pytest.raises(InputError, match="column 'tp' appears twice"):
        read_runs(path)


def test_an_arch_column_states_any_shape_as_arch_does(tmp_path):
    # A hunt: a Llama or a Mixtral could be stated by a preset alone; the shape columns read as a GPT's.
    arch = "layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,mlp=swiglu,seq=8192,vocab=128256"
    shape = ("preset", "layers", "hidden", "heads", "seq_len", "vocab")

    def as_arch(rows):
        llama = [{**r, "arch": ""} for r in rows if r["id"] == "MLM-LLAMA-01"]
        return llama + [{**llama[0], "id": "mine", "arch": arch, **dict.fromkeys(shape, "")}]

    preset, stated = read_runs(_runs(tmp_path, as_arch))
    assert dataclasses.replace(stated.llm, source=preset.llm.source) == preset.llm  # the same model
    assert stated.model == "llama3-8b"  # a preset's shape is the preset, whose name the FLOP count reads
    path = _runs(
        tmp_path, lambda rows: [{**r, "layers": "32"} if r["id"] == "mine" else r for r in as_arch(rows)]
    )
    with pytest.raises(
        InputError, match=r"\(row mine\): arch and layers both given: arch states the whole shape"
    ):
        read_runs(path)
    path = _runs(
        tmp_path, lambda rows: [{**r, "arch": "layers=32"} if r["id"] == "mine" else r for r in as_arch(rows)]
    )
    with pytest.raises(InputError, match=r"\(row mine\): arch 'layers=32': "):
        read_runs(path)


def test_a_mixture_of_experts_row_without_ep_says_its_one_expert_group(tmp_path):
    # A hunt: a DeepSeek-V3 row without ep was priced at EP 1, said nowhere.
    runs = read_runs(_runs(tmp_path, lambda rows: [{**r, "ep": ""} for r in rows if r["id"] == "MB-H100-04"]))
    assert runs[0].moe and runs[0].ep == 1 and "ep 1" in runs[0].unstated
    dense = read_runs(_runs(tmp_path, lambda rows: [r for r in rows if r["id"] == "MLM-LLAMA-01"]))
    assert "ep 1" not in dense[0].unstated


# -- 3. a blank measured value is predicted, never a crash ----------------------------------------------------


def test_a_blank_value_is_predicted_and_reported_without_an_error(tmp_path):
    blank = {"SC21-T2-01", "MB-H100-02", "SC21-T1-01"}  # a finding's row, a repeated setup's, a training row
    keep = blank | {"SC21-T2-03", "MLM-LLAMA-02", "SC21-T1-02", "SC21-T1-03"}
    path = _runs(
        tmp_path,
        lambda rows: [{**r, "value": ""} if r["id"] in blank else r for r in rows if r["id"] in keep],
    )
    runs = read_runs(path)
    n = len(runs)
    train = [r.group == "sc21-t1" for r in runs]
    constants = Fit("x", {"a100": 0.6, "h100": 0.6}, 0.92, (), ())
    outputs = {name: collections.defaultdict(lambda: np.ones(n)) for name in MODELS}
    for out in outputs.values():
        out["predicted"] = np.linspace(100.0, 200.0, n)
    v = Validation(runs, train, {name: constants for name in MODELS}, outputs, str(path))
    # The findings compare measured values: a pair with a blank row is skipped (it crashed with a TypeError).
    assert not any("ZeRO-3 collapse" in line or "repeat themselves" in line for line in findings(v))
    text = report(v)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    for rid in blank:
        assert f"| {rid} | predict |" in rows[rid] and " - | " in rows[rid] and "nan" not in rows[rid], rows[
            rid
        ]
    table = list(csv.DictReader(predictions_csv(v).splitlines()))
    assert {r["id"] for r in table if r["set"] == "predict"} == blank
    assert {r["id"] for r in table if r["set"] == "train"} == {"SC21-T1-02", "SC21-T1-03"}


# -- 4. MoE settings on a dense model; a launch file's value that is not a number; an empty launch file --------


@pytest.mark.parametrize(
    "option, name, value",
    [
        ("--moe-dispatch-fp8", "dispatch_fp8", "1"),
        ("--moe-dispatcher", "moe_dispatcher", "flex"),
        ("--moe-expert-capacity-factor", "capacity_factor", "1.5"),
        ("--imbalance", "imbalance", "2"),
        ("--moe-pad-expert-input-to-capacity", "pad_to_capacity", "0"),
    ],
)
def test_a_moe_setting_on_a_dense_model_is_refused(tmp_path, option, name, value):
    with pytest.raises(
        InputError, match=rf"^{name} {value}: a mixture-of-experts setting; llama3-8b is a dense"
    ):
        make_layout_grid("llama3-8b", gpus="8", global_batch="8", **{name: value})
    r = invoke(
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        option,
        value,
        "--out",
        tmp_path / "p.h5",
    )
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        f"error: {option} {value}: a mixture-of-experts setting; llama3-8b is a dense model"
    ]
    assert list(tmp_path.iterdir()) == []
    # a MoE model takes it
    make_layout_grid("qwen3-30b-a3b", gpus="8", global_batch="8", ep="8", **{name: value})


def test_expert_parallelism_on_a_dense_model_is_refused_before_the_search():
    # Was "no feasible layout: ... gpus not divisible by tp x pp x cp": every layout broke ep > 1 on a dense model.
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "16", "--global-batch", "32", "--ep", "2,4")
    assert r.exit_code == 2 and r.output.strip() == (
        "error: --ep 2,4: expert parallelism splits a mixture-of-experts model's experts; llama3-8b is a dense "
        "model (its --ep is 1)"
    )
    make_layout_grid("llama3-8b", gpus="16", global_batch="32", ep="1,2")  # with ep 1 a layout can exist


def test_expert_tp_and_moe_recomputation_on_a_dense_model_are_refused():
    # Were accepted: --expert-tp 2 wrote a cube of one masked cell, --recompute moe ranked a layout that
    # recomputes no layer beside the same one without it (a hunt).
    r = invoke("grid", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--expert-tp", "2")
    assert r.exit_code == 2 and r.output.strip() == (
        "error: --expert-tp 2: expert tensor parallelism splits a mixture-of-experts model's experts; llama3-8b "
        "is a dense model (its --expert-tp is 1)"
    )
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--recompute", "moe,none"
    )
    assert r.exit_code == 2 and r.output.strip() == (
        "error: --recompute moe: recomputes a mixture-of-experts layer (moe, moe_act); llama3-8b is a dense model"
    )
    with pytest.raises(InputError, match=r"^recompute core_attn\+moe_act: recomputes a mixture-of-experts"):
        make_layout_grid("llama3-8b", gpus="8", global_batch="8", recompute="core_attn+moe_act")
    make_layout_grid("qwen3-30b-a3b", gpus="8", global_batch="8", recompute="moe", expert_tp="1,2")
    # and the overlap switch that hides the expert all-to-all (a hunt: the same step with it and without)
    with pytest.raises(
        InputError, match=r"^overlap grad_reduce\+moe_a2a: moe_a2a overlaps a mixture-of-experts"
    ):
        make_layout_grid("llama3-8b", gpus="8", global_batch="8", overlap="grad_reduce+moe_a2a")
    make_layout_grid("qwen3-30b-a3b", gpus="8", global_batch="8", overlap="grad_reduce+moe_a2a")
    # more layers offloaded than the model has: clamped in silence (a hunt), as a runs file's row is refused;
    # Megatron-Core takes fewer than the model's (32 too: a later hunt)
    for many in ("8,100", "32"):
        with pytest.raises(
            InputError, match=r"^offload_layers \d+: must be fewer than llama3-8b's 32 layers"
        ):
            make_layout_grid("llama3-8b", gpus="8", global_batch="8", offload_layers=many)
    make_layout_grid("llama3-8b", gpus="8", global_batch="8", offload_layers="31")
    # and where no layout could offload (status rule 13): refused naming the options, not said as the rule most
    # layouts of a plan broke (a review)
    for clash in (dict(recompute="full"), dict(pp="2,4")):
        with pytest.raises(
            InputError, match=r"^offload_layers 4: activations are offloaded on one pipeline stage"
        ):
            make_layout_grid("llama3-8b", gpus="8", global_batch="8", offload_layers="4", **clash)
    make_layout_grid("llama3-8b", gpus="8", global_batch="8", offload_layers="4", pp="1,2", recompute="none")


def test_a_recompute_module_the_model_lacks_is_refused():
    # up_proj (Megatron-Core's mla_up_proj) on a model without multi-head latent attention had been priced
    # (Megatron-Core refuses it), and mlp where every layer is a mixture of experts changed nothing (a hunt).
    r = invoke("grid", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--recompute", "up_proj")
    assert r.exit_code == 2 and r.output.strip() == (
        "error: --recompute up_proj: recomputes multi-head latent attention's up-projection (up_proj); "
        "llama3-8b has none"
    )
    with pytest.raises(
        InputError, match=r"^recompute mlp: recomputes a dense layer's MLP \(mlp\); qwen3-30b"
    ):
        make_layout_grid("qwen3-30b-a3b", gpus="8", global_batch="8", ep="8", recompute="none,mlp")
    # DeepSeek-V3's shape has both (MLA, three dense layers first); one model of a list that has it is enough
    make_layout_grid("deepseek-v3-like", gpus="64", global_batch="64", ep="8", recompute="up_proj+mlp")
    make_layout_grid("qwen3-30b-a3b,llama3-8b", gpus="8", global_batch="8", recompute="mlp")


@pytest.mark.parametrize("value", ["eight", "٨", "8.0", "$TP", "1_0"])
def test_a_launch_value_that_is_not_a_whole_number_is_refused_naming_the_flag_and_line(tmp_path, value):
    path = tmp_path / "train.sh"
    path.write_text(
        f"#!/bin/bash\ntorchrun pretrain_gpt.py \\\n  --tensor-model-parallel-size {value} \\\n  --bf16\n"
    )
    with pytest.raises(
        InputError, match=r"train.sh:3: --tensor-model-parallel-size '.*': give one whole number"
    ):
        read_launch(path)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "torchrun train.py --lr 3e-4\n"])
def test_a_launch_file_that_gives_nothing_is_refused(tmp_path, text):
    path = tmp_path / "train.sh"
    path.write_text(text)
    with pytest.raises(InputError, match=r"train.sh: no (command in it|flag netsweep reads)"):
        read_launch(path)
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "8", "--launch", path, "--out", tmp_path / "p.h5")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and not (tmp_path / "p.h5").exists()


# -- 5. evaluate keeps evaluate_layouts' size rule --------------------------------------------------------------


def test_evaluate_refuses_a_grid_too_large_to_keep_as_evaluate_layouts_does():
    # In Python the parameters are named as the call names them; on the command line the same error names the
    # options (plan's settings rule, tests/test_layout_sweeps.py, says "--bw 1,000 x --util 1,000").
    with pytest.raises(
        InputError, match=r"10,000,000,000 configurations \(bandwidth 10,000 x ratio 10,000 x nodes"
    ) as e:
        sweep.evaluate("resnet50", bandwidth="1..1000@10000", ratio="1..1000@10000", nodes="1..100")
    assert cli_message(e.value).startswith(
        "10,000,000,000 configurations (--bw 10,000 x --ratio 10,000 x --nodes"
    )
    with pytest.raises(InputError, match=r"too many to keep in memory.*\(sweep grid\)"):
        sweep.evaluate_layouts(
            "llama3-8b", **{**LLAMA, "bandwidth": "1..1000@10000", "utilization": "0.001..1@10000"}
        )


# -- 6. one notation for every number, in every place ------------------------------------------------------------

NOT_NUMBERS = ["٨", "４００", "1_000", "²", "inf", "nan", "-inf", "0x10", "1e", "", " ", "8.0.0", "１"]


@pytest.mark.parametrize(
    "text, named",
    [
        ("1e400", "1e400: bandwidth must be"),  # said as inf (a hunt)
        ("10,2e7", "2e7: bandwidth must be"),
        ("1..1e9@5log", "5623413.2519 (of 1..1e9@5log): bandwidth must be"),
    ],
)
def test_a_value_out_of_its_range_is_named_as_typed(text, named):
    from netsweep_jax.sweep.core.axes import NUMERIC_AXES

    with pytest.raises(InputError) as e:
        parse_values(text, NUMERIC_AXES["bandwidth"])
    assert str(e.value) == f"bandwidth {named} a number from 0.001 to 1000000", str(e.value)


@pytest.mark.parametrize("text", ["400", "-1.5e3", ".5", "5.", "+2", " 8 ", "1E-3"])
def test_plain_decimal_notation_is_a_number(text):
    assert values.decimal(text) == float(text)


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_anything_else_is_not_a_number_anywhere(text):
    with pytest.raises(ValueError, match="is not a number"):
        values.decimal(text)
    with pytest.raises(InputError, match=r"is not a number \(digits 0-9"):
        number(text, "runs.csv:2 (row x): value")
    with pytest.raises(InputError, match="tp|give at least one value"):
        parse_values(text, AXES["tp"])


@pytest.mark.parametrize(
    "command, args, named",
    [
        ("plan", ["--tp", "٨"], "--tp '٨'"),
        ("plan", ["--bw", "４００"], "--bw '４００'"),
        ("plan", ["--bw", "1_000"], "--bw '1_000'"),
        ("plan", ["--keep", "٣"], "--keep"),
        ("plan", ["--keep", "1_0"], "--keep"),
        ("plan", ["--schedule", "interleaved:٢"], "--schedule"),
        ("plan", ["--tp", "²"], "--tp"),
        ("grid", ["--bw", "1_000"], "--bw '1_000'"),
        ("grid", ["--bw", "10", "--intra-bw", "1_000"], "'--intra-bw': '1_000' is not a number"),
        ("grid", ["--bw", "10", "--intra-bw", "inf"], "'--intra-bw': 'inf' is not a number"),
        ("grid", ["--bw", "10", "--block-configs", "٤"], "'--block-configs': '٤' is not a number"),
        ("grid", ["--bw", "10", "--compressor", "topk:٠.٥"], "--compressor"),
        (
            "grid",
            ["--bw", "10", "--compressor", "fp16", "--iterations-factor", "fp16=1_0"],
            "--iterations-factor",
        ),
        ("need", ["--target", "0.9", "--solve", "ratio", "--bw", "١٠"], "--bw"),
        ("need", ["--target", "0_9", "--solve", "ratio", "--bw", "10"], "--target '0_9' is not a number"),
        ("need", ["--target", "nan", "--solve", "ratio", "--bw", "10"], "--target 'nan' is not a number"),
        # a cube of two equal targets, which select then failed on with a traceback
        ("need", ["--target", "0.5,0.50", "--solve", "ratio", "--bw", "10"], "value 0.5 appears twice"),
    ],
)
def test_the_cli_refuses_every_other_notation_by_name(tmp_path, monkeypatch, capsys, command, args, named):
    model = (
        ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"]
        if command == "plan"
        else ["--model", "resnet50"]
    )
    code, _, err = run_cli(monkeypatch, capsys, command, *model, *args, "--out", tmp_path / "o.h5")
    one_line_refusal(code, err, named)
    assert list(tmp_path.iterdir()) == []


def test_a_runs_file_and_a_measurements_file_take_the_same_notation(tmp_path):
    path = _runs(tmp_path, lambda rows: [{**rows[0], "value": "١٣٧"}, *rows[1:]])
    with pytest.raises(InputError, match=r"runs.csv:2 \(row SC21-T1-01\): value '١٣٧' is not a number"):
        read_runs(path)
    path = _runs(tmp_path, lambda rows: [{**rows[0], "gpus": "٣٢"}, *rows[1:]])
    with pytest.raises(InputError, match=r"runs.csv:2 \(row SC21-T1-01\): gpus '٣٢' is not a number"):
        read_runs(path)
    measurements = tmp_path / "m.csv"
    measurements.write_text(
        "framework,model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        "x,resnet50,1,8,10,,0.9\ny,resnet50,2,8,1_0,0.2,0.8\nx,resnet50,4,8,10,0.2,0.7\n"
    )
    r = invoke("calibrate", measurements)
    assert r.exit_code == 2 and "m.csv:3: bandwidth '1_0' is not a number" in r.output, r.output


def test_the_other_files_and_options_take_the_same_notation(tmp_path, monkeypatch, capsys):
    from netsweep_jax.sweep.model.profile import load_profile
    from netsweep_jax.sweep.model.vector_add import read_table

    (tmp_path / "table.csv").write_text("0,0\n1_000,1e-3\n")
    with pytest.raises(InputError, match="table.csv:2: '1_000,1e-3' is not two numbers"):
        read_table(tmp_path / "table.csv")
    (tmp_path / "p.csv").write_text("name,grad_bytes,backward_us\na,٤٠٠٠,100\n")
    with pytest.raises(InputError, match="p.csv:2: grad_bytes '٤٠٠٠' is not a number"):
        load_profile(tmp_path / "p.csv", t1=1.0)
    measurements = tmp_path / "m.csv"
    measurements.write_text(
        "framework,model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        "x,resnet50,1,8,10,,0.9\ny,resnet50,2,8,10,0.2,0.8\nx,resnet50,4,8,10,0.2,0.7\n"
    )
    r = invoke("calibrate", measurements, "--train", "nodes <= 0x2")
    assert r.exit_code == 2 and "--train 'nodes <= 0x2': '0x2' is not a number" in r.output, r.output
    r = invoke("calibrate", measurements, "--fit", "latency", "--bounds", "latency=0:1_0")
    assert r.exit_code == 2 and "--bounds 'latency=0:1_0': expected NAME=LOW:HIGH" in r.output, r.output
    code, _, err = run_cli(
        monkeypatch, capsys, "profile", "measure", "x.py:f", "--out", tmp_path / "x.json", "--batch", "٢"
    )
    one_line_refusal(code, err, "'--batch': '٢' is not a number")


@pytest.mark.parametrize("text", ["１０", "1_0", "١٠"])
def test_a_plots_selection_takes_the_same_notation(text):
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import parse_sel

    ds = xr.Dataset({"x": ("bandwidth", [1.0])}, coords={"bandwidth": [10.0]})
    assert parse_sel(["bandwidth=10"], ds) == {"bandwidth": 10.0}
    with pytest.raises(InputError, match=f"^sel 'bandwidth={text}': {text} is not a number$"):
        parse_sel([f"bandwidth={text}"], ds)


def test_a_plots_selection_not_in_the_cube_lists_its_values_as_numbers_and_how_many():
    # #42's audit: "100 is not a nodes in the cube (1.0, ..., 12.0)": 12 of 64 values shown as floats, no count.
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import parse_sel

    ds = xr.Dataset({"x": ("nodes", np.arange(1.0, 65.0))}, coords={"nodes": np.arange(1.0, 65.0)})
    with pytest.raises(InputError) as e:
        parse_sel(["nodes=100"], ds)
    assert str(e.value).endswith(
        "'nodes=100': 100 is not a value of nodes in the cube (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, ... (64 values))"
    )


@pytest.mark.parametrize("value", ["٨", "４００", "1_000", ["٨"], ["inf"]])
def test_the_apis_strings_take_the_same_notation(value):
    with pytest.raises(InputError, match="^bandwidth .*is not a number"):
        sweep.evaluate("resnet50", bandwidth=value)
    with pytest.raises(InputError, match="^bandwidth .*is not a number"):
        sweep.evaluate_layouts("llama3-8b", **LLAMA, bandwidth=value)


# -- 7. the API's layout values: nesting refused, NumPy's scalars taken -----------------------------------------


@pytest.mark.parametrize(
    "value", [[[1, 2], [4]], [[1, 2], [4, 8]], np.ones((2, 2)), [1, [2]], [np.array([1, 2])]]
)
def test_the_api_refuses_nested_layout_values_as_the_data_parallel_axes_do(value):
    with pytest.raises(InputError, match=r"^tp .*expected a flat sequence of numbers"):
        sweep.evaluate_layouts("llama3-8b", **LLAMA, tp=value)
    with pytest.raises(InputError, match=r"^tp .*expected a flat sequence of numbers"):
        sweep.plan("llama3-8b", **LLAMA, tp=value)
    with pytest.raises(InputError, match=r"^nodes .*expected a flat sequence of numbers"):
        sweep.evaluate("resnet50", bandwidth=10, nodes=value)


def test_the_api_takes_numpys_integers_and_0d_arrays_as_numbers():
    # keep=np.int64(2) passes the keep rule: the refusal is the out-of-range efficiency's, checked after it
    with pytest.raises(InputError, match="^efficiency 2: efficiency must be a number"):
        sweep.plan("llama3-8b", **LLAMA, keep=np.int64(2), efficiency=2)
    with pytest.raises(InputError, match="^efficiency 2: efficiency must be a number"):
        sweep.plan("llama3-8b", **LLAMA, keep=np.array(2), efficiency=2)
    with pytest.raises(InputError, match="^axis 'nope'"):  # the 0-d target is taken; the axis is refused
        sweep.solve("resnet50", target=np.array(0.9), axis="nope", bandwidth=10)
    with pytest.raises(InputError, match="^keep 2.5"):
        sweep.plan("llama3-8b", **LLAMA, keep=np.float64(2.5))
    # 0-d arrays and NumPy's integers are taken as the layout's values (refused before, "tp 8: give a
    # number"): the refusal is the efficiency's, checked after them (no kernel compiled)
    zero_d = dict(gpus=np.array(8), global_batch=np.int64(8), tp=np.array(8), micro_batch=np.array([1]))
    with pytest.raises(InputError, match="^efficiency 2: efficiency must be a number"):
        sweep.evaluate_layouts("llama3-8b", **zero_d, efficiency=np.array(2))
    from netsweep_jax.sweep.large_models import _text  # the API's values as the CLI's text

    taken = {name: _text(name, value) for name, value in zero_d.items()}
    assert taken == {"gpus": "8", "global_batch": "8", "tp": "8", "micro_batch": "1"}


def test_workload_names_as_numpy_or_pandas_are_names_and_a_set_is_refused():
    # A hunt: gpu=np.array([...]), a pandas Series or a set reached the preset lookup ("unhashable type").
    import pandas as pd

    from netsweep_jax.sweep.engine.grid import make_grid

    models = ["gpt2-xl@h100-bf16-b8", "gpt2-xl@a100-bf16-b8"]
    for gpu in (np.array(["h100", "a100"]), pd.Series(["H100", "a100"]), ("h100", "a100")):
        assert [p.model for p in make_grid("gpt2-xl", gpu=gpu).profiles] == models
    assert make_grid("gpt2-xl", gpu=np.array("h100"), precision=np.array(["bf16"])).profiles[0].model == (
        "gpt2-xl@h100-bf16-b8"
    )
    with pytest.raises(
        InputError, match=r"^gpu \{'h100'\}: give the names as a comma list or a list, in order"
    ):
        make_grid("gpt2-xl", gpu={"h100"})
    with pytest.raises(InputError, match=r"^gpu 5: give a name, as text"):
        make_grid("gpt2-xl", gpu=[5])


def test_a_profile_of_numpy_numbers_writes_valid_json():
    # A hunt: to_json() kept a NumPy float32 and int64 as they were, which json.dumps refuses.
    import dataclasses
    import json

    profile = dataclasses.replace(
        sweep.builtin_profile("resnet50"), t1=np.float32(0.05), batch_size=np.int64(32)
    )
    written = json.loads(json.dumps(profile.to_json()))
    assert written["iteration_time_s"] == float(np.float32(0.05)) and written["batch_size"] == 32


def test_a_reduce_cost_table_may_start_with_its_header(tmp_path):
    # A hunt: the docs call it a bytes,seconds table, and its header was "not two numbers".
    from netsweep_jax.sweep.model.vector_add import read_table

    path = tmp_path / "rc.csv"
    path.write_text("bytes,seconds\n64,1e-6\n1024,2e-6\n")
    nbytes, seconds = read_table(path)
    assert list(nbytes) == [64, 1024] and list(seconds) == [1e-6, 2e-6]
    path.write_text("64,1e-6\nbytes,seconds\n")  # a header only as the first line
    with pytest.raises(InputError, match=r"rc.csv:2: 'bytes,seconds' is not two numbers"):
        read_table(path)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"format": "netsweep-profile-2"}, "format 'netsweep-profile-2'; this reads 'netsweep-profile-1'"),
        ({"iteration_time": 0.02}, "key 'iteration_time' is not read (did you mean 'iteration_time_s'?)"),
        ({"tensors": [{"grad_bytes": 4000, "backward_us": 10, "froward_us": 5}]},
         "tensors[0]: key 'froward_us' is not read (did you mean 'forward_us'?)"),
        # a required key misspelt: named (it had been said missing)
        ({"tensors": [{"grad_byte": 4000, "backward_us": 10}]},
         "tensors[0]: key 'grad_byte' is not read (did you mean 'grad_bytes'?)"),
        ({"tensors": [{"backward_us": 10}]}, "tensors[0] needs grad_bytes and backward_us"),
    ],
)  # fmt: skip
def test_a_json_profile_of_another_format_or_a_misspelt_key_is_refused(tmp_path, changes, message):
    # A hunt: each was read as this format or as absent, in silence.
    import json

    from netsweep_jax.sweep.model.profile import read_json

    document = {"model": "m", "iteration_time_s": 0.02, "tensors": [{"grad_bytes": 4000, "backward_us": 10}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**document, **changes}))
    with pytest.raises(InputError, match=re.escape(message)):
        read_json(path)
    path.write_text(json.dumps(sweep.builtin_profile("resnet50").to_json()))  # what the project writes, read
    assert read_json(path).model == "resnet50"


def test_the_flex_dispatcher_is_refused_where_megatron_core_refuses_it():
    # A hunt: with padding to capacity, and at tp x ep = 1, it had been priced (the second as alltoall), where
    # Megatron-Core's MoEFlexTokenDispatcher asserts against both.
    moe = dict(gpus="16", global_batch="64", moe_dispatcher="flex")
    with pytest.raises(
        InputError, match=r"^moe_dispatcher flex: .*does not pad to capacity \(leave out pad_to"
    ):
        make_layout_grid("qwen3-30b-a3b", ep="8", capacity_factor="1.5", pad_to_capacity="1", **moe)
    with pytest.raises(InputError, match=r"^moe_dispatcher flex: .*needs tp x ep above 1"):
        make_layout_grid("qwen3-30b-a3b", ep="1", tp="1", **moe)
    make_layout_grid("qwen3-30b-a3b", ep="1,8", tp="1", **moe)  # a sweep with tp x ep above 1 somewhere


@pytest.mark.parametrize("args", [(), ("profile",)])
def test_a_group_without_its_command_prints_its_help_as_help_asks(monkeypatch, capsys, args):
    # A hunt: `sweep` alone said "error: Usage: sweep ..." with the whole help between the error's word and its
    # hint, exit 2. Now its help, as --help prints it.
    code, out, err = run_cli(monkeypatch, capsys, *args)
    again = run_cli(monkeypatch, capsys, *args, "--help")
    assert (
        code == 0 and err == "" and out.startswith("Usage: ") and "[OPTIONS] COMMAND" in out.splitlines()[0]
    )
    assert out.strip() == again[1].strip() and again[0] == 0


def test_a_global_batch_float32_cannot_hold_exactly_is_refused():
    # A hunt: 16777217 sequences, rounded to 2^24 in float32, passed the rule "divisible by micro-batch x dp"
    # (x64 refused it), and plan's best layout at 33554434 was one Megatron would refuse, 16% faster.
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", str(2**24 + 1))
    assert r.exit_code == 2 and "--global-batch 16777217" in r.output and "to 16777216" in r.output, r.output
