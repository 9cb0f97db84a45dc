"""sweep plan/grid --launch: a Megatron-LM launch command's layout, as if given as options (#27)."""

import pytest

from helpers import invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.launch import read_launch
from netsweep_jax.sweep.io.reader import open_cube

SCRIPT = """#!/bin/bash
# Llama 3 70B as Megatron-Bridge's H100 recipe lays it out
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size=8 \\
    --num-virtual-stages-per-pipeline-rank 5 --sequence-parallel \\
    --micro-batch-size 1 --global-batch-size 128 \\
    --recompute-granularity selective --recompute-modules mla_up_proj mlp \\
    --use-distributed-optimizer --overlap-grad-reduce --tp-comm-overlap \\
    --fp8-format hybrid --bf16 --lr 3e-4 --train-iters $ITERS  # the rest is not layout
"""


def _settings(path, text) -> dict[str, str]:
    """The settings ``read_launch`` reads of ``text``, written to the file ``path`` first."""
    path.write_text(text)
    return read_launch(path).settings


def _refusal(path, text=None) -> str:
    """The one line ``read_launch`` refuses the file ``path`` with (``text`` written to it first)."""
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError) as e:
        read_launch(path)
    return str(e.value)


def test_a_launch_command_gives_its_layout(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    settings, unused, defaulted, _ = read_launch(path)
    assert defaulted == {"cp", "ep", "grad_bytes"}
    assert settings == {
        "tp": "4",
        "pp": "8",
        "virtual_stages": "5",
        "micro_batch": "1",
        "global_batch": "128",
        "cp": "1",  # left out: Megatron-LM's default
        "ep": "1",
        "recompute": "up_proj+mlp",
        "sequence_parallel": "1",
        "zero": "1",
        "overlap": "grad_reduce+tp_comm",
        "precision": "fp8",
        "grad_bytes": "4",  # left out: Megatron-LM's fp32 main_grad
    }
    assert unused == ["--nproc_per_node", "--lr", "--train-iters"]
    # --grad-reduce-in-bf16: bf16 gradients, as the command states them (a hunt: listed as not used)
    path.write_text("pretrain_gpt.py --bf16 --grad-reduce-in-bf16")
    settings, unused, defaulted, _ = read_launch(path)
    assert settings["grad_bytes"] == "2" and "grad_bytes" not in defaulted and unused == []
    # under fp16, fp16 gradients unless --accumulate-allreduce-grads-in-fp32 (Megatron-LM reads each flag in its
    # precision's branch: a review); no precision flag leaves the precision's own
    for text, grads in (("--fp16", "2"), ("--fp16 --accumulate-allreduce-grads-in-fp32", "4")):
        path.write_text(f"pretrain_gpt.py {text}")
        assert read_launch(path)[0]["grad_bytes"] == grads and read_launch(path)[1] == [], text
    path.write_text("pretrain_gpt.py --tensor-model-parallel-size 2")  # fp32: --precision replaces it
    assert read_launch(path)[0]["grad_bytes"] == "0" and "grad_bytes" in read_launch(path)[2]
    path.write_text("pretrain_gpt.py --bf16 --fp16")
    with pytest.raises(InputError, match="--bf16 and --fp16 both given"):
        read_launch(path)
    path.write_text(
        "pretrain_gpt.py --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
        "--tensor-model-parallel-size 2"
    )
    settings, unused, *_ = read_launch(path)
    assert settings["recompute"] == "full" and settings["tp"] == "2" and settings["overlap"] == "none"
    # #42: a shell variable is a value netsweep cannot read: refused, never Megatron-LM's default 1 instead
    path.write_text("pretrain_gpt.py --recompute-granularity full \\\n  --tensor-model-parallel-size $TP")
    with pytest.raises(InputError, match=r"train.sh:2: --tensor-model-parallel-size '\$TP': give one whole"):
        read_launch(path)
    path.write_text("pretrain_gpt.py --recompute-granularity selective")
    assert read_launch(path)[0]["recompute"] == "selective"  # Megatron-Core's default modules: core_attn
    path.write_text("pretrain_gpt.py --recompute-granularity block")
    with pytest.raises(InputError, match="must be full or selective"):
        read_launch(path)
    # The MoE token dispatcher, Megatron-Core's names; its allgather dispatcher is not modelled.
    path.write_text("pretrain_gpt.py --expert-model-parallel-size 8 --moe-token-dispatcher-type flex")
    assert read_launch(path)[0]["moe_dispatcher"] == "flex"
    path.write_text(
        "pretrain_gpt.py --expert-model-parallel-size 8 \\\n  --moe-token-dispatcher-type allgather"
    )
    with pytest.raises(
        InputError, match=r"train.sh:2: --moe-token-dispatcher-type 'allgather': netsweep models"
    ):
        read_launch(path)


def test_plan_from_a_launch_equals_the_same_options(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    base = ("plan", "--model", "llama3-70b", "--gpus", "64", "--keep", "1")
    # Llama 3 has no multi-head latent attention: its mla_up_proj is refused, as Megatron-Core refuses it
    refused = invoke(*base, "--launch", str(path), "--out", str(tmp_path / "a.h5"))
    assert (
        refused.exit_code == 2 and "up_proj+mlp: recomputes multi-head latent attention's" in refused.output
    )
    path.write_text(SCRIPT.replace("mla_up_proj", "layernorm"))
    launched = invoke(*base, "--launch", str(path), "--out", str(tmp_path / "a.h5"))
    assert launched.exit_code == 0, launched.output
    assert (
        f"from {path}: --tp 4, --pp 8" in launched.stderr and "not used: --nproc_per_node" in launched.stderr
    )
    options = ["--tp", "4", "--pp", "8", "--schedule", "interleaved:5", "--micro-batch", "1"]
    options += ["--global-batch", "128", "--cp", "1", "--ep", "1", "--recompute", "mlp+layernorm"]
    options += ["--sequence-parallel", "1", "--zero", "1", "--overlap", "grad_reduce+tp_comm"]
    options += ["--precision", "fp8"]
    given = invoke(*base, *options, "--out", str(tmp_path / "b.h5"))
    assert given.exit_code == 0, given.output
    a, b = open_cube(tmp_path / "a.h5"), open_cube(tmp_path / "b.h5")
    assert float(a.iteration_time.max()) == float(b.iteration_time.max())
    assert a.attrs["overlap"] == "grad_reduce+tp_comm"
    twice = invoke(*base, "--launch", str(path), "--tp", "2", "--out", str(tmp_path / "c.h5"))
    assert twice.exit_code == 2 and "--tp given twice: as an option and in" in twice.output
    missing = invoke(*base, "--launch", str(tmp_path / "none.sh"), "--out", str(tmp_path / "d.h5"))
    assert missing.exit_code == 2 and "launch command not found" in missing.output
    assert not (tmp_path / "c.h5").exists() and not (tmp_path / "d.h5").exists()


MEGATRON_EXAMPLE = """#!/bin/bash
# as Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh keeps its flags: bash arrays
GPUS_PER_NODE=8
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 16)
DATA_ARGS=(
    --data-path "corpus#1"  # a '#' in quotes is no comment
)
TRAINING_ARGS=( --micro-batch-size 1 --global-batch-size 1536 )
# a comment's trailing backslash continues nothing \\
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\
    ${MODEL_PARALLEL_ARGS[@]} ${DATA_ARGS[@]} ${TRAINING_ARGS[@]} --bf16
echo finished; date
"""


def test_megatrons_example_scripts_with_arrays_and_commands_after_are_read(tmp_path):
    # A hunt: Megatron-LM's own example script was refused ("--pipeline-model-parallel-size '16 ) DATA_ARGS=('"
    # blamed a shell variable), a command after the launch line joined the last flag's value, and a '#' in
    # quotes cut the line ("No closing quotation").
    path = tmp_path / "train.sh"
    path.write_text(MEGATRON_EXAMPLE)
    settings, unused, defaulted, _ = read_launch(path)
    assert {k: settings[k] for k in ("tp", "pp", "micro_batch", "global_batch", "precision")} == {
        "tp": "8", "pp": "16", "micro_batch": "1", "global_batch": "1536", "precision": "bf16",
    }  # fmt: skip
    assert unused == ["--nproc_per_node", "--data-path"] and "expert_tp" not in settings
    assert (
        _settings(path, "torchrun pretrain_gpt.py --global-batch-size 1536\necho finished\n")["global_batch"]
        == "1536"
    )
    assert (
        _settings(path, 'pretrain_gpt.py --tensor-model-parallel-size 2 --data-path "a\n  b" --bf16\n')["tp"]
        == "2"
    )  # a quote spanning lines
    path.write_text('pretrain_gpt.py --tensor-model-parallel-size 2 --data-path "a\n')
    with pytest.raises(InputError, match="a quote is never closed"):
        read_launch(path)


def test_a_moe_commands_expert_tp_and_what_an_option_replaces(tmp_path):
    # A hunt: --expert-tensor-parallel-size was "not used" (priced at expert TP 1: "does not fit", where 2 fits);
    # left out, Megatron-LM's expert TP is the TP size (megatron/training/arguments.py). And --zero, --overlap
    # or --recompute beside a file that says nothing of them was "given twice".
    from netsweep_jax.sweep.analysis.layout_jobs import take_launch

    path = tmp_path / "moe.sh"
    moe = "pretrain_gpt.py --tensor-model-parallel-size 2 --expert-model-parallel-size 8 --bf16"
    assert (
        _settings(path, f"{moe} --expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall")[
            "expert_tp"
        ]
        == "1"
    )
    path.write_text(f"{moe} --moe-token-dispatcher-type flex")
    settings, _, defaulted, _ = read_launch(path)
    assert settings["expert_tp"] == "2" and "expert_tp" in defaulted and "moe_dispatcher" not in defaulted
    said: list[str] = []
    given = {"zero": "3", "overlap": "none", "recompute": "full", "launch": path}
    taken = take_launch(dict(given), set(given) - {"launch"}, said.append)
    assert {"zero", "overlap", "recompute"}.isdisjoint(taken) and {"tp", "ep", "expert_tp"} <= set(taken)
    with pytest.raises(InputError, match="tp given twice"):  # what the command states, an option may not
        take_launch({"tp": "4", "launch": path}, {"tp"}, said.append)
    path.write_text(moe)  # no dispatcher: Megatron-LM's allgather, not modelled
    with pytest.raises(
        InputError, match="allgather, is not modelled; give --moe-dispatcher alltoall or flex"
    ):
        take_launch({"launch": path}, set(), said.append)
    settings = {"moe_dispatcher": "flex", "launch": path}
    assert "moe_dispatcher" not in take_launch(settings, {"moe_dispatcher"}, said.append)
    assert settings["moe_dispatcher"] == "flex"  # the option's, not the file's default


@pytest.mark.parametrize(
    "text, expected",
    [
        # review: a flag on the line of NAME=( (or NAME+=() was dropped: tp read as Megatron-LM's default 1
        ("ARGS=(--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16)", {"tp": "8", "pp": "16"}),
        ("ARGS+=(--tensor-model-parallel-size 2)\nARGS+=(--fp16)", {"tp": "2", "precision": "fp16"}),
        # redirections and operators glued to a value end it
        ("pretrain_gpt.py --tensor-model-parallel-size 8 2>&1 | tee log", {"tp": "8"}),
        ("pretrain_gpt.py --tensor-model-parallel-size 8 > log", {"tp": "8"}),
        ("pretrain_gpt.py --tensor-model-parallel-size 8; echo done", {"tp": "8"}),
        ("pretrain_gpt.py --data-path 'a;b' --tensor-model-parallel-size=4", {"tp": "4"}),
    ],
)
def test_shell_operators_end_a_flags_values(tmp_path, text, expected):
    path = tmp_path / "a.sh"
    settings = _settings(path, text)
    assert {k: settings[k] for k in expected} == expected


def test_a_dense_command_naming_an_expert_size_and_a_tp_option_replacing_the_default(tmp_path):
    # review: --expert-model-parallel-size 1 made a dense command a MoE one (its dispatcher refused, and the
    # --moe-dispatcher the message asked for refused as a MoE setting); a --tp option replacing the file's
    # default left expert TP at the file's 1, where Megatron-LM takes the TP size used; a comment naming a flag
    # was the line a refusal pointed at.
    from netsweep_jax.sweep.analysis.layout_jobs import take_launch

    path = tmp_path / "a.sh"
    path.write_text("pretrain_gpt.py --tensor-model-parallel-size 2 --expert-model-parallel-size 1 --bf16")
    settings, _, defaulted, _ = read_launch(path)
    assert "moe_dispatcher" not in settings and "expert_tp" not in settings
    path.write_text(
        "pretrain_gpt.py --num-experts 64 --expert-model-parallel-size 8 --moe-token-dispatcher-type flex --bf16"
    )
    given = {"tp": "4", "launch": path}
    taken = take_launch(given, {"tp"}, lambda _: None)
    assert given["expert_tp"] == "4" and "tp" not in taken
    with pytest.raises(InputError, match="which Megatron-LM sets to the TP size, one of a list here: give"):
        take_launch({"tp": "2,4", "launch": path}, {"tp"}, lambda _: None)
    path.write_text(
        "# --tensor-model-parallel-size is set below\n\npretrain_gpt.py --tensor-model-parallel-size $TP"
    )
    with pytest.raises(InputError, match=r"a.sh:3: --tensor-model-parallel-size"):
        read_launch(path)


def test_a_launch_commands_moe_capacity_padding_and_mtp_are_read(tmp_path):
    # A hunt: --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity and --mtp-num-layers were listed
    # as not used and the run priced dropless at the model's own MTP depth.
    path = tmp_path / "train.sh"
    path.write_text(
        "pretrain_gpt.py --tensor-model-parallel-size 2 --expert-model-parallel-size 8 --num-experts 128 \\\n"
        "  --moe-token-dispatcher-type alltoall --moe-expert-capacity-factor 1.25 \\\n"
        "  --moe-pad-expert-input-to-capacity --mtp-num-layers 2 --sequence-parallel\n"
    )
    settings, unused, defaulted, _ = read_launch(path)
    assert (settings["capacity_factor"], settings["pad_to_capacity"], settings["mtp_layers"]) == (
        "1.25",
        "1",
        "2",
    )
    assert not {
        "--moe-expert-capacity-factor",
        "--moe-pad-expert-input-to-capacity",
        "--mtp-num-layers",
    } & set(unused)
    assert not {"capacity_factor", "pad_to_capacity", "mtp_layers"} & defaulted


def test_a_moe_launch_without_mtp_trains_none_and_a_negative_capacity_is_dropless(tmp_path):
    # A review: Megatron-LM's --mtp-num-layers defaults to None (no MTP layer), where DeepSeek-V3's own depth had
    # been priced; and Megatron-Core reads a negative capacity factor as dropless.
    path = tmp_path / "train.sh"
    path.write_text(
        "pretrain_gpt.py --expert-model-parallel-size 8 --num-experts 256 --moe-expert-capacity-factor -1\n"
    )
    settings, _, defaulted, _ = read_launch(path)
    assert settings["mtp_layers"] == "0" and "mtp_layers" in defaulted
    assert settings["capacity_factor"] == "0" and "capacity_factor" not in defaulted


def test_a_command_is_read_as_megatron_lm_runs_it(tmp_path):
    # Found by a hunt on Megatron-LM's own example scripts, each priced otherwise in silence: flags in one quoted
    # array item expanded unquoted (examples/llama/train_llama3_8b_h100_fp8.sh), or in a string variable; the
    # FSDP flags (ZeRO 1 or 0); no virtual-stage flag (plan searched the interleaved schedule); the real
    # virtual-stage flags; --recompute-activations and --moe-layer-recompute (none); no precision flag (bf16).
    from netsweep_jax.sweep.analysis.layout_jobs import take_launch

    path = tmp_path / "train.sh"

    def read(text):
        path.write_text(text)
        return read_launch(path)

    settings, unused, defaulted, _ = read(
        'DTYPE_ARGS=(\n  "--fp8-format hybrid"\n  --bf16\n)\nMP=("--tensor-model-parallel-size 4")\n'
        "torchrun pretrain_gpt.py ${MP[@]} ${DTYPE_ARGS[@]}\n"
    )
    assert (settings["precision"], settings["tp"], unused) == ("fp8", "4", [])
    settings, *_ = read('GPT_ARGS="--tensor-model-parallel-size 2 \\\n  --pipeline-model-parallel-size 2 --fp16"\n'
                          "torchrun pretrain_gpt.py $GPT_ARGS --micro-batch-size 1\n")  # fmt: skip
    assert (settings["tp"], settings["pp"], settings["precision"], settings["micro_batch"]) == (
        "2",
        "2",
        "fp16",
        "1",
    )
    for flags, zero in (("--use-megatron-fsdp", "3"), ("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads", "2"),
                        ("--use-torch-fsdp2", "3"), ("--use-distributed-optimizer", "1"), ("", "0")):  # fmt: skip
        settings, unused, defaulted, _ = read(f"pretrain_gpt.py --bf16 {flags}")
        assert settings["zero"] == zero and ("zero" in defaulted) == (not flags) and unused == [], flags
    # the schedule: 1F1B where no flag says otherwise (--schedule replaces it), V from Megatron-LM's two flags
    settings, _, defaulted, _ = read("pretrain_gpt.py --bf16 --pipeline-model-parallel-size 4")
    assert settings["virtual_stages"] == "1" and "virtual_stages" in defaulted
    assert "virtual_stages" not in take_launch(
        {"launch": path, "schedule": "interleaved:2"}, {"schedule"}, print
    )
    settings, _, defaulted, _ = read(
        "pretrain_gpt.py --bf16 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2"
    )
    assert settings["virtual_stages"] == "2" and "virtual_stages" not in defaulted
    settings, *_ = read("pretrain_gpt.py --bf16 --pipeline-model-parallel-size 4 --num-layers 32 "
                          "--num-layers-per-virtual-pipeline-stage 2")  # fmt: skip
    assert settings["virtual_stages"] == "4"  # 32 layers / 4 stages / 2 a chunk
    with pytest.raises(InputError, match="30 layers over --pipeline-model-parallel-size 4 in chunks of"):
        read(
            "pretrain_gpt.py --bf16 --pipeline-model-parallel-size 4 --num-layers 30 --num-layers-per-virtual-pipeline-stage 2"
        )
    with pytest.raises(InputError, match="needs one whole number and the command's --num-layers"):
        read(
            "pretrain_gpt.py --bf16 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2"
        )
    # recomputation as Megatron-LM reads its flags
    assert read("pretrain_gpt.py --bf16 --recompute-activations")[0]["recompute"] == "selective"
    assert (
        read("pretrain_gpt.py --bf16 --moe-layer-recompute")[0]["recompute"]
        == read("pretrain_gpt.py --bf16 --recompute-granularity selective --recompute-modules core_attn moe")[
            0
        ]["recompute"]
    )
    with pytest.raises(InputError, match="--recompute-method block recomputes --recompute-num-layers layers"):
        read(
            "pretrain_gpt.py --bf16 --recompute-granularity full --recompute-method block --recompute-num-layers 1"
        )
    # no precision flag: Megatron-LM's fp32, refused unless --precision replaces it
    read("pretrain_gpt.py --tensor-model-parallel-size 2")
    with pytest.raises(
        InputError, match="gives no --bf16, --fp16 or --fp8-format: Megatron-LM then trains in fp32"
    ):
        take_launch({"launch": path}, set(), print)
    given = {"launch": path, "precision": "bf16"}
    take_launch(given, {"precision"}, print)
    assert given["precision"] == "bf16" and given["tp"] == "2"


def test_what_megatron_lm_refuses_is_refused_naming_the_line_it_reads(tmp_path):
    # A hunt: each was priced as if it ran (--model-parallel-size as TP 1), and a refusal named the first line
    # that mentions the flag (a comment, an echo) where argparse reads the last.
    path = tmp_path / "train.sh"
    for text, said in (
        ("--tensor-model-parallel-size 2 --tp-comm-overlap", "--tp-comm-overlap without --sequence-parallel"),
        (
            "--overlap-param-gather --use-distributed-optimizer",
            "--overlap-param-gather without --overlap-grad-reduce",
        ),
        (
            "--overlap-param-gather --overlap-grad-reduce",
            "--overlap-param-gather without --use-distributed-optimizer",
        ),
        ("--model-parallel-size 8", "--model-parallel-size is no longer a Megatron-LM flag"),
    ):
        path.write_text(f"pretrain_gpt.py --bf16 \\\n  {text}\n")
        with pytest.raises(InputError, match=f"train.sh:2: {said}"):
            read_launch(path)
    path.write_text(
        'echo "--pipeline-model-parallel-size from the environment"\n'
        "pretrain_gpt.py --bf16 --pipeline-model-parallel-size 2 \\\n  --pipeline-model-parallel-size $PP\n"
    )
    with pytest.raises(InputError, match=r"train.sh:3: --pipeline-model-parallel-size '\$PP'"):
        read_launch(path)


def test_a_model_of_another_shape_than_the_command_trains_is_refused(tmp_path):
    # A hunt: a 16-layer command at sequence 2048 was priced as llama3-8b's 32 layers at 8192, in silence.
    path = tmp_path / "train.sh"
    path.write_text("pretrain_gpt.py --bf16 --num-layers 16 --hidden-size 4096 --seq-length 2048\n")
    r = invoke("grid", "--model", "llama3-8b", "--gpus", "8", "--launch", path, "--out", tmp_path / "c.h5")
    assert r.exit_code == 2 and "gives --num-layers 16, where --model llama3-8b has layers 32" in r.output
    assert not (tmp_path / "c.h5").exists()
    path.write_text(
        "pretrain_gpt.py --bf16 --num-layers 32 --hidden-size 4096 --seq-length 8192 --num-attention-heads 32 "
        "--group-query-attention --num-query-groups 8 "
        "--global-batch-size 8\n"
    )
    r = invoke(
        "grid", "--model", "llama3-8b", "--gpus", "8", "--launch", path, "-q", "--out", tmp_path / "c.h5"
    )
    assert r.exit_code == 0 and "not used" not in r.output, r.output  # the shape is compared, not unused


def test_a_review_of_the_launch_reader(tmp_path):
    # A review: flags appended to a variable were lost; an echo's text was read as flags; left-out shape flags
    # took no Megatron-LM default; uneven stages, TP 1 overlap, FSDP2 with the distributed optimizer and a
    # selective method were priced; --recompute-activations loses to no granularity; the file's virtual stages
    # beside --schedule were said as an option never typed.
    from netsweep_jax.sweep.analysis.layout_jobs import take_launch

    path = tmp_path / "train.sh"

    def read(text):
        path.write_text(text)
        return read_launch(path)[0]

    assert (
        read(
            'A="--bf16"\nA="$A --fp8-format hybrid"\nA+=" --tensor-model-parallel-size 4"\npretrain_gpt.py $A\n'
        )["precision"]
        == "fp8"
    )
    assert read('A+=" --tensor-model-parallel-size 4 --bf16"\npretrain_gpt.py $A\n')["tp"] == "4"
    settings = read(
        'echo "--use-distributed-optimizer is off: --tp-comm-overlap too"\npretrain_gpt.py --bf16\n'
    )
    assert settings["zero"] == "0" and settings["overlap"] == "none"
    assert (
        read("pretrain_gpt.py --bf16 --recompute-granularity full --recompute-activations")["recompute"]
        == "selective"
    )
    path.write_text(
        "pretrain_gpt.py --bf16 --num-experts 8 --num-attention-heads 32 --group-query-attention --num-query-groups 4"
    )
    assert read_launch(path).shape == {
        "heads": ("--num-attention-heads 32", 32),
        "experts": ("--num-experts 8", 8),
        "kv_heads": ("--num-query-groups 4", 4),
        "top_k": ("no --moe-router-topk (Megatron-LM's top-2 routing)", 2),
    }
    path.write_text("pretrain_gpt.py --bf16 --num-attention-heads 32")
    assert read_launch(path).shape["kv_heads"][1] == 32  # no --group-query-attention: a head each
    for text, said in (
        ("--pipeline-model-parallel-layout Et*3|t*3L", "--pipeline-model-parallel-layout places layers on stages unevenly"),
        ("--decoder-first-pipeline-num-layers 3", "--decoder-first-pipeline-num-layers places layers"),
        ("--tensor-model-parallel-size 1 --sequence-parallel --tp-comm-overlap", "--tp-comm-overlap at --tensor-model-parallel-size 1"),
        ("--use-torch-fsdp2 --use-distributed-optimizer", "--use-torch-fsdp2 with --use-distributed-optimizer"),
        ("--recompute-granularity selective --recompute-method uniform", "--recompute-method with selective"),
        ("--recompute-granularity full", "--recompute-granularity full without --recompute-method and --recompute-num"),
        ("--virtual-pipeline-model-parallel-size 2", "--virtual-pipeline-model-parallel-size has not been a Megatron-LM flag"),
    ):  # fmt: skip
        path.write_text(f"pretrain_gpt.py --bf16 {text}\n")
        with pytest.raises(InputError, match=said):
            read_launch(path)
    path.write_text(
        "pretrain_gpt.py --bf16 --overlap-grad-reduce --overlap-param-gather --optimizer dist_muon\n"
    )
    assert (
        read_launch(path)[0]["overlap"] == "grad_reduce+param_gather"
    )  # dist_muon shards as Megatron-LM says
    path.write_text(
        "pretrain_gpt.py --bf16 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2\n"
    )
    with pytest.raises(
        InputError, match=r"given twice: as an option and in .*train.sh \(its virtual pipeline stages\)"
    ):
        take_launch({"launch": path, "schedule": "1f1b"}, {"schedule"}, print)
    path.write_text(
        "pretrain_gpt.py --tensor-model-parallel-size 2\n"
    )  # no precision: --precision's gradients
    given = {"launch": path, "precision": "fp16"}
    take_launch(given, {"precision"}, print)
    assert given["grad_bytes"] == "0"


def test_a_command_without_a_global_batch_takes_megatron_lms(tmp_path):
    # A hunt: a command Megatron-LM runs (its global batch then the micro batch x the data-parallel size,
    # arguments.py) was refused as missing --global-batch.
    path = tmp_path / "train.sh"
    path.write_text(
        "pretrain_gpt.py --bf16 --tensor-model-parallel-size 2 --micro-batch-size 2 --num-layers 32 "
        "--hidden-size 4096 --seq-length 8192 --num-attention-heads 32 --group-query-attention "
        "--num-query-groups 8\n"
    )
    base = ("grid", "--model", "llama3-8b", "--launch", path)
    r = invoke(*base, "--gpus", "8", "--out", tmp_path / "c.h5")
    assert r.exit_code == 0, r.output
    said = (
        "Megatron-LM's for a command without --global-batch-size, the micro batch 2 x the data-parallel size"
    )
    assert f"--global-batch 8: {said} 4" in r.output
    assert open_cube(tmp_path / "c.h5").global_batch.values.tolist() == [8]
    r = invoke(*base, "--dp", "3", "--out", tmp_path / "d.h5")
    assert r.exit_code == 0 and f"--global-batch 6: {said} 3" in r.output, r.output
    for option, value, message in (
        ("--gpus", "7", "--gpus 7: "),
        ("--gpus", "8,16", "--global-batch is needed: "),
    ):
        r = invoke(*base, option, value, "--out", tmp_path / "e.h5")
        assert r.exit_code == 2 and r.output.splitlines()[-1].startswith(
            f"error: {message}{path} leaves out --global-batch-size"
        )
        assert "Traceback" not in r.output
    assert not (tmp_path / "e.h5").exists()


@pytest.mark.parametrize(
    "flag, rule",
    [
        ("--micro-batch-size 0", "must be an integer from 1 to 1000000"),
        ("--tensor-model-parallel-size 0", "must be an integer from 1 to 4096"),
        ("--num-virtual-stages-per-pipeline-rank 0", "must be a whole number from 1"),
    ],
)
def test_a_value_out_of_range_is_refused_as_the_command_gives_it(tmp_path, flag, rule):
    # Its netsweep option had been named (--micro-batch 0), as if typed on the command line.
    path = tmp_path / "train.sh"
    assert (
        _refusal(path, f"pretrain_gpt.py --bf16 \\\n  {flag} --global-batch-size 8\n")
        == f"{path}:2: {flag}: {rule}"
    )


@pytest.mark.parametrize(
    "text",
    [
        # a hunt: shlex's comments cut the command at a '#' inside a word, its flags after lost (TP read as 1)
        "pretrain_gpt.py --bf16 --wandb-exp-name llama3-8b#tp4-pp2 --tensor-model-parallel-size 4",
        "pretrain_gpt.py --bf16 --data-path /data/web#shard0 \\\n  --tensor-model-parallel-size 4",
        "GPUS=(0 1 2 3)\ntorchrun --nproc-per-node ${#GPUS[@]} pretrain_gpt.py \\\n"
        "  --tensor-model-parallel-size 4",
        "pretrain_gpt.py --bf16 --data-path a\\#b --tensor-model-parallel-size 4",
        # bash's comments are still comments: at a word's start, after an operator, to the line's end
        "pretrain_gpt.py --bf16 --tensor-model-parallel-size 4 # --pipeline-model-parallel-size 2",
        "pretrain_gpt.py --bf16 --tensor-model-parallel-size 4;# --pipeline-model-parallel-size 2",
        "pretrain_gpt.py --tensor-model-parallel-size 4 # a trailing \\\n--pipeline-model-parallel-size 2",
    ],
)
def test_a_hash_inside_a_word_starts_no_comment(tmp_path, text):
    path = tmp_path / "train.sh"
    settings = _settings(path, text)
    assert (settings["tp"], settings["pp"]) == ("4", "1")


def test_a_refusal_after_a_hash_in_a_word_names_its_line(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text("pretrain_gpt.py --bf16 \\\n  --wandb-exp-name run#2 --tensor-model-parallel-size $TP\n")
    with pytest.raises(InputError, match=r"train.sh:2: --tensor-model-parallel-size '\$TP'"):
        read_launch(path)


SRUN_BASH_C = """#!/bin/bash
#SBATCH --nodes=2
MODEL_ARGS="--num-layers 32 --hidden-size 4096 \\
  --seq-length 8192 --bf16"
srun --container-image nvcr.io/nvidia/pytorch:24.10-py3 bash -c "cd /workspace/Megatron-LM && \\
  python pretrain_gpt.py $MODEL_ARGS --wandb-exp-name run-$(date +%s) \\
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel" 2>&1 | tee log
"""


def test_flags_in_a_shells_c_string_are_read(tmp_path):
    # A hunt: srun ... bash -c "... pretrain_gpt.py --tensor-model-parallel-size 4 ..." gave no flag (TP 1).
    path = tmp_path / "train.sh"
    path.write_text(SRUN_BASH_C)
    settings, unused, *_ = read_launch(path)
    assert (settings["tp"], settings["pp"], settings["sequence_parallel"], settings["precision"]) == (
        "4",
        "2",
        "1",
        "bf16",
    )
    assert unused == ["--wandb-exp-name"]  # srun's own flags are no training command's
    # the string's commands as sh reads them: its comment ends at its line, the flag after it no training's
    assert (
        _settings(
            path,
            "docker run --rm img sh -lc 'cd /w; python pretrain_gpt.py --bf16 # on\n"
            "  --pipeline-model-parallel-size 2'",
        )["pp"]
        == "1"
    )
    assert (
        _settings(path, "A=(--bf16)\nsh -lc 'python pretrain_gpt.py ${A[@]} --tensor-model-parallel-size 8'")[
            "tp"
        ]
        == "8"
    )


TRAIN_THEN_SERVE = """#!/bin/bash
GPT_ARGS=(--num-layers 32 --bf16)
torchrun --nproc-per-node 8 pretrain_gpt.py ${GPT_ARGS[@]} \\
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel
SERVER_ARGS=(--micro-batch-size 1)
torchrun --nproc-per-node 1 tools/run_text_generation_server.py ${GPT_ARGS[@]} ${SERVER_ARGS[@]} \\
    --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1
"""


def test_only_the_training_command_is_read_and_which_one_trains_is_never_guessed(tmp_path):
    # A hunt: a text-generation server's TP 1 after the training's TP 4 was priced, with the training's other
    # flags; now the pretrain_*.py command alone (its variables, not the server's), and where no command or
    # several run a training entry, commands that differ in a flag netsweep reads are refused.
    path = tmp_path / "train.sh"
    path.write_text(TRAIN_THEN_SERVE)
    settings, unused, *_ = read_launch(path)
    assert (settings["tp"], settings["pp"], settings["sequence_parallel"]) == ("4", "2", "1")
    assert "micro_batch" not in settings and unused == ["--nproc-per-node"]
    # a refusal names the training command's line, not the server's that gives the flag after it
    path.write_text(
        TRAIN_THEN_SERVE.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size $PP")
    )
    with pytest.raises(InputError, match=r"train.sh:4: --pipeline-model-parallel-size '\$PP'"):
        read_launch(path)
    for text, said in (
        (
            "torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 4\n"
            "torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 8\n",
            "--tensor-model-parallel-size 4 at line 1 (pretrain_gpt.py), "
            "--tensor-model-parallel-size 8 at line 2 (pretrain_gpt.py)",
        ),
        (
            "torchrun train.py --bf16 --sequence-parallel --tensor-model-parallel-size 2\n"
            "python eval.py --bf16 --tensor-model-parallel-size 2\n",
            "--sequence-parallel at line 1 (train.py), no --sequence-parallel at line 2 (eval.py)",
        ),
    ):
        assert _refusal(path, text) == (
            f"{path}: {said}: netsweep prices one training command and cannot tell which of them "
            "trains; keep that one alone in the file"
        )
    # commands that agree on every flag read are no ambiguity; a command that gives none is no training one
    assert (
        _settings(
            path,
            "mkdir -p logs; cd /w\ntorchrun train.py --bf16 --tensor-model-parallel-size 2 --save a\n"
            "torchrun train.py --bf16 --tensor-model-parallel-size 2 --save b\n",
        )["tp"]
        == "2"
    )


def test_fsdp2_with_pipeline_or_expert_parallelism_is_refused(tmp_path):
    # A hunt: --use-torch-fsdp2 at PP 2 was priced; Megatron-LM's validate_args refuses it
    # ("--use-torch-fsdp2 is not supported with pipeline parallelism", and with expert parallelism).
    path = tmp_path / "train.sh"
    for flag, parallelism in (
        ("--pipeline-model-parallel-size", "pipeline parallelism"),
        ("--expert-model-parallel-size", "expert parallelism"),
    ):
        assert _refusal(path, f"pretrain_gpt.py --bf16 --use-torch-fsdp2 \\\n  {flag} 2\n") == (
            f"{path}:2: --use-torch-fsdp2 with {flag} 2: Megatron-LM refuses it (--use-torch-fsdp2 is not "
            f"supported with {parallelism})"
        )
    assert (
        _settings(path, "pretrain_gpt.py --bf16 --use-torch-fsdp2 --pipeline-model-parallel-size 1\n")["zero"]
        == "3"
    )


def test_a_byte_that_is_not_utf8_is_read_and_a_nul_byte_is_refused(tmp_path):
    # A hunt: one Latin-1 byte in a data path refused the whole file as "not a text file"; the flags netsweep
    # reads are ASCII. A file with a NUL byte is no text (a binary given in its place).
    path = tmp_path / "train.sh"
    path.write_bytes(
        b"\xef\xbb\xbfpretrain_gpt.py --bf16 --tensor-model-parallel-size 2 --data-path /d/caf\xe9\n"
    )
    settings, unused, *_ = read_launch(path)
    assert settings["tp"] == "2" and unused == ["--data-path"]
    path.write_bytes(b"pretrain_gpt.py --bf16 --tensor-model-parallel-size 2\n\x00\xff\n")
    with pytest.raises(InputError, match="train.sh: not a text file \\(a NUL byte at byte 54\\)"):
        read_launch(path)


@pytest.mark.parametrize(
    "text",
    [
        # a command substitution's parentheses end no command: the flags after it are the training command's
        "torchrun pretrain_gpt.py --wandb-exp-name run-$(date +%s) --tensor-model-parallel-size 4\nwait",
        'pretrain_gpt.py --data-path "" --tensor-model-parallel-size 4',  # an empty word (was an IndexError)
        "pretrain_gpt.py --bf16 \\\n  --tensor-model-parallel-size 4 \\\n",  # a file ending in a continuation
    ],
)
def test_words_bash_reads_as_one_command(tmp_path, text):
    path = tmp_path / "train.sh"
    assert _settings(path, text)["tp"] == "4"


@pytest.mark.parametrize(
    "text",
    [
        # a review: each lost its flags in silence, its assignment read as a command (HEAD's reader had them)
        'export MP="--tensor-model-parallel-size 4 --sequence-parallel"\ntorchrun pretrain_gpt.py --bf16 $MP',
        "declare -a MP=(\n  --tensor-model-parallel-size 4\n  --sequence-parallel\n)\n"
        'torchrun pretrain_gpt.py --bf16 "${MP[@]}"',
        'export GPT_ARGS="\n  --tensor-model-parallel-size 4 \\\n  --sequence-parallel\n"\n'
        "pretrain_gpt.py --bf16 $GPT_ARGS",
        'declare GPT_ARGS="--tensor-model-parallel-size 4 --sequence-parallel"\n'
        "pretrain_gpt.py --bf16 $GPT_ARGS",
        '{ MP="--tensor-model-parallel-size 4 --sequence-parallel"; }\npretrain_gpt.py --bf16 $MP',
        "main() {\n  local -a MP=(--tensor-model-parallel-size 4 --sequence-parallel)\n"
        '  torchrun pretrain_gpt.py --bf16 "${MP[@]}"\n}\nmain',
        "time torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 4 --sequence-parallel",
        # an if whose test the file decides runs its one branch (Megatron-LM's train_llama3_8b_h100_fp8.sh)
        'DTYPE="bf16"\nMP=(--tensor-model-parallel-size 4)\nif [[ "$DTYPE" == "fp8" ]]; then\n'
        "  MP+=(--fp8-format hybrid)\nelse\n  MP+=(--sequence-parallel)\nfi\npretrain_gpt.py --bf16 ${MP[@]}",
        "S=big\nif [ $S = small ]; then\n  torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 2\n"
        "elif test $S != small; then\n  torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 4 "
        "--sequence-parallel\nfi",
    ],
)
def test_assignments_after_keywords_and_declaration_builtins_are_read(tmp_path, text):
    path = tmp_path / "train.sh"
    settings = _settings(path, text)
    assert (settings["tp"], settings["sequence_parallel"], settings["precision"]) == ("4", "1", "bf16")


@pytest.mark.parametrize(
    "text, line, name",
    [
        # a review: the last branch's flags, or a loop's, were read in silence
        ('OPTS="--bf16"\nif [ "$FP8" = 1 ]; then OPTS="$OPTS --fp8-format hybrid"; fi\n'
         "pretrain_gpt.py $OPTS", 2, "OPTS"),
        ('if [ "$FP8" = 1 ]; then\n  PREC="--fp8-format hybrid --bf16"\nelse\n  PREC="--bf16"\nfi\n'
         "pretrain_gpt.py $PREC", 4, "PREC"),
        ('MP=(--bf16)\nif [ "$BIG" = 1 ]; then MP+=(--pipeline-model-parallel-size 2); fi\n'
         "pretrain_gpt.py ${MP[@]}", 2, "MP"),
        ('ARGS="--bf16"\nfor f in a b; do ARGS="$ARGS --tensor-model-parallel-size 4"; done\n'
         "pretrain_gpt.py $ARGS", 2, "ARGS"),
        ('A="--bf16"\n[ "$FP8" = 1 ] && A="$A --fp8-format hybrid"\nB="$A --micro-batch-size 1"\n'
         "pretrain_gpt.py $B", 2, "A"),
        ('case "$SIZE" in\n  big) PP="--pipeline-model-parallel-size 4" ;;\n'
         '  *) PP="--pipeline-model-parallel-size 2" ;;\nesac\npretrain_gpt.py --bf16 $PP', 3, "PP"),
    ],
)  # fmt: skip
def test_a_flag_variable_a_block_may_change_is_refused(tmp_path, text, line, name):
    path = tmp_path / "train.sh"
    assert _refusal(path, text) == (
        f"{path}:{line}: {name} is given flags here that an if, case or loop (or && or ||) may apply or not: "
        "netsweep cannot tell which the training command gets; assign them once, outside it"
    )
    # flags it does not read, the same flags, or a variable the training command does not expand: no doubt
    assert (
        _settings(
            path,
            'D="--data-path a"\nA="--bf16"\nif [ "$X" = 1 ]; then D="--data-path b"; A="--bf16"; '
            'E="--fp16"; fi\npretrain_gpt.py $A $D --tensor-model-parallel-size 2',
        )["tp"]
        == "2"
    )


def test_a_variable_left_unexpanded_where_flags_go_is_refused(tmp_path):
    # A review: a function's body expanding a variable assigned after the function lost its flags in silence.
    path = tmp_path / "train.sh"
    for text, line, word, why in (
        (
            "launch() {\n  torchrun pretrain_gpt.py --micro-batch-size 1 --bf16 $MP\n}\n"
            'MP="--tensor-model-parallel-size 4"\nlaunch',
            2,
            "$MP",
            "MP's flags are assigned after it (a function run later?), or it is not $NAME, ${NAME} or "
            "${NAME[@]}",
        ),
        (
            "pretrain_gpt.py --bf16 ${EXTRA_ARGS:-} --tensor-model-parallel-size 2",
            1,
            "${EXTRA_ARGS:-}",
            "EXTRA_ARGS is not set before it in the file, and stands where flags go",
        ),
        (
            'A="--micro-batch-size 1 $EXTRA"\npretrain_gpt.py --bf16 $A',
            1,
            "$EXTRA",
            "EXTRA is not set before it in the file, and stands where flags go",
        ),
        (
            "torchrun $DIST pretrain_gpt.py $ARGS --bf16",
            1,
            "$ARGS",
            "ARGS is not set before it in the file, and stands where flags go",
        ),
    ):
        assert _refusal(path, text) == (
            f"{path}:{line}: {word} in the training command: {why}; netsweep cannot tell which flags it "
            "gives, so give them in the file before the command"
        )
    # a flag's value (its own check), a launcher's or a program's word, a variable holding no flag: read
    assert (
        _settings(
            path,
            "ENTRY=pretrain_gpt.py\nCKPT=/c\ntorchrun $DIST $ENTRY --save $CKPT --data-path 0.5 $A 0.5 $B "
            '--tensor-model-parallel-size 2 --bf16 "$@"',
        )["tp"]
        == "2"
    )  # "$@", the script's own arguments: read as run without them
    path.write_text("pretrain_gpt.py --bf16 --tensor-model-parallel-size $TP")
    with pytest.raises(InputError, match=r"train.sh:1: --tensor-model-parallel-size '\$TP': give one whole"):
        read_launch(path)


def test_a_file_of_flags_alone_is_one_command(tmp_path):
    # A review: HEAD's reader read such a file; it was refused, naming a flag as "the command".
    path = tmp_path / "train.sh"
    settings = _settings(
        path,
        "--num-layers 32 --hidden-size 4096\n"
        "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2\n"
        "--bf16 --micro-batch-size 1\n--sequence-parallel\n",
    )
    assert (settings["tp"], settings["pp"], settings["sequence_parallel"], settings["micro_batch"]) == (
        "4",
        "2",
        "1",
        "1",
    )
    # beside programs, a line of flags is no command (as in bash); a refusal names programs, never a flag
    path.write_text(
        "--num-layers 32\ntorchrun train.py --bf16 --tensor-model-parallel-size 2\n"
        "python eval.py --bf16 --tensor-model-parallel-size 4\n"
    )
    assert "at line 2 (train.py), --tensor-model-parallel-size 4 at line 3 (eval.py):" in _refusal(path)


def test_a_backtick_substitution_is_one_word(tmp_path):
    # A review: its | or ; ended the command, the flags after it lost (TP read as 1).
    path = tmp_path / "train.sh"
    for inner in ("hostname | cut -d. -f1", "date; hostname", 'echo "a b" c'):
        path.write_text(
            f"torchrun pretrain_gpt.py --bf16 --wandb-exp-name run-`{inner}` --tensor-model-parallel-size 4\n"
        )
        settings, unused, *_ = read_launch(path)
        assert settings["tp"] == "4" and unused == ["--wandb-exp-name"], inner


def test_a_refusal_names_a_line_the_training_command_uses(tmp_path):
    # A review: it pointed at another command's line, or at an array the training command does not expand.
    path = tmp_path / "train.sh"
    for text, line in (
        (
            "GPT_ARGS=(--bf16 --micro-batch-size 1)\ntorchrun pretrain_gpt.py ${GPT_ARGS[@]} \\\n"
            "    --tensor-model-parallel-size 4 --pipeline-model-parallel-size $PP\n"
            "SERVER_ARGS=(\n  --pipeline-model-parallel-size 1\n)\n"
            "torchrun tools/run_text_generation_server.py ${GPT_ARGS[@]} ${SERVER_ARGS[@]}\n",
            3,
        ),
        (
            "TRAIN=(--pipeline-model-parallel-size $PP)\ntorchrun pretrain_gpt.py --bf16 ${TRAIN[@]}\n"
            "SERVE=(\n  --pipeline-model-parallel-size 1\n)\n",
            1,
        ),
    ):
        path.write_text(text)
        with pytest.raises(InputError, match=rf"train.sh:{line}: --pipeline-model-parallel-size '\$PP'"):
            read_launch(path)


def test_a_nul_byte_is_refused_in_valid_utf8_too(tmp_path):
    # A review: a file with a NUL byte that was valid UTF-8 was read.
    path = tmp_path / "train.sh"
    path.write_bytes(b"torchrun pretrain_gpt.py --bf16 --tensor-model-parallel-size 2\n\x00\n")
    with pytest.raises(InputError) as e:
        read_launch(path)
    assert str(e.value) == f"{path}: not a text file (a NUL byte at byte 63); expected a launch command"


@pytest.mark.parametrize(
    "text",
    [
        "torchrun pretrain_gpt.py --bf16 --micro-batch-size 1 > log.txt --tensor-model-parallel-size 4",
        "torchrun pretrain_gpt.py --bf16 --micro-batch-size 1 2>&1 --tensor-model-parallel-size 4",
        "torchrun pretrain_gpt.py --bf16 --micro-batch-size 1 &>log --tensor-model-parallel-size 4",
        "torchrun pretrain_gpt.py --bf16 --micro-batch-size 1 --tensor-model-parallel-size 4 2>err.log",
        'ARGS=(--bf16 --micro-batch-size 1 --tensor-model-parallel-size 4)\ntorchrun pretrain_gpt.py "${ARGS[@]}" "$@"',
    ],
)  # fmt: skip
def test_a_redirection_anywhere_and_the_scripts_arguments_leave_the_command_whole(tmp_path, text):
    # A review: a redirection mid-command ended it (the flags after it lost in silence: TP 1 priced), and a
    # trailing "$@" (the script's arguments, which the file is read without) was read as a flag's value
    path = tmp_path / "train.sh"
    settings = _settings(path, text)
    assert (settings["tp"], settings["micro_batch"], settings["precision"]) == ("4", "1", "bf16")
