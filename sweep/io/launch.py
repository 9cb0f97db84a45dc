"""A Megatron-LM launch command read from a file: the layout settings it gives, as ``sweep`` options.

``sweep plan --launch train.sh`` (and ``grid``) takes the parallel layout from the flags of a
``pretrain_gpt.py`` command line (a script, or the command alone; ``\\`` continuations, ``#``
comments outside quotes, and the flags in bash arrays as Megatron-LM's example scripts keep them,
``MODEL_PARALLEL_ARGS=( ... )``, are fine: a flag's values end at the end of its line or a shell operator,
``(``, ``)``, ``;``, ``&&``, ``|``, a redirection). A flag below whose value is not a whole number (``eight``, a shell variable
``$TP``) is refused, naming the flag and the file's line: netsweep cannot know its value, and
Megatron-LM's default in its place would be a silent guess. So is a file that gives none of them:

    --tensor-model-parallel-size T     --tp T
    --pipeline-model-parallel-size P   --pp P
    --context-parallel-size C          --cp C
    --expert-model-parallel-size E     --ep E
    --expert-tensor-parallel-size X    --expert-tp X (left out of a MoE command, --num-experts or EP > 1: the TP)
    --virtual-pipeline-model-parallel-size V   --schedule interleaved:V
    --micro-batch-size B, --global-batch-size G, --cpu-offloading-num-layers N
    --recompute-granularity full|selective [--recompute-modules m ...]   --recompute
    --sequence-parallel                --sequence-parallel 1 (else 0 where TP > 1)
    --use-distributed-optimizer        --zero 1
    --overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap,
    --overlap-moe-expert-parallel-comm --overlap (the switches given; none when none is)
    --fp8-format ..., --bf16, --fp16   --precision fp8, bf16, fp16
    --grad-reduce-in-bf16              --grad-bytes 2 with --bf16 (else 4: Megatron-LM's fp32 main_grad)
    --accumulate-allreduce-grads-in-fp32   --grad-bytes 4 with --fp16 (else 2: fp16 gradients)
    --moe-token-dispatcher-type alltoall|flex   --moe-dispatcher (its allgather is not modelled: refused,
                                       and so is a MoE command that leaves it out, allgather being its default)

A parallel size the command leaves out is Megatron-LM's default, 1; what the command leaves out is
Megatron-LM's default, which an option given beside ``--launch`` replaces (what the command states, an
option may not). Every other flag (the model's
shape, the optimizer, data, logging) is listed as not used: the model comes from ``--model`` or
``--arch``. Pure Python: no JAX.
"""

import os
import shlex
from typing import NamedTuple

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.layout_axes import recompute_mode
from netsweep_jax.sweep.core.schema import option_of
from netsweep_jax.sweep.core.sweep_settings import MOE_DISPATCHERS, OVERLAP_SWITCHES
from netsweep_jax.sweep.core.textfile import read_lines
from netsweep_jax.sweep.core.values import decimal, whole_number

# Flags that take a value, and the sweep parameter it sets.
VALUED = {
    "--tensor-model-parallel-size": "tp",
    "--pipeline-model-parallel-size": "pp",
    "--context-parallel-size": "cp",
    "--expert-model-parallel-size": "ep",
    "--expert-tensor-parallel-size": "expert_tp",
    "--virtual-pipeline-model-parallel-size": "virtual_stages",
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
}
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
    settings["grad_bytes"] = "4"
    return set()


MODULE_NAMES = {"mla_up_proj": "up_proj"}  # Megatron-Core's module name where ours is shorter
OPERATOR_CHARS = "();<>|&"  # shlex's punctuation: a word of these ends a command (or redirects)
PARALLEL_SIZES = ("tp", "pp", "cp", "ep")


class Launch(NamedTuple):
    """A launch command's settings ({parameter: value text}), the flags it does not use, and which of the
    settings are Megatron-LM's defaults for what it leaves out (an option given beside it replaces those)."""

    settings: dict[str, str]
    unused: list[str]
    defaulted: frozenset[str]


def _words(text: str) -> list[str]:
    """A logical line's shell words, the shell's operators (``(``, ``)``, ``;``, ``|``, ``&&``, ``>`` ...) words of
    their own: a ``#`` outside quotes starts a comment; ValueError where a quote is left open."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _commands(path: str | os.PathLike[str], lines: list[str]) -> list[list[str]]:
    """The file's commands as shell words: ``\\`` continues a line, ``#`` outside quotes starts a comment, a
    quote may span lines; each command's words end where its line or a shell operator does (a bash array's
    ``(`` and ``)``, ``;``, ``|``, ``&&``); a redirection (``> log``, ``2>&1``) is no word of it."""
    out: list[list[str]] = []
    pending = ""
    for line in lines:
        if line.lstrip().startswith("#") and not pending:  # a comment line: its trailing \\ continues nothing
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        pending += line
        try:
            words = _words(pending)
        except ValueError:  # a quote open at the line's end: it goes on
            pending += "\n"
            continue
        pending = ""
        command: list[str] = []
        skip = False
        for k, word in enumerate(words):
            operator = word[0] in OPERATOR_CHARS
            redirect = operator and (word[0] in "<>" or word.startswith("&>"))
            if skip or (word.isdigit() and k + 1 < len(words) and words[k + 1] in (">&", "<&")):
                skip = (
                    False  # a redirection's target, or the descriptor it copies (2>&1; 8 > log keeps its 8)
                )
            elif operator:
                out.append(command)
                command, skip = [], redirect
            else:
                command.append(word)
        out.append(command)
    if pending.strip():
        raise InputError(f"{path}: not a command line (a quote is never closed)")
    return [c for c in out if c]


def _negative(text: str) -> bool:
    """Whether ``text`` is a number below 0 by the one rule for a number a user writes (:func:`decimal`); any
    other text is left to its option's own check."""
    try:
        return decimal(text) < 0
    except ValueError:
        return False


def _flags(path: str | os.PathLike[str], lines: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Each flag of the file's commands with the words after it in its command, and every word."""
    flags: dict[str, list[str]] = {}
    words = []
    for command in _commands(path, lines):
        current = None  # a flag's values end with its command
        for word in command:
            words.append(word)
            if word.startswith("--"):
                current = word.split("=", 1)[0]
                flags[current] = [word.split("=", 1)[1]] if "=" in word else []
            elif current is not None:
                flags[current].append(word)
    return flags, words


def _recompute(path: str | os.PathLike[str], flags: dict[str, list[str]]) -> str:
    """--recompute's mode of the command's --recompute-granularity (and modules); none where it has none."""
    if "--recompute-granularity" not in flags:
        return "none"
    granularity = " ".join(flags["--recompute-granularity"])
    if granularity == "full":
        return "full"
    if granularity != "selective":
        raise InputError(f"{path}: --recompute-granularity {granularity!r}: must be full or selective")
    modules = [MODULE_NAMES.get(m, m) for m in flags.get("--recompute-modules", [])] or ["core_attn"]
    mode = recompute_mode("+".join(modules))
    if mode is None:
        raise InputError(f"{path}: --recompute-modules {' '.join(modules)}: a module netsweep does not know")
    return mode


def read_launch(path: str | os.PathLike[str]) -> Launch:
    """The sweep settings a launch command gives ({parameter: value text}), the flags it does not use, and the
    settings that are Megatron-LM's defaults for what it leaves out."""
    lines = read_lines(path, "launch command")

    def line_of(
        flag: str,
    ) -> str:  # the file's line that gives the flag (not a comment naming it), for the message
        number = next((i for i, line in enumerate(lines, 1) if flag in line.split("#", 1)[0]), None)
        return where(path, number)

    flags, words = _flags(path, lines)
    settings: dict[str, str] = {}
    unused = []
    if not set(flags) & (set(VALUED) | set(OVERLAP_FLAGS) | OTHER_USED):
        raise InputError(
            f"{path}: {'no command in it' if not words else 'no flag netsweep reads'}; expected a Megatron-LM "
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
            settings[VALUED[flag]] = values[0]
        elif flag not in OVERLAP_FLAGS and flag not in OTHER_USED:
            unused.append(flag)
    stated = set(settings)
    for name in PARALLEL_SIZES:  # Megatron-LM's default size of a parallel dim the command leaves out
        settings.setdefault(name, "1")
    # A mixture-of-experts command: its experts (Megatron-LM needs --num-experts) or more than one expert group.
    moe = "--num-experts" in flags or int(settings["ep"]) > 1
    if moe:  # Megatron-LM's expert TP where the command leaves it out is the TP size (its arguments.py)
        settings.setdefault("expert_tp", settings["tp"])
    settings["recompute"] = _recompute(path, flags)
    stated |= {"recompute"} if "--recompute-granularity" in flags else set()
    for name, flag in STATED_BY.items():
        settings[name] = "1" if flag in flags else "0"
        stated |= {name} if flag in flags else set()
    stated |= _grad_bytes(flags, settings)
    switches = [OVERLAP_FLAGS[f] for f in OVERLAP_FLAGS if f in flags]
    settings["overlap"] = "+".join(s for s in OVERLAP_SWITCHES if s in switches) or "none"
    stated |= {"overlap"} if switches else set()
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
    if "--fp8-format" in flags:
        settings["precision"] = "fp8"
    elif "--fp16" in flags:
        settings["precision"] = "fp16"
    elif "--bf16" in flags:
        settings["precision"] = "bf16"
    stated |= {"precision"} & set(settings)
    return Launch(settings, unused, frozenset(settings) - stated)
