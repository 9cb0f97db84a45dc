"""A Megatron-LM launch command read from a file: the layout settings it gives, as ``sweep`` options.

``sweep plan --launch train.sh`` (and ``grid``) takes the parallel layout from the flags of a
``pretrain_gpt.py`` command line (a script, or the command alone; ``\\`` continuations, bash's ``#``
comments (a word's start, outside quotes: ``run#2`` is a word), the flags in bash arrays as Megatron-LM's
example scripts keep them, ``MODEL_PARALLEL_ARGS=( ... )``, or in variables, and a shell's ``-c`` string,
``srun ... bash -c "cd /w && python pretrain_gpt.py ..."``, are fine: a flag's values end at the end of its
line or a shell operator, ``(``, ``)``, ``;``, ``&&``, ``|``, a redirection). Of a file's commands, the one
that runs ``pretrain_*.py`` is read (a text-generation server after it is not); where that cannot be told,
several commands that differ in a flag read here are refused (a file of flags alone, no program, is one
command). So is a command whose flags the file does not tell (:mod:`sweep.io.launch_script`): a variable
that an ``if`` netsweep cannot decide, a ``case`` or a loop gives other flags, or a ``$NAME`` that may
hold flags left unexpanded (set after the command, or not in the file). A flag below whose value is not a
whole number (``eight``, a shell variable ``$TP``) is refused, naming the flag and the file's line: netsweep
cannot know its value, and Megatron-LM's default in its place would be a silent guess. So is a file that
gives none of them:

    --tensor-model-parallel-size T     --tp T
    --pipeline-model-parallel-size P   --pp P
    --context-parallel-size C          --cp C
    --expert-model-parallel-size E     --ep E
    --expert-tensor-parallel-size X    --expert-tp X (left out of a MoE command, --num-experts or EP > 1: the TP)
    --num-virtual-stages-per-pipeline-rank V   --schedule interleaved:V (neither it nor the next: 1f1b;
                                       the old --virtual-pipeline-model-parallel-size is refused, as Megatron-LM does)
    --num-layers-per-virtual-pipeline-stage N  V = --num-layers / (P N), as Megatron-LM derives it
    --micro-batch-size B, --global-batch-size G, --cpu-offloading-num-layers N (no G: Megatron-LM's B x the
                                       data-parallel size, sweep.analysis.layout_jobs.megatron_global_batch)
    --recompute-granularity full|selective [--recompute-modules m ...]   --recompute (full: with
                                       --recompute-method uniform and --recompute-num-layers, as Megatron-Core needs)
    --recompute-activations, --moe-layer-recompute   --recompute selective, + moe (--recompute-method block:
                                       refused, a part of a stage's layers not being modelled)
    --sequence-parallel                --sequence-parallel 1 (else 0 where TP > 1)
    --use-distributed-optimizer        --zero 1
    --use-megatron-fsdp, --use-torch-fsdp2   --zero 3 (Megatron-FSDP's --data-parallel-sharding-strategy: 0-3)
    --overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap,
    --overlap-moe-expert-parallel-comm --overlap (the switches given; none when none is)
    --fp8-format ..., --bf16, --fp16   --precision fp8, bf16, fp16 (none: Megatron-LM's fp32, refused unless
                                       --precision is given)
    --grad-reduce-in-bf16              --grad-bytes 2 with --bf16 (else 4: Megatron-LM's fp32 main_grad)
    --accumulate-allreduce-grads-in-fp32   --grad-bytes 4 with --fp16 (else 2: fp16 gradients)
    --moe-token-dispatcher-type alltoall|flex   --moe-dispatcher (its allgather is not modelled: refused,
                                       and so is a MoE command that leaves it out, allgather being its default)

Flags in one word (a quoted array item expanded unquoted, ``"--fp8-format hybrid"``, or a variable assigned a
string of flags, ``GPT_ARGS="..."``) are split as bash splits them where they are expanded. A parallel size the
command leaves out is Megatron-LM's default, 1; what the command leaves out is
Megatron-LM's default, which an option given beside ``--launch`` replaces (what the command states, an
option may not). The model's shape (:data:`SHAPE_FLAGS`) is compared with ``--model``'s, and what Megatron-LM
refuses (:data:`REFUSED_WITHOUT`, ...) is refused. Every other flag (the optimizer, data, logging) is listed
as not used: the model comes from ``--model`` or ``--arch``. Pure Python: no JAX.
"""

import os
import re
from collections.abc import Callable
from typing import NamedTuple

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.layout_axes import AXES, recompute_mode
from netsweep_jax.sweep.core.schema import option_of
from netsweep_jax.sweep.core.sweep_settings import MOE_DISPATCHERS, OVERLAP_SWITCHES
from netsweep_jax.sweep.core.values import decimal, whole_number
from netsweep_jax.sweep.io.launch_script import script_lines, training_command, uncommented

# Flags that take a value, and the sweep parameter it sets.
VALUED = {
    "--tensor-model-parallel-size": "tp",
    "--pipeline-model-parallel-size": "pp",
    "--context-parallel-size": "cp",
    "--expert-model-parallel-size": "ep",
    "--expert-tensor-parallel-size": "expert_tp",
    "--num-virtual-stages-per-pipeline-rank": "virtual_stages",
    "--micro-batch-size": "micro_batch",
    "--global-batch-size": "global_batch",
    "--cpu-offloading-num-layers": "offload_layers",
    "--mtp-num-layers": "mtp_layers",
}
OVERLAP_FLAGS = {
    "--overlap-grad-reduce": "grad_reduce",
    "--overlap-param-gather": "param_gather",
    "--tp-comm-overlap": "tp_comm",
    "--overlap-moe-expert-parallel-comm": "moe_a2a",
}
# Flags read besides the valued ones and the overlap switches.
OTHER_USED = {
    "--recompute-granularity",
    "--recompute-modules",
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--fp8-format",
    "--bf16",
    "--fp16",
    "--moe-token-dispatcher-type",
    "--num-experts",  # read for whether the command is a mixture-of-experts one (its defaults)
    "--moe-expert-capacity-factor",
    "--moe-pad-expert-input-to-capacity",
    "--grad-reduce-in-bf16",
    "--accumulate-allreduce-grads-in-fp32",
    "--num-layers-per-virtual-pipeline-stage",
    "--use-torch-fsdp2",
    "--use-megatron-fsdp",
    "--data-parallel-sharding-strategy",
    "--recompute-activations",
    "--moe-layer-recompute",
    "--recompute-method",
    "--recompute-num-layers",
    "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split",
}
# Megatron-FSDP's sharding strategies as ZeRO stages (arguments.py's --data-parallel-sharding-strategy, default
# optim_grads_params: parameters, gradients and optimizer state); PyTorch's FSDP2 (--use-torch-fsdp2) shards all
# three. A hunt: both were priced as ZeRO 1 or 0, and a layout that ran said not to fit.
FSDP_ZERO = {"no_shard": "0", "optim": "1", "optim_grads": "2", "optim_grads_params": "3"}
# The settings a flag's presence states (its absence is Megatron-LM's default, which an option replaces).
STATED_BY = {"sequence_parallel": "--sequence-parallel", "zero": "--use-distributed-optimizer"}
# The gradients' bytes a bf16 or fp16 command states, by its flag's presence (Megatron-LM's arguments.py reads
# both inside its precision's branch): bf16's main_grad fp32 unless --grad-reduce-in-bf16, fp16's gradients fp16
# unless --accumulate-allreduce-grads-in-fp32 (a hunt: the bf16 flag was listed as not used and the run priced
# with fp32 gradients; a stack's bf16 ones had filled a command that left it out; a review: fp16's default).
GRAD_FLAGS = {
    "--bf16": ("--grad-reduce-in-bf16", "2", "4"),
    "--fp16": ("--accumulate-allreduce-grads-in-fp32", "4", "2"),
}


def _grad_bytes(flags: dict[str, list[str]], settings: dict[str, str]) -> set[str]:
    """Set ``settings``' gradient bytes as a bf16 or fp16 command states them (:data:`GRAD_FLAGS`), else fp32 (4:
    Megatron-LM's fp32 parameters and gradients); the names it stated ({"grad_bytes"} where its flag is given).
    Both half precisions at once are refused, as Megatron-LM refuses them (a review)."""
    if "--bf16" in flags and "--fp16" in flags:
        raise InputError("--bf16 and --fp16 both given: Megatron-LM trains in one of them; give one")
    for precision, (flag, given, left_out) in GRAD_FLAGS.items():
        if precision in flags:
            settings["grad_bytes"] = given if flag in flags else left_out
            return {"grad_bytes"} if flag in flags else set()
    # no precision flag: Megatron-LM's fp32 (refused unless --precision replaces it, whose own gradients then: 0)
    settings["grad_bytes"] = "0"
    return set()


MODULE_NAMES = {"mla_up_proj": "up_proj"}  # Megatron-Core's module name where ours is shorter
PARALLEL_SIZES = ("tp", "pp", "cp", "ep")


class Launch(NamedTuple):
    """A launch command's settings ({parameter: value text}), the flags it does not use, which of the settings
    are Megatron-LM's defaults for what it leaves out (an option given beside it replaces those), and the model
    shape it gives (:func:`_shape`)."""

    settings: dict[str, str]
    unused: list[str]
    defaulted: frozenset[str]
    shape: dict[str, tuple[str, int]]


def _negative(text: str) -> bool:
    """Whether ``text`` is a number below 0 by the one rule for a number a user writes (:func:`decimal`); any
    other text is left to its option's own check."""
    try:
        return decimal(text) < 0
    except ValueError:
        return False


def _recompute(path: str | os.PathLike[str], flags: dict[str, list[str]]) -> str:
    """--recompute's mode of the command's --recompute-granularity (and modules) as Megatron-LM reads them:
    --recompute-activations is selective (arguments.py), --moe-layer-recompute adds the moe module to a selective
    one (transformer_config.py; a hunt: both were priced as none); none where it has none. Megatron-Core's
    block method recomputes --recompute-num-layers of a stage's layers, which is not modelled: refused."""
    granularity = " ".join(flags.get("--recompute-granularity", []))
    if "--recompute-activations" in flags or ("--moe-layer-recompute" in flags and not granularity):
        granularity = "selective"  # --recompute-activations replaces the granularity (arguments.py)
    if not granularity:
        return "none"
    if " ".join(flags.get("--recompute-method", [])) == "block":
        raise InputError(
            f"{path}: --recompute-method block recomputes --recompute-num-layers layers of each stage, which "
            "netsweep does not model (it recomputes every layer or none); give --recompute full to price every layer"
        )
    if granularity == "full":
        if "--moe-layer-recompute" in flags:  # as Megatron-Core refuses it
            raise InputError(f"{path}: --moe-layer-recompute with --recompute-granularity full: give one")
        # Megatron-Core's TransformerConfig refuses full recomputation without a method and a layer count; uniform
        # recomputes every layer, in chunks of that many (a review: priced as if it ran)
        if "--recompute-method" not in flags or "--recompute-num-layers" not in flags:
            raise InputError(
                f"{path}: --recompute-granularity full without --recompute-method and --recompute-num-layers: "
                "Megatron-Core refuses it; give --recompute-method uniform --recompute-num-layers 1 (every layer)"
            )
        return "full"
    if granularity != "selective":
        raise InputError(f"{path}: --recompute-granularity {granularity!r}: must be full or selective")
    if "--recompute-method" in flags:  # as arguments.py refuses it
        raise InputError(f"{path}: --recompute-method with selective recomputation: Megatron-LM refuses it")
    modules = [MODULE_NAMES.get(m, m) for m in flags.get("--recompute-modules", [])] or ["core_attn"]
    if "--moe-layer-recompute" in flags and "moe" not in modules:
        modules.append("moe")
    mode = recompute_mode("+".join(modules))
    if mode is None:
        raise InputError(f"{path}: --recompute-modules {' '.join(modules)}: a module netsweep does not know")
    return mode


def _fsdp(path: str | os.PathLike[str], flags: dict[str, list[str]], settings: dict[str, str]) -> set[str]:
    """Set ``settings``' ZeRO stage where the command shards with Megatron-FSDP or PyTorch's FSDP2
    (:data:`FSDP_ZERO`); the names it stated."""
    if "--use-megatron-fsdp" in flags:
        strategy = " ".join(flags.get("--data-parallel-sharding-strategy", [])) or "optim_grads_params"
        if strategy not in FSDP_ZERO:
            raise InputError(
                f"{path}: --data-parallel-sharding-strategy {strategy!r}: must be one of {', '.join(FSDP_ZERO)} (a "
                "shell variable cannot be read here: write its value)"
            )
        settings["zero"] = FSDP_ZERO[strategy]
    elif "--use-torch-fsdp2" in flags:
        settings["zero"] = "3"
    else:
        return set()
    return {"zero"}


def _virtual_stages(
    path: str | os.PathLike[str], flags: dict[str, list[str]], settings: dict[str, str]
) -> set[str]:
    """Set ``settings``' model chunks a stage as Megatron-LM derives them (arguments.py): from
    --num-layers-per-virtual-pipeline-stage N, the stage's layers over N, where the command's --num-layers (one
    more each for --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split) splits
    evenly; with neither flag nor --num-virtual-stages-per-pipeline-rank, Megatron-LM's 1F1B (a hunt: sweep plan
    searched the interleaved schedule for a command that runs 1F1B). The names it stated."""
    if "--num-layers-per-virtual-pipeline-stage" not in flags:
        if "virtual_stages" in settings:
            return {"virtual_stages"}
        settings["virtual_stages"] = "1"
        return set()
    per_chunk = whole_number(" ".join(flags["--num-layers-per-virtual-pipeline-stage"]))
    layers = whole_number(" ".join(flags.get("--num-layers", [])))
    if per_chunk is None or per_chunk < 1 or layers is None or "virtual_stages" in settings:
        raise InputError(
            f"{path}: --num-layers-per-virtual-pipeline-stage needs one whole number and the command's --num-layers "
            "(and no --num-virtual-stages-per-pipeline-rank); or give --num-virtual-stages-per-pipeline-rank"
        )
    layers += sum(
        f in flags
        for f in ("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split")
    )
    pp = int(settings.get("pp", "1"))
    if layers % pp or (layers // pp) % per_chunk:
        raise InputError(
            f"{path}: {layers} layers over --pipeline-model-parallel-size {pp} in chunks of "
            f"--num-layers-per-virtual-pipeline-stage {per_chunk}: Megatron-LM needs them to divide evenly"
        )
    settings["virtual_stages"] = str(layers // pp // per_chunk)
    return {"virtual_stages"}


def _moe(
    flags: dict[str, list[str]], settings: dict[str, str], moe: bool, line_of: Callable[[str], str]
) -> set[str]:
    """Set ``settings``' MoE dispatcher, capacity, padding and MTP layers as a (``moe``) command gives them or
    Megatron-LM's defaults; the names it stated."""
    stated: set[str] = set()
    if moe and "--moe-token-dispatcher-type" not in flags:  # Megatron-LM's allgather: refused unless replaced
        settings["moe_dispatcher"] = "allgather"
    if "--moe-token-dispatcher-type" in flags:
        stated.add("moe_dispatcher")
        dispatcher = " ".join(flags["--moe-token-dispatcher-type"])
        if dispatcher not in MOE_DISPATCHERS:
            raise InputError(
                f"{line_of('--moe-token-dispatcher-type')}: --moe-token-dispatcher-type {dispatcher!r}: netsweep "
                f"models {' and '.join(MOE_DISPATCHERS)}"
            )
        settings["moe_dispatcher"] = dispatcher
    # The MoE capacity (a number, checked as the option of the same name is) and its padding (a hunt: both had
    # been listed as not used, the run priced dropless)
    if "--moe-expert-capacity-factor" in flags:
        factor = " ".join(flags["--moe-expert-capacity-factor"])
        # Megatron-Core reads a negative factor as dropless (transformer_config.py), as netsweep's 0
        settings["capacity_factor"] = "0" if _negative(factor) else factor
        stated.add("capacity_factor")
    if "--moe-pad-expert-input-to-capacity" in flags:
        settings["pad_to_capacity"] = "1"
        stated.add("pad_to_capacity")
    # A MoE command without --mtp-num-layers: Megatron-LM's default, None, no MTP layer (a review: DeepSeek-V3's
    # own depth had priced it)
    if moe:
        settings.setdefault("mtp_layers", "0")
    return stated


# The model's shape as a command gives it (Megatron-LM's flags), by the --arch key it is (sweep.model.llms).
SHAPE_FLAGS = {
    "--num-layers": "layers",
    "--hidden-size": "hidden",
    "--num-attention-heads": "heads",
    "--seq-length": "seq",
    "--num-experts": "experts",
    "--moe-router-topk": "top_k",
    "--ffn-hidden-size": "ffn",
    "--moe-ffn-hidden-size": "expert_ffn",
    "--num-query-groups": "kv_heads",
}


# Switches the shape's comparison reads (the key/value heads: query groups only with the first; none with latent
# attention's).
SHAPE_SWITCHES = ("--group-query-attention", "--multi-latent-attention")
# The flags read that take no value: a variable's expansion after one stands where flags go (a review: lost in
# silence), as it does after another's one value (--recompute-modules takes several).
SWITCHES = {*OVERLAP_FLAGS, *SHAPE_SWITCHES, "--sequence-parallel", "--use-distributed-optimizer", "--bf16"}
SWITCHES |= {"--fp16", "--moe-pad-expert-input-to-capacity", "--grad-reduce-in-bf16", "--use-torch-fsdp2"}
SWITCHES |= {"--accumulate-allreduce-grads-in-fp32", "--use-megatron-fsdp", "--recompute-activations"}
SWITCHES |= {"--moe-layer-recompute", "--account-for-embedding-in-pipeline-split"}
SWITCHES |= {"--account-for-loss-in-pipeline-split"}
# Every flag a setting or the shape's comparison reads, with the values it takes (None: several): two commands
# that differ in one are refused.
READ_FLAGS: dict[str, int | None] = {
    flag: 0 if flag in SWITCHES else None if flag == "--recompute-modules" else 1
    for flag in (*VALUED, *OVERLAP_FLAGS, *OTHER_USED, *SHAPE_FLAGS, *SHAPE_SWITCHES)
}


def _shape(flags: dict[str, list[str]]) -> dict[str, tuple[str, int]]:
    """The model shape a launch command's ``flags`` give (--arch key -> (what says it, the whole number)), where
    they give one: compared with ``--model``'s or ``--arch``'s (:func:`~sweep.analysis.layout_jobs.take_launch`)."""
    out = {}
    for flag, key in SHAPE_FLAGS.items():
        value = whole_number(" ".join(flags.get(flag, [])))
        if value is not None:
            out[key] = (f"{flag} {value}", value)
    # What Megatron-LM takes where a flag is left out (a review): top-2 routing (transformer_config.py's
    # moe_router_topk), and without --group-query-attention, a key/value head per head (its query groups read
    # only with it; latent attention has none to compare)
    if "experts" in out and "top_k" not in out:
        out["top_k"] = ("no --moe-router-topk (Megatron-LM's top-2 routing)", 2)
    if "--group-query-attention" not in flags:
        out.pop("kv_heads", None)
        if "heads" in out and "--multi-latent-attention" not in flags:
            out["kv_heads"] = ("no --group-query-attention (a key/value head per head)", out["heads"][1])
    return out


# What Megatron-LM's arguments.py refuses of the flags read here (validate_args), each as it says it.
REFUSED_WITHOUT = {
    "--tp-comm-overlap": (
        "--sequence-parallel",
        "TP communication overlaps its GEMMs only with sequence parallelism",
    ),
    "--overlap-param-gather": ("--overlap-grad-reduce", "--overlap-param-gather needs --overlap-grad-reduce"),
}
# The parallel sizes above 1 that Megatron-LM refuses with PyTorch's FSDP2 (validate_args: "--use-torch-fsdp2
# is not supported with pipeline parallelism", and expert; a hunt: FSDP2 at PP 2 was priced as if it ran).
FSDP2_REFUSED = {
    "--pipeline-model-parallel-size": "pipeline parallelism",
    "--expert-model-parallel-size": "expert parallelism",
}


def _refuse_what_megatron_refuses(flags: dict[str, list[str]], line_of: Callable[[str], str]) -> None:
    """Refuse what Megatron-LM refuses before it trains (a hunt: each priced as if it ran): a switch without the
    one it needs (:data:`REFUSED_WITHOUT`), --overlap-param-gather without a sharded optimizer, FSDP2 with
    pipeline or expert parallelism (:data:`FSDP2_REFUSED`), and --model-parallel-size, gone from Megatron-LM
    (tp was read as 1)."""
    for flag, (needed, why) in REFUSED_WITHOUT.items():
        if flag in flags and needed not in flags:
            raise InputError(f"{line_of(flag)}: {flag} without {needed}: Megatron-LM refuses it ({why})")
    sharded = ("--use-distributed-optimizer", "--use-megatron-fsdp")
    muon = (
        " ".join(flags.get("--optimizer", [])) == "dist_muon"
    )  # arguments.py takes it as a sharded optimizer
    if "--overlap-param-gather" in flags and not any(f in flags for f in sharded) and not muon:
        raise InputError(
            f"{line_of('--overlap-param-gather')}: --overlap-param-gather without --use-distributed-optimizer or "
            "--use-megatron-fsdp: Megatron-LM refuses it (no sharded parameters to gather)"
        )
    if "--use-torch-fsdp2" in flags and "--use-distributed-optimizer" in flags:
        raise InputError(
            f"{line_of('--use-torch-fsdp2')}: --use-torch-fsdp2 with --use-distributed-optimizer: Megatron-LM refuses "
            "it (FSDP2 shards the optimizer itself)"
        )
    for flag, parallelism in FSDP2_REFUSED.items():  # sizes checked whole numbers before
        if "--use-torch-fsdp2" in flags and int(flags.get(flag, ["1"])[0]) > 1:
            raise InputError(
                f"{line_of(flag)}: --use-torch-fsdp2 with {flag} {flags[flag][0]}: Megatron-LM refuses it "
                f"(--use-torch-fsdp2 is not supported with {parallelism})"
            )
    if flags.get("--tensor-model-parallel-size") == ["1"] and "--tp-comm-overlap" in flags:
        raise InputError(
            f"{line_of('--tp-comm-overlap')}: --tp-comm-overlap at --tensor-model-parallel-size 1: Megatron-LM turns "
            "sequence parallelism off at TP 1 and then refuses it"
        )
    uneven = [
        f for f in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers") if f in flags
    ]
    if uneven:
        raise InputError(
            f"{line_of(uneven[0])}: {uneven[0]} places layers on stages unevenly, which netsweep does not model; "
            "leave it out to price even stages"
        )
    if "--pipeline-model-parallel-layout" in flags:
        raise InputError(
            f"{line_of('--pipeline-model-parallel-layout')}: --pipeline-model-parallel-layout places layers on stages "
            "unevenly, which netsweep does not model; give --schedule interleaved:V (V = its stages / PP) to price "
            "even stages"
        )
    if "--virtual-pipeline-model-parallel-size" in flags:  # Megatron-LM's flag from dd88906 to dcef906 only
        raise InputError(
            f"{line_of('--virtual-pipeline-model-parallel-size')}: --virtual-pipeline-model-parallel-size has not been "
            "a Megatron-LM flag since February 2021 (it refuses it): give --num-virtual-stages-per-pipeline-rank"
        )
    if "--model-parallel-size" in flags:
        raise InputError(
            f"{line_of('--model-parallel-size')}: --model-parallel-size is no longer a Megatron-LM flag (it refuses "
            "it): give --tensor-model-parallel-size"
        )


def read_launch(path: str | os.PathLike[str]) -> Launch:
    """The sweep settings a launch command gives ({parameter: value text}), the flags it does not use, and the
    settings that are Megatron-LM's defaults for what it leaves out."""
    lines = script_lines(path)
    flags, any_words, used = training_command(path, lines, READ_FLAGS)
    code = uncommented(lines)

    def line_of(flag: str) -> str:
        """The file's last line that gives the flag (argparse keeps the last; not a comment naming it, nor a
        longer flag it begins, nor a line the command's words do not come from, another command's or an
        array's it does not expand: a hunt's and a review's refusals pointed at such lines), for the
        message."""
        given = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")
        numbers = [i for i, line in enumerate(code, 1) if (used is None or i in used) and given.search(line)]
        return where(path, numbers[-1] if numbers else None)

    settings: dict[str, str] = {}
    unused = []
    if not set(flags) & (set(VALUED) | set(OVERLAP_FLAGS) | OTHER_USED):
        raise InputError(
            f"{path}: {'no command in it' if not any_words else 'no flag netsweep reads'}; expected a Megatron-LM "
            f"launch command (pretrain_gpt.py --tensor-model-parallel-size T ...)"
        )
    for flag, values in flags.items():
        if flag in VALUED:
            if len(values) != 1 or whole_number(values[0]) is None:
                given = " ".join(values) or "nothing"
                raise InputError(
                    f"{line_of(flag)}: {flag} {given!r}: give one whole number in ASCII digits (a shell "
                    f"variable cannot be read here), or leave the flag out and give {option_of(VALUED[flag])}"
                )
            # refused as the command gives it (its netsweep option had been named, as if typed)
            spec, value = AXES.get(VALUED[flag]), int(values[0])
            rule = "must be a whole number from 1" if VALUED[flag] == "virtual_stages" and value < 1 else None
            if spec is not None and not spec.allows(value):
                rule = spec.rule()
            if rule is not None:
                raise InputError(f"{line_of(flag)}: {flag} {values[0]}: {rule}")
            settings[VALUED[flag]] = values[0]
        elif flag not in (*OVERLAP_FLAGS, *OTHER_USED, *SHAPE_FLAGS, *SHAPE_SWITCHES):
            unused.append(flag)
    stated = set(settings)
    for name in PARALLEL_SIZES:  # Megatron-LM's default size of a parallel dim the command leaves out
        settings.setdefault(name, "1")
    # A mixture-of-experts command: its experts (Megatron-LM needs --num-experts) or more than one expert group.
    moe = "--num-experts" in flags or int(settings["ep"]) > 1
    if moe:  # Megatron-LM's expert TP where the command leaves it out is the TP size (its arguments.py)
        settings.setdefault("expert_tp", settings["tp"])
    settings["recompute"] = _recompute(path, flags)
    stated |= (
        {"recompute"} if settings["recompute"] != "none" or "--recompute-granularity" in flags else set()
    )
    for name, flag in STATED_BY.items():
        settings[name] = "1" if flag in flags else "0"
        stated |= {name} if flag in flags else set()
    stated |= _fsdp(path, flags, settings) | _virtual_stages(path, flags, settings)
    stated |= _grad_bytes(flags, settings)
    switches = [OVERLAP_FLAGS[f] for f in OVERLAP_FLAGS if f in flags]
    settings["overlap"] = "+".join(s for s in OVERLAP_SWITCHES if s in switches) or "none"
    stated |= {"overlap"} if switches else set()
    stated |= _moe(flags, settings, moe, line_of)
    _refuse_what_megatron_refuses(flags, line_of)
    if "--fp8-format" in flags:
        settings["precision"] = "fp8"
    elif "--fp16" in flags:
        settings["precision"] = "fp16"
    elif "--bf16" in flags:
        settings["precision"] = "bf16"
    stated |= {"precision"} & set(settings)
    # none: Megatron-LM's fp32 parameters (arguments.py), not modelled: refused unless --precision replaces it
    settings.setdefault("precision", "fp32")
    return Launch(settings, unused, frozenset(settings) - stated, _shape(flags))
