"""A launch file read as bash reads it: its lines, comments, words, variables and arrays, the commands it runs
(a shell's ``-c`` string's too), and the one training command netsweep prices
(:func:`training_command`). :mod:`sweep.io.launch` reads that command's Megatron-LM flags. Pure Python.

Bash's keywords (``then``, ``do``, ``{`` ...) and declaration builtins (``export``, ``declare -a`` ...) lead
a command or an assignment without being it. An ``if`` whose test the file decides (``DTYPE=fp8`` then
``if [[ "$DTYPE" == "fp8" ]]``: :meth:`_Script._holds`) runs its one branch; any other block's commands may
run or not. Where a flag variable's value cannot be told from the file, the training command is refused,
never guessed: one a block gives other flags netsweep reads (:meth:`_Script._set`), and a ``$NAME`` left in
the command unexpanded where it may stand for flags (:func:`_refuse_unread`)."""

import os
import re
import shlex
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import NamedTuple

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.textfile import read_lines

OPERATOR_CHARS = "();<>|&"  # shlex's punctuation: a word of these ends a command (or redirects)
WORD_BREAKS = " \t" + OPERATOR_CHARS  # a word starts after one of these (or at a line's start)


def script_lines(path: str | os.PathLike[str]) -> list[str]:
    """The file's physical lines: UTF-8 (a byte-order mark allowed), or where a byte is not UTF-8, that byte
    as U+FFFD (a hunt: one Latin-1 ``café`` in a data path refused the whole file as not text, where the flags
    netsweep reads are ASCII; U+FFFD, unlike a lone surrogate, prints in a message). A file with a NUL byte is
    not text (a binary given in its place), valid UTF-8 or not (a review: one that was had been read):
    refused."""
    lines = read_lines(path, "launch command", replace=True)
    if any("\0" in line for line in lines):  # (a NUL byte decodes as itself: its offset read only to say it)
        at = Path(path).read_bytes().index(b"\0")
        raise InputError(f"{path}: not a text file (a NUL byte at byte {at}); expected a launch command")
    return lines


def _uncomment(line: str, quote: str) -> tuple[str, str]:
    """``line`` less its comment as bash reads one, and the quote open at its end ('' where none; ``quote`` is
    the one open at its start: a quote may span lines). A ``#`` starts a comment at a word's start only,
    outside quotes and unescaped: ``llama3-8b#tp4-pp2``, ``/data/web#shard0`` and ``${#GPUS[@]}`` are words (a
    hunt: shlex's comments had cut the command there, its flags after lost)."""
    k = 0
    while k < len(line):
        char = line[k]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                k += 1  # an escaped character in double quotes (\" ends nothing)
        elif char in "'\"":
            quote = char
        elif char == "\\":
            k += 1
        elif char == "#" and (k == 0 or line[k - 1] in WORD_BREAKS):
            return line[:k], ""
        k += 1
    return line, quote


def uncommented(lines: list[str]) -> list[str]:
    """The physical lines less their comments (:func:`_uncomment`): a line's comment ends with it, its
    trailing ``\\`` continuing nothing, as in bash."""
    quote, out = "", []
    for line in lines:
        text, quote = _uncomment(line, quote)
        out.append(text)
    return out


# Redirections, wherever in a command they stand (bash reads the words after a redirection's target as the same
# command's: `pretrain_gpt.py > log --tensor-model-parallel-size 4` had lost its TP, a review).
REDIRECTIONS = (">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<>")


def _descriptor(words: list[str], k: int) -> bool:
    """Whether ``words[k]`` is the file descriptor a redirection after it redirects (``2>err.log``): a number
    right before a redirection, but a flag's value after the flag (``--micro-batch-size 1 > log``: shlex keeps
    no spaces to tell them apart, and a value is what a flag there takes)."""
    before = words[k - 1] if k else ""
    return (
        words[k].isdigit()
        and k + 1 < len(words)
        and words[k + 1] in REDIRECTIONS
        and not before.startswith("--")
    )


def _operator(word: str) -> bool:
    """Whether ``word`` is a shell operator (shlex's punctuation: ``(``, ``;``, ``&&``, ``|``, ``2>&1``'s
    ``>&``)."""
    return bool(word) and set(word) <= set(OPERATOR_CHARS)


def _backticked(text: str) -> str:
    """``text`` with each backtick substitution outside quotes (``run-`hostname | cut -d. -f1```) put in
    double quotes, its ``\\`` and ``"`` escaped: one word, as bash reads it and as ``$(...)`` is read (a
    review: its ``|`` had ended the command, the flags after it lost)."""
    out, quote, k = [], "", 0
    while k < len(text):
        char, end = text[k], k + 1
        if quote:
            quote = "" if char == quote else quote
            end += char == "\\" and quote == '"'  # \" in double quotes ends nothing
        elif char in "'\"":
            quote = char
        elif char == "\\":
            end += 1
        elif char == "`" and "`" in text[end:]:
            end = text.index("`", end) + 1
            out.append('"' + text[k:end].replace("\\", "\\\\").replace('"', '\\"') + '"')
            k = end
            continue
        out.append(text[k:end])
        k = end
    return "".join(out)


def _words(text: str) -> list[str]:
    """A logical line's shell words, the shell's operators words of their own (``(`` and ``)`` one each:
    ``);`` is two; a backtick substitution's none, :func:`_backticked`); ValueError where a quote is left
    open. Comments are gone before (:func:`uncommented`): shlex's own take a ``#`` inside a word for one."""
    lexer = shlex.shlex(_backticked(text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return [
        part for word in lexer for part in (re.findall(r"[()]|[^()]+", word) if _operator(word) else [word])
    ]


def _substituted(words: list[str]) -> list[str]:
    """``words`` with each command substitution (``$(date +%s)``, ``$((N * 8))``) joined to the word it is
    in: its parentheses end no command (``--wandb-exp-name run-$(date) --tensor-model-parallel-size 4`` is
    one)."""
    out: list[str] = []
    depth = 0
    for word in words:
        if depth:
            depth += (word == "(") - (word == ")")
            out[-1] += word if word in ("(", ")") or out[-1].endswith("(") else f" {word}"
        elif word == "(" and out and out[-1].endswith("$") and not _operator(out[-1]):
            out[-1] += word
            depth = 1
        else:
            out.append(word)
    return out


def _logical_lines(path: str | os.PathLike[str], lines: list[str]) -> list[tuple[range, list[str]]]:
    """The logical lines of ``lines`` (comments gone: ``\\`` continues a line, a quote may span lines) as
    shell words and operators (:func:`_words`), each with the file's lines it spans (from 1)."""
    out: list[tuple[range, list[str]]] = []
    pending, first = "", 1
    for number, line in enumerate(lines, 1):
        pending += line
        if line.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1] + " "
            continue
        try:
            words = _words(pending)
        except ValueError:  # a quote open at the line's end: it goes on
            pending += "\n"
            continue
        out.append((range(first, number + 1), _substituted(words)))
        pending, first = "", number + 1
    if pending.strip():
        try:  # a file that ends in a continued line
            out.append((range(first, len(lines) + 1), _substituted(_words(pending))))
        except ValueError:
            raise InputError(f"{path}: not a command line (a quote is never closed)") from None
    return out


ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<append>\+?)=(?P<value>.*)$", re.DOTALL)
# A word that is one variable's expansion: $NAME, ${NAME}, ${NAME[@]} or ${NAME[*]} (quoted or not: shlex has
# taken the quotes off).
REFERENCE = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:\[[@*]\])?\})"
)
# A word that is one variable's expansion of any form (${NAME:-x}, ${NAME[1]} too): one not expanded may hold
# flags (:func:`_refuse_unread`). The script's arguments ("$@", $1) are not the file's: it is read as run
# without them (ARGUMENTS: dropped where expanded, a review: a trailing "$@" had been read as a flag's value).
ARGUMENTS = re.compile(r"\$(?:[@*1-9]|\{[@*1-9]\})")
EXPANSION = re.compile(r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)[^}]*\})")
# Commands whose words are text, never flags a command is given: an echo's "--tp-comm-overlap is off" (a review).
TEXT_COMMANDS = ("echo", "printf", ":")
SHELLS = ("bash", "sh", "dash", "zsh", "ksh")  # whose -c STRING runs STRING's commands
SHELL_OPTIONS_WITH_A_VALUE = ("-o", "+o", "-O", "+O")
# A Megatron-LM training entry (pretrain_gpt.py, pretrain_mamba.py, ...): the command a file is priced by.
TRAINING_ENTRY = re.compile(r"pretrain_\w+\.py")
# Words that lead a command without being it (a review: an assignment after ``then`` or ``do`` was read as a
# command, its flags lost): bash's keywords, of which some open or close a block whose commands may run or not
# (or run again), and some are followed by a list (a loop's words, a case's word) that is no command.
KEYWORDS: tuple[str, ...] = (
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "for",
    "while",
    "until",
    "do",
    "done",
    "case",
    "esac",
)
KEYWORDS += ("select", "{", "}", "!", "time")
OPENERS, CLOSERS = ("if", "for", "while", "until", "case", "select"), ("fi", "done", "esac")
LISTS = ("for", "case", "select")
TESTS = ("=", "==", "!=")  # an if's test netsweep decides (:meth:`_Script._holds`)
# Builtins whose words are assignments (``export MP="--tensor-model-parallel-size 4"``, ``declare -a ARR=(``)
# after their options: no command run.
DECLARATIONS = ("export", "declare", "typeset", "local", "readonly")
LOGIC = ("&&", "||")  # the command after one may run or not


def _lead(words: list[str]) -> int:
    """How many of a command's first ``words`` lead it without being it: keywords (:data:`KEYWORDS`), then a
    declaration builtin (:data:`DECLARATIONS`) with its options."""
    k = 0
    while k < len(words) and words[k] in KEYWORDS:
        k += 1
    if k < len(words) and words[k] in DECLARATIONS:
        k += 1
        while k < len(words) and words[k][:1] in ("-", "+"):
            k += 1
    return k


def _array_head(words: list[str]) -> bool:
    """Whether ``words``, before a ``(``, start an array's assignment: ``NAME=``, ``NAME+=``, after the words
    that lead a command (``then MP+=(``, ``declare -a ARR=(``)."""
    return (
        bool(words)
        and words[-1].endswith("=")
        and bool(ASSIGNMENT.match(words[-1]))
        and (_lead(words) == len(words) - 1)
    )


def _shell_string(words: list[str]) -> tuple[int, str] | None:
    """Where ``words`` run a shell's ``-c STRING`` (``srun ... bash -c "cd /w && python pretrain_gpt.py
    ..."``, ``sh -lc '...'``): the shell's place in them and the string; None where they run none."""
    for at, word in enumerate(words):
        if os.path.basename(word) not in SHELLS:
            continue
        k = at + 1
        while k + 1 < len(words) and words[k][:1] in ("-", "+") and words[k] != "--":
            if words[k][0] == "-" and not words[k].startswith("--") and "c" in words[k][1:]:
                return at, words[k + 1]
            k += 2 if words[k] in SHELL_OPTIONS_WITH_A_VALUE else 1
    return None


def flag_values(commands: list[list[str]]) -> dict[str, list[str]]:
    """Each flag of ``commands`` with the words after it in its command (a flag's values end with its command;
    a flag given twice keeps its last, as argparse does)."""
    flags: dict[str, list[str]] = {}
    for command in commands:
        current = None
        for word in command:
            if word.startswith("--"):
                current = word.split("=", 1)[0]
                flags[current] = [word.split("=", 1)[1]] if "=" in word else []
            elif current is not None:
                flags[current].append(word)
    return flags


class _Run(NamedTuple):
    """A command the file runs: its words, variables expanded, the file's lines it spans, the lines its words
    come from (its own and its variables' assignments), and the variables it expands whose flags a block may
    change (:meth:`_Script._set`: the variable and its line)."""

    words: list[str]
    lines: range
    sources: frozenset[int]
    doubts: tuple[tuple[str, int], ...]


class _Array(NamedTuple):
    """An array being assigned: its ``NAME=`` or ``NAME+=``, its items so far, its first line, and whether
    it is assigned (:meth:`_Script._state`: ``run``, ``open`` where it may be or not, ``skip`` where not)."""

    head: str
    items: list[str]
    first: int
    state: str


class _Script:
    """A launch file read as bash runs it: the commands it runs (:attr:`runs`), each with the flag variables
    and arrays assigned before it expanded (``$GPT_ARGS``, ``${MODEL_ARGS[@]}``, as Megatron-LM's examples
    keep their flags), and those variables (:attr:`variables`: name -> words). ``reads``: the flags whose
    values a block's assignment may not change unsaid (:meth:`_set`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        reads: Collection[str],
        parent: "_Script | None" = None,
        at: range | None = None,
    ) -> None:
        self.path, self.reads = path, reads
        self.variables: dict[str, list[str]] = dict(parent.variables) if parent else {}
        # the lines each one's value comes from (its assignments', and those of the variables it expands)
        self.sources: dict[str, frozenset[int]] = dict(parent.sources) if parent else {}
        self.doubts: dict[str, tuple[str, int]] = dict(parent.doubts) if parent else {}
        self.known: dict[str, str] = dict(parent.known) if parent else {}  # a word each, assigned for sure
        # the names assigned flags, and those assigned a value without one, anywhere (a -c string's too)
        self.flagged: set[str] = parent.flagged if parent else set()
        self.plain: set[str] = parent.plain if parent else set()
        # the blocks open (if, case, loops): open (their commands may run or not, or again), run (an if's
        # branch whose test holds), skip (one whose test fails), done (after a branch that ran; in a skipped
        # one)
        self.blocks: list[str] = list(parent.blocks) if parent else []
        self.logic: bool = parent.logic if parent else False  # whether the command is after && or ||
        self.runs: list[_Run] = []
        self.array: _Array | None = None
        self.at = at  # the file's lines a shell's -c string stands in

    def read(self, lines: list[str]) -> "_Script":
        """Read ``lines`` (physical lines) in order; this script."""
        for span, words in _logical_lines(self.path, uncommented(lines)):
            self._line(words, self.at or span)
        return self

    def _line(self, words: list[str], span: range) -> None:
        """One logical line's words: a command ends at an operator (``;``, ``&&``, ``|``) and at the line's end;
        a redirection (and its target, and the descriptor it redirects) is no word of it, wherever it stands; an array's items (``NAME=(`` ... ``)``) are no
        command."""
        command: list[str] = []
        skip = False
        for k, word in enumerate(words):
            if self.array is not None:
                if word == ")":
                    self._close_array(span)
                else:
                    self.array.items.append(word)
            elif word == "(" and _array_head(command):
                self._command(command[:-1], span)  # the words that lead it (then MP+=( turns no block)
                self.array, command = _Array(command[-1], [], span.start, self._state()), []
            elif skip or _descriptor(words, k):
                # a redirection's target, or the descriptor it redirects (2>&1, 2>err.log)
                skip = False
            elif word in REDIRECTIONS:  # anywhere in a command, which goes on after its target (a review)
                skip = True
            elif _operator(word):
                self._command(command, span, word)
                command, skip = [], word[0] in "<>" or word.startswith("&>")
                self.logic = word in LOGIC
            else:
                command.append(word)
        if self.array is None:
            self._command(command, span)
            self.logic = bool(words) and words[-1] in LOGIC  # a line ending in && goes on on the next

    def _state(self) -> str:
        """Whether the command read now runs: ``skip`` in a branch that does not, ``open`` where it may or not
        (or again: in a block, after ``&&`` or ``||``), else ``run``."""
        if any(block in ("skip", "done") for block in self.blocks):
            return "skip"
        return "open" if "open" in self.blocks or self.logic else "run"

    def _keyword(self, word: str, test: list[str]) -> None:
        """Open, turn or close a block at keyword ``word`` (``test``: an ``if``'s or ``elif``'s test, where
        its command is one: :meth:`_holds`)."""
        holds = {True: "run", False: "skip", None: "open"}[self._holds(test)]
        if word in OPENERS:
            self.blocks.append("done" if self._state() == "skip" else holds if word == "if" else "open")
        elif word in ("elif", "else") and self.blocks:
            turned = {
                "run": "done",
                "done": "done",
                "skip": holds if word == "elif" else "run",
                "open": "open",
            }
            self.blocks[-1] = turned[self.blocks[-1]]
        elif word in CLOSERS and self.blocks:
            self.blocks.pop()

    def _holds(self, test: list[str]) -> bool | None:
        """Whether an if's test holds where the file tells: ``[ A = B ]``, ``[[ A == B ]]``, ``test A != B``,
        each side a word or a variable assigned one for sure (``DTYPE="fp8"`` then
        ``if [[ "$DTYPE" == "fp8" ]]``, as Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh chooses
        its flags); None elsewhere."""
        test = ["[", *test[1:], "]"] if test[:1] == ["test"] else test
        if len(test) != 5 or (test[0], test[4]) not in (("[", "]"), ("[[", "]]")) or test[2] not in TESTS:
            return None
        sides = [self._word(side) for side in (test[1], test[3])]
        return None if None in sides else (sides[0] == sides[1]) == (test[2] != "!=")

    def _word(self, word: str) -> str | None:
        """``word`` as a test compares it: a variable's known word (:attr:`known`), or itself where it expands
        nothing and is no pattern; None where that cannot be told."""
        reference = REFERENCE.fullmatch(word)
        if reference:
            return self.known.get(reference["bare"] or reference["braced"])
        return None if any(char in word for char in "$`*?[") else word

    def _command(self, words: list[str], span: range, end: str = "") -> None:
        """One simple command (ended by operator ``end``): less the words that lead it (keywords, which open,
        turn and close blocks; a declaration builtin, whose words are assignments alone), and unless a branch
        that does not run holds it, assignments alone set variables (:meth:`_assign`); else, less its leading
        assignments (its own environment), a command run, unless its words are text (``echo``). A shell's
        ``-c`` string is read as commands (a hunt: ``srun ... bash -c "... pretrain_gpt.py
        --tensor-model-parallel-size 4 ..."`` gave no flag), after the launcher that starts it (``srun
        ...``)."""
        lead = _lead(words)
        for k in range(lead):  # an if's test is the command, ended by ; or the line (not && or |)
            self._keyword(words[k], words[k + 1 :] if end in ("", ";") else [])
        if set(words[:lead]) & set(LISTS):  # a loop's words (its variable's value not known), a case's word
            self.known.pop(words[lead] if lead < len(words) else "", None)
            return
        if self._state() == "skip":
            return
        declared = bool(set(words[:lead]) & set(DECLARATIONS))
        words = words[lead:]
        matches = [ASSIGNMENT.match(word) for word in words]
        if declared or None not in matches:  # assignments alone (or no word; a declaration's names)
            for assigned in filter(None, matches):
                self._assign(assigned, span)
            return
        run = words[matches.index(None) :]
        if run[0] in TEXT_COMMANDS:
            return
        string = _shell_string(run)
        self.runs.append(self._run(run if string is None else run[: string[0] + 1], span))
        if string is not None:  # its variables those assigned before: the caller's double quotes expand them
            self.runs += _Script(self.path, self.reads, self, span).read(string[1].split("\n")).runs

    def _run(self, words: list[str], span: range) -> _Run:
        """A command run of ``words``, on the file's lines ``span``: its variables expanded."""
        expanded, used = self._expand(words)
        sources = frozenset(span).union(*(self.sources.get(name, frozenset()) for name in used))
        return _Run(expanded, span, sources, tuple(self.doubts[n] for n in sorted(used) if n in self.doubts))

    def _assign(self, assigned: re.Match[str], span: range) -> None:
        """Set a variable as bash does where it holds flags (``GPT_ARGS="--tensor-model-parallel-size 2
        ..."``, ``VAR+=" --flags"``, ``VAR="$VAR --flags"``, as Megatron-LM's
        examples/rl/model_configs/common.sh builds them); another (``TP=4``: branches may set it, and one
        would be a silent guess) is not read, its ``$TP`` a value refused where a flag's, its word kept for an
        if's test where it is assigned for sure (:attr:`known`)."""
        name, value = assigned["name"], assigned["value"].split()
        if self._state() == "run" and not assigned["append"] and not set(assigned["value"]) & set("$`"):
            self.known[name] = assigned["value"]
        else:
            self.known.pop(name, None)
        if name not in self.variables and value[:1] in ([f"${name}"], [f"${{{name}}}"]):
            value = value[1:]  # its own earlier value, unset here: nothing
        words, used = self._expand(value)
        self._set(name, words, used, span, (self._state() == "open", bool(assigned["append"])))
        if self.variables[name] and not any(w.startswith("--") for w in self.variables[name]):
            self.variables.pop(name)

    def _close_array(self, span: range) -> None:
        """The array being assigned ends (its ``)``, on ``span``): set it, unless in a branch not run."""
        assert self.array is not None
        head, items, first, state = self.array
        self.array = None
        if state == "skip":
            return
        name, append = head.rstrip("+="), head.endswith("+=")
        self.known.pop(name, None)
        words, used = self._expand(items)
        self._set(name, words, used, range(first, span.stop), (state == "open", append))

    def _set(self, name: str, words: list[str], used: set[str], lines: range, how: tuple[bool, bool]) -> None:
        """Set variable ``name`` to ``words`` (expanding the variables ``used``), assigned on ``lines``;
        ``how``: whether where it may run or not (:meth:`_state`'s ``open``), and whether after its own value
        (``+=``). Where such an assignment gives flags netsweep reads (:attr:`reads`) other than the
        variable's value before it (an if/else's branches, a loop's ``+=``, a ``[ ... ] && VAR=...``), which
        the command gets cannot be told: the variable is in doubt, and so is one assigned from it (a review:
        the last branch's had been read in silence), until an assignment that runs for sure."""
        (conditional, append), before = how, self.variables.get(name, [])
        value, used = (before if append else []) + words, used | ({name} if append else set())
        doubt = next((self.doubts[n] for n in sorted(used) if n in self.doubts), None)
        if conditional and self._read(value) != self._read(before):
            doubt = (name, lines.start)
        if doubt is None:
            self.doubts.pop(name, None)
        else:
            self.doubts[name] = doubt
        self.sources[name] = frozenset(lines).union(*(self.sources.get(n, frozenset()) for n in used))
        (self.flagged if any(w.startswith("--") for w in value) else self.plain).add(name)
        self.variables[name] = value

    def _read(self, words: list[str]) -> dict[str, list[str]]:
        """The flags of ``words`` that netsweep reads, with their values."""
        return {flag: values for flag, values in flag_values([words]).items() if flag in self.reads}

    def _expand(self, words: list[str]) -> tuple[list[str], set[str]]:
        """``words`` as bash expands them, and the variables expanded: a flag variable's or an array's words
        in place of its ``$NAME`` or ``${NAME[@]}``; a word of several flags (a quoted array item
        ``"--fp8-format hybrid"`` expanded unquoted, Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh)
        split at its spaces."""
        out: list[str] = []
        used: set[str] = set()
        for word in words:
            reference = REFERENCE.fullmatch(word)
            name = reference and (reference["bare"] or reference["braced"])
            if ARGUMENTS.fullmatch(word):
                continue
            if name and name in self.variables:
                out += self.variables[name]
                used.add(name)
            elif word.startswith("--") and len(word.split()) > 1:
                out += word.split()
            else:
                out.append(word)
        return out, used


def _named(run: _Run) -> str:
    """A command as a message names it: its line and its training entry, script or program (never a flag:
    a review)."""
    scripts = [w for w in run.words if TRAINING_ENTRY.fullmatch(os.path.basename(w))]
    scripts += [w for w in run.words if w.endswith(".py")] + [w for w in run.words if not w.startswith("-")]
    return f"line {run.lines.start} ({(scripts or ['flags alone'])[0]})"


def _refuse_unlike(path: str | os.PathLike[str], chosen: _Run, other: _Run, reads: Collection[str]) -> None:
    """Refuse two commands that give a flag netsweep reads differently: which one trains cannot be told."""
    mine, theirs = flag_values([chosen.words]), flag_values([other.words])
    for flag in [f for f in {**mine, **theirs} if f in reads]:
        if mine.get(flag) != theirs.get(flag):
            said = [" ".join([flag, *f[flag]]) if flag in f else f"no {flag}" for f in (mine, theirs)]
            raise InputError(
                f"{path}: {said[0]} at {_named(chosen)}, {said[1]} at {_named(other)}: netsweep prices one "
                "training command and cannot tell which of them trains; keep that one alone in the file"
            )


def _refuse_doubt(path: str | os.PathLike[str], doubts: Collection[tuple[str, int]]) -> None:
    """Refuse a training command that expands a variable in doubt (:meth:`_Script._set`), naming where."""
    if doubts:
        name, line = next(iter(doubts))
        raise InputError(
            f"{where(path, line)}: {name} is given flags here that an if, case or loop (or && or ||) may "
            "apply or not: netsweep cannot tell which the training command gets; assign them once, outside it"
        )


def _entry(words: list[str]) -> int | None:
    """Where ``words`` run a training entry (:data:`TRAINING_ENTRY`); None where they run none."""
    return next((k for k, w in enumerate(words) if TRAINING_ENTRY.fullmatch(os.path.basename(w))), None)


def _stands_as_flags(words: list[str], k: int, reads: Mapping[str, int | None]) -> bool:
    """Whether ``words[k]`` stands where flags go, not as a flag's value: after a switch, or after all of a
    flag's values (``reads``: how many each read flag takes; None, several), or after the training entry
    before any flag. Words before the entry are its launcher's (``torchrun $DISTRIBUTED_ARGS``); with no
    entry, words before any flag the program; a flag netsweep does not read takes any number of values
    (``--data-path 0.5 $A 0.5 $B``)."""
    entry = _entry(words)
    if entry is not None and k < entry:
        return False
    first = 0 if entry is None else entry + 1
    flag = next((j for j in range(k - 1, first - 1, -1) if words[j].startswith("--")), None)
    if flag is None:
        return entry is not None
    takes = reads.get(words[flag].split("=", 1)[0])
    return takes is not None and ("=" in words[flag]) + (k - flag - 1) >= takes


def _line_of(code: list[str], run: _Run, word: str) -> int:
    """The first of the lines ``run``'s words come from that holds ``word``; else its first."""
    given = re.compile(re.escape(word) + r"(?![\w\[{])")
    found = [n for n in sorted(run.sources) if n <= len(code) and given.search(code[n - 1])]
    return (found or [run.lines.start])[0]


def _refuse_unread(
    path: str | os.PathLike[str],
    run: _Run,
    script: _Script,
    reads: Mapping[str, int | None],
    code: list[str],
) -> None:
    """Refuse a training command whose flags netsweep cannot read (a review: each lost its flags in silence):
    one that expands a variable in doubt (:meth:`_Script._set`), or holds a variable's expansion left as it is
    (:data:`EXPANSION`) where it may give flags: one the file assigns flags but not before the command (after
    it, as a function's body may use it), or in another form than ``$NAME``, ``${NAME}``, ``${NAME[@]}``; or
    one the file never assigns that stands where flags go (:func:`_stands_as_flags`). A flag's value
    (``--tensor-model-parallel-size $TP``) is left to its flag's check."""
    _refuse_doubt(path, run.doubts)
    for k, word in enumerate(run.words):
        expansion = EXPANSION.fullmatch(word)
        name = expansion and (expansion["bare"] or expansion["braced"])
        if not name:
            continue
        if name in script.flagged:
            why = (
                f"{name}'s flags are assigned after it (a function run later?), or it is not $NAME, "
                "${NAME} or ${NAME[@]}"
            )
        elif name in script.plain or not _stands_as_flags(run.words, k, reads):
            continue
        else:
            why = f"{name} is not set before it in the file, and stands where flags go"
        raise InputError(
            f"{where(path, _line_of(code, run, word))}: {word} in the training command: {why}; netsweep "
            "cannot tell which flags it gives, so give them in the file before the command"
        )


class Command(NamedTuple):
    """The command a launch file is priced by: its flags and their values, whether the file holds any word of
    a command or variable at all, and the file's lines its words come from (its own and its variables'
    assignments: a message names no other; None: any)."""

    flags: dict[str, list[str]]
    any_words: bool
    lines: frozenset[int] | None


def _chosen(path: str | os.PathLike[str], runs: list[_Run], reads: Collection[str]) -> list[_Run]:
    """The training command of ``runs`` (a program each), as :func:`training_command` chooses it; none where
    no command gives a flag netsweep reads."""
    trains = [run for run in runs if _entry(run.words) is not None]
    reading = [run for run in trains or runs if set(flag_values([run.words])) & set(reads)]
    chosen = trains[:1] if len(trains) == 1 else reading[:1] or trains[:1]
    for other in reading[1:] if len(trains) != 1 else []:
        _refuse_unlike(path, chosen[0], other, reads)
    return chosen


def training_command(
    path: str | os.PathLike[str], lines: list[str], reads: Mapping[str, int | None]
) -> Command:
    """The training command of the file's lines: the one that runs a training entry (``pretrain_*.py``), else
    the one command that gives a flag netsweep reads (``reads``: each with the values it takes, None for any
    number). A command is a program's: a line of flags alone beside one is no command, as in bash (a comment
    in a ``\\``-continued command ends it); but a file of flags alone, no program (every command's first word
    a flag: a review), is one command, its lines read together; a file of variables alone (Megatron-LM's
    arrays, no command) is read whole. Several that train, or none and several that give such flags, are
    refused where they differ in one (a hunt: a text-generation server's TP 1 after the training's TP 4 was
    priced, with the training's other flags); so is a command whose flags cannot be read
    (:func:`_refuse_unread`)."""
    script = _Script(path, reads).read(lines)
    runs = [run for run in script.runs if run.words]
    programs = [run for run in runs if not run.words[0].startswith("--")]
    chosen = _chosen(path, programs, reads) if programs else runs
    code = uncommented(lines)
    for run in chosen:
        _refuse_unread(path, run, script, reads, code)
    any_words = bool(runs) or any(script.variables.values())
    if not chosen:  # no command gives a flag: the variables' (a flag's values end with its variable)
        _refuse_doubt(path, script.doubts.values())
        return Command(flag_values(list(script.variables.values())), any_words, None)
    used = frozenset().union(*(run.sources for run in chosen)) if programs else None
    return Command(flag_values([run.words for run in chosen]), any_words, used)
