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
    --virtual-pipeline-model-parallel-size 5 --sequence-parallel \\
    --micro-batch-size 1 --global-batch-size 128 \\
    --recompute-granularity selective --recompute-modules mla_up_proj mlp \\
    --use-distributed-optimizer --overlap-grad-reduce --tp-comm-overlap \\
    --fp8-format hybrid --bf16 --lr 3e-4 --train-iters $ITERS  # the rest is not layout
"""


def test_a_launch_command_gives_its_layout(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    settings, unused = read_launch(path)
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
    }
    assert unused == ["--nproc_per_node", "--lr", "--train-iters"]
    path.write_text("pretrain_gpt.py --recompute-granularity full --tensor-model-parallel-size 2")
    settings, unused = read_launch(path)
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
    launched = invoke(*base, "--launch", str(path), "--out", str(tmp_path / "a.h5"))
    assert launched.exit_code == 0, launched.output
    assert (
        f"from {path}: --tp 4, --pp 8" in launched.stderr and "not used: --nproc_per_node" in launched.stderr
    )
    options = ["--tp", "4", "--pp", "8", "--schedule", "interleaved:5", "--micro-batch", "1"]
    options += ["--global-batch", "128", "--cp", "1", "--ep", "1", "--recompute", "mlp+up_proj"]
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
