"""nccl-tests' own output (what ``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``,
``alltoall_perf`` and ``sendrecv_perf`` print), read into one row per message size.

The format, as nccl-tests prints it (NVIDIA/nccl-tests@abc46770a98777a9fd1b072adcf8becb76bfe125:src/common.cu,
``PRINT`` in ``run``, ``TimeTest`` and ``BenchTime``; the same lines, moved to src/util.cu in October 2025, at
NVIDIA/nccl-tests@a0b82b2260cf5152b9f8c061bbf7eaf0ba096432:src/util.cu, v2.19.6, which adds the per-iteration
columns and the timestamp)::

    # Collective test starting: all_reduce_perf                    (2.17 and later)
    # nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid  41210 on      node1 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
    ...                                                            (one line per rank, in rank order)
    #
    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s) ...
               8             2     float     sum      -1    25.61    0.00    0.00      0    25.32    0.00 ...
    ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 117.6

Read from it: the collective (the ``Collective test starting`` line, else the file's name, which older
nccl-tests leave as the only clue: ``all_reduce_perf.log``), the ranks' hosts and GPU (the device lines:
hosts are the distinct host names, GPUs per host the device lines per host; older nccl-tests print ``#   Rank
0 Pid ... [0x18] NAME`` without the group), and each data row's size (B: nccl-tests' size, the whole
buffer), out-of-place time (us) and busbw (GB/s, 1e9 bytes/s). The columns are found by the header's names,
so the per-iteration columns (``-I 1``) and a timestamp (``-T``) are read past, and so is a launcher's label
on every line (``srun --label``, ``mpirun --tag-output``, ``-prepend-rank``). Anything else (NCCL's own
``NCCL INFO`` lines, warnings) is skipped, and a data row they split is joined again (:func:`_rejoined`); a line that starts as a data row but is not one, a row whose data
check failed (#wrong above 0, out-of-place or in-place, or nccl-tests' own ``Out of bounds values : N FAILED``), a
size or count not in ASCII digits, a time of 0 or a busbw past any GPU's, a busbw that is not the size over the
time times the collective's bus factor (:func:`_check_rates`), rows of several data types or operations (``-d all``,
``-o all``), a test failure (``Test failure``), split communicators (a device line's group above 0:
``NCCL_TESTS_SPLIT_MASK``), devices of several GPU models or hosts of unequal GPU counts, or a second run
appended to the file (a second ``Collective test starting`` line or a rank's device line again; before any
result, processes that each ran a test of their own: nccl-tests without MPI) are one :class:`InputError` naming
the file and line, and so is what is not one run of every rank under NCCL's own choice: NCCL's line saying
``NCCL_ALGO``, ``NCCL_PROTO`` or CollNet turned on (:data:`FORCED`; NVLS or PAT turned off is kept,
:attr:`Log.turned_off`, for the fit to refuse where NCCL would run them), one rank, a rank's device line missing
or fewer of them than a row's count implies (:data:`PER_RANK_COUNT`), one GPU of a host name twice (containers of one name).
A malformed last row that nothing of nccl-tests' follows (the file's end, or a launcher's lines: a run killed
while writing it) is not read, its line kept (:attr:`Log.cut`). Rows of size 0 (a small size split over many ranks: nothing
sent) are skipped. What nccl-tests never prints (the NICs) is the caller's.
"""

import dataclasses
import hashlib
import math
import re
from pathlib import Path

from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.textfile import read_lines
from netsweep_jax.sweep.io.nccl_tests import (
    BUS_FACTOR,
    COLLECTIVES,
    MAX_BUSBW,
    MAX_VALUE,
    OTHER_COLLECTIVES,
    Measurement,
)

DEVICE = re.compile(
    r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device\s+(?P<index>\d+)\s+"
    r"\[(?P<bus>[^\]]*)\]\s+(?P<gpu>.*\S)\s*$"
)
STARTING = re.compile(r"^#\s*Collective test starting:\s*(?P<binary>\S+)")
# The summary nccl-tests prints once every size has run: a log without it was cut short (a run killed, a file
# copied before the end).
FINISHED = re.compile(r"^#\s*Avg bus bandwidth\s*:")
# nccl-tests' count of wrong results over every size, before that summary (``%d OK`` or ``%d FAILED``).
OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+FAILED\b")
PREAMBLE = ("size", "count", "type", "redop", "root")
# What a launcher puts before each line it relays: ``srun --label`` (``0: ``), Open MPI's ``mpirun --tag-output``
# (``[1,0]<stdout>:``; Open MPI 5's PRRTE ``--output tag-detailed``, ``tag-fullname`` and ``rank`` put other
# bracketed tags before ``<stdout>``, ``[1,0][gpu-001:41210]``, ``[prterun-gpu-001-41210@1,0]``, ``[0]``, as
# openpmix/prrte#1407 lists them, the colon after ``<stdout>`` not always: a hunt), MPICH's or Intel MPI's
# ``-prepend-rank`` (``[0] ``) and pdsh's or clush's host (``node-a: ``, a hunt: a host name and a colon and a
# space, which none of nccl-tests' or NCCL's lines start with; or its IPv4 address, ``pdsh -w 10.0.0.[1-2]``,
# a hunt); read past on every line that carries one.
LAUNCHER_PREFIX = re.compile(
    r"^\s*(?:\d+: ?|(?:\[[^\]\s]+\])+<std(?:out|err)>:? ?|\[\d+\] |"
    r"(?:[A-Za-z][\w.-]*|\d{1,3}(?:\.\d{1,3}){3}): (?=\s*(?:#|\d|[A-Za-z][\w.-]*:\d)))"
)
TIMES = ("time", "cputime")
WHOLE = re.compile(r"[0-9]+")
# A time past a day (us): no collective of one size runs that long, and a day's rate of any size is below 0.01 GB/s.
MAX_TIME_US = 86_400e6
# nccl-tests' names of its data types (src/common.cu's test_typenames) and their sizes in bytes (wordSize), and
# of its reduction operations (test_opnames; "none" where a collective reduces nothing): a data row's third and
# fourth cells.
TYPE_BYTES = {
    **dict.fromkeys(("int8", "uint8", "f8e4m3", "f8e5m2"), 1),
    **dict.fromkeys(("half", "bfloat16"), 2),
    **dict.fromkeys(("int32", "uint32", "float"), 4),
    **dict.fromkeys(("int64", "uint64", "double"), 8),
}
TYPES = frozenset(TYPE_BYTES)
# The tests whose count column is each rank's share (GetCollByteCount's paramcount, count / nranks), so that a
# row's size over its count and type's bytes is the number of ranks: all_gather (the size the whole gathered
# buffer), reduce_scatter and alltoall (the size the whole send buffer).
PER_RANK_COUNT = frozenset(("all_gather", "reduce_scatter", "alltoall"))
OPERATIONS = frozenset("sum prod max min avg mulsum none".split())
# What nccl-tests prints as a test fails (src/common.h's NCCLCHECK, CUDACHECK and testErr), then it stops.
FAILED = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
# NCCL's own line (NCCL_DEBUG=INFO) where the environment changes what the fit prices, NCCL's own choice of
# algorithm and protocol: NCCL_ALGO and NCCL_PROTO, as ncclTopoTuneModel prints them (NVIDIA/nccl
# src/graph/tuning.cc: "NCCL_ALGO set by environment to %s"), and the integer parameters NCCL's loader prints
# ("%s set by environment to %lld.", src/misc/param.cc) that narrow or widen the choice.
FORCED = re.compile(
    r"\bNCCL INFO (?P<name>NCCL_(?:ALGO|PROTO|NVLS_ENABLE|PAT_ENABLE|COLLNET_ENABLE)) "
    r"set by environment to (?P<value>[^\s.]+)"
)
# What each such parameter changes, and its values that leave NCCL's choice as the fit prices it (NCCL's defaults:
# NVLS and PAT on where the hardware has them, 2; CollNet off, 0). A user's NCCL_NVLS_ENABLE=0 had been fitted as
# NCCL's own choice (its NVLS rows priced on the ring, eta_net 0.61 for 0.80: a hunt). NVLS and PAT turned off
# are kept with the log (:attr:`Log.turned_off`), refused by the fit only where the hardware would run them
# (a review: an A100's log with NVLS off had been refused). User tuning of channels (NCCL_MIN_CTAS, ...) is read
# past: the model does not price it, as validate --nccl scores the published rows tuned so.
FORCED_CHANGES = {
    "NCCL_ALGO": ("NCCL's choice of algorithm was narrowed", ()),
    "NCCL_PROTO": ("NCCL's choice of protocol was narrowed", ()),
    "NCCL_NVLS_ENABLE": ("NVLink SHARP (NVLS) was turned off", ("1", "2")),
    "NCCL_PAT_ENABLE": ("the PAT algorithm was turned off", ("1", "2")),
    "NCCL_COLLNET_ENABLE": ("CollNet (network SHARP) was turned on", ("0",)),
}
TURNED_OFF = ("NCCL_NVLS_ENABLE", "NCCL_PAT_ENABLE")  # refused by the fit where the hardware runs them


@dataclasses.dataclass(frozen=True)
class Row:
    """One message size: nccl-tests' size (B), the out-of-place time (us) and busbw (GB/s), its line; half the
    unit of the last digit each was printed to (us, GB/s: their rounding)."""

    bytes: int
    time_us: float
    busbw: float
    line: int
    time_rounding_us: float = 0.0
    busbw_rounding: float = 0.0


@dataclasses.dataclass(frozen=True)
class Log:
    """One nccl-tests log: its collective, ranks and rows (out-of-place), the file's name and SHA-256, and whether
    it ends as a whole run does (nccl-tests' ``# Avg bus bandwidth`` summary: ``finished``); ``cut``: the line
    number of a last row cut mid-row (a run killed while writing it), not read, or None."""

    path: Path
    sha256: str
    collective: str
    gpu: str
    hosts: tuple[str, ...]
    gpus_per_node: int
    rows: tuple[Row, ...]
    finished: bool = True
    cut: int | None = None
    turned_off: tuple[tuple[int, str, str], ...] = ()  # (line, NCCL_NVLS_ENABLE or NCCL_PAT_ENABLE, value)

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def measured(self) -> tuple[object, ...]:
        """What the log measured (its collective, GPU, hosts and rows' sizes, times and busbw): equal for one run
        however its file was copied (line endings, a launcher's labels, NCCL's own lines)."""
        rows = tuple((r.bytes, r.time_us, r.busbw) for r in self.rows)
        return self.collective, self.gpu, self.hosts, self.gpus_per_node, rows

    def measurements(
        self, nics: int | None, nic_gbps: float | None, host_gpus: int | None = None
    ) -> list[Measurement]:
        """The rows as :class:`~sweep.io.nccl_tests.Measurement` (``nccl_tests.csv``'s), with what the log
        does not state: the NICs (per host, Gbit/s each) and the GPUs a host holds (None where unknown)."""
        return [
            Measurement(
                id=f"{self.path.name}-{k:02d}",
                source=self.path.name,
                collective=self.collective,
                gpu=self.gpu,
                gpus_per_node=self.gpus_per_node,
                nodes=self.nodes,
                nics=nics,
                nic_gbps=nic_gbps,
                stated="",
                bytes=r.bytes,
                busbw=r.busbw,
                notes=f"out-of-place time {r.time_us:g} us",
                line=r.line,
                host_gpus=host_gpus,
            )
            for k, r in enumerate(self.rows)
        ]


@dataclasses.dataclass
class _Comments:
    """What a log's ``#`` lines say, read in order (:meth:`read`): the test's binary, each rank's device (rank ->
    (host, GPU, line)), the column header's names, and whether nccl-tests' closing summary came."""

    path: Path
    binary: str | None = None
    devices: dict[int, tuple[str, str, int]] = dataclasses.field(default_factory=dict)
    # (host, bus) -> rank, line: the GPUs a bus id with its PCI domain names
    gpus: dict[tuple[str, str], tuple[int, int]] = dataclasses.field(default_factory=dict)
    # host -> (bus, device index, rank, line) of each device line of a bus alone (older nccl-tests)
    buses: dict[str, list[tuple[str, str, int, int]]] = dataclasses.field(default_factory=dict)
    columns: list[str] | None = None
    finished: bool = False
    results: bool = False  # a data row came (set by the reader)

    def check_buses(self) -> None:
        """Refuse two hosts of one name where the device lines print the bus alone ([0x18]): the GPUs of one host
        share a bus where each has a PCI domain of its own (Azure's ND VMs, GB200's trays), and processes that each
        see one GPU all call it device 0; one bus and device number listed twice on a host whose GPUs are on
        several buses is one GPU twice (a hunt: two 4-GPU containers named localhost, read as one host of 8).
        Judged on every line at once, not in their order (a review)."""
        for host, lines in self.buses.items():
            if len({bus for bus, *_ in lines}) < 2:
                continue
            seen: dict[tuple[str, str], tuple[int, int]] = {}
            for bus, index, rank, number in sorted(lines, key=lambda line: line[3]):
                if (bus, index) in seen:
                    _refuse_twice(self.path, rank, (host, bus), *seen[bus, index], number)
                seen[bus, index] = (rank, number)

    def _second_run(self) -> str:
        """What to do about a second run in the file; before any result, processes that each ran a test of their
        own (one rank each, busbw 0) are the likelier cause."""
        each = "give each run's output as a file of its own"
        if self.results:
            return f"; {each}"
        return (
            " before any result: processes that each ran a test of their own (nccl-tests built without MPI=1, "
            f"started by srun or mpirun?) measure no collective across them; build nccl-tests with MPI=1, or {each}"
        )

    def read(self, text: str, number: int) -> None:
        """One ``#`` line, ``text``, at line ``number``; a second run's lines are refused."""
        if m := STARTING.match(text):
            if self.binary is not None:  # two runs appended to one file (>>): each priced on its own hosts
                again = "again" if m.group("binary") == self.binary else f"after {self.binary}"
                raise InputError(
                    f"{where(self.path, number)}: a second test ({m.group('binary')} {again}){self._second_run()}"
                )
            self.binary = m.group("binary")
        elif FINISHED.match(text):
            self.finished = True
        elif m := OUT_OF_BOUNDS.match(
            text
        ):  # a size's #wrong may be cut or N/A: nccl-tests' own count says so
            raise InputError(
                f"{where(self.path, number)}: {m['count']} out-of-bounds values, FAILED: nccl-tests' data check "
                "failed; a wrong result's time is no measurement"
            )
        elif m := DEVICE.match(text):
            rank = int(m.group("rank"))
            if (
                rank in self.devices
            ):  # a run prints each rank once: a second run's devices (nccl-tests < 2.17)
                raise InputError(
                    f"{where(self.path, number)}: rank {rank} again (first at line {self.devices[rank][2]}): a "
                    f"second run{self._second_run()}"
                )
            if int(m.group("group") or 0) > 0:  # NCCL_TESTS_SPLIT_MASK: each group its own communicator
                raise InputError(
                    f"{where(self.path, number)}: rank {rank} in group {m.group('group')}: split communicators "
                    "(NCCL_TESTS_SPLIT_MASK) each run the collective on their own ranks, and busbw is theirs; "
                    "the model reads one communicator of every rank: run the test without the split"
                )
            gpu = (m.group("host"), m.group("bus"))
            # NCCL refuses one GPU twice in a communicator: two hosts of one name. Only a bus id with its PCI
            # domain (0000:18:00) names one GPU; older nccl-tests print the bus alone ([0x00]), judged once every
            # device line is read (:meth:`check_buses`).
            if ":" not in gpu[1]:
                self.buses.setdefault(gpu[0], []).append((gpu[1], m.group("index"), rank, number))
            elif gpu in self.gpus:
                _refuse_twice(self.path, rank, gpu, *self.gpus[gpu], number)
            self.gpus[gpu] = (rank, number)
            self.devices[rank] = (m.group("host"), m.group("gpu"), number)
        elif text.lstrip("#").split()[:5] == list(PREAMBLE):
            names = text.lstrip("#").split()
            if self.columns is not None and names != self.columns:
                raise InputError(f"{where(self.path, number)}: a second column header, unlike the first")
            self.columns = names


def _refuse_twice(path: Path, rank: int, gpu: tuple[str, str], first: int, at: int, number: int) -> None:
    raise InputError(
        f"{where(path, number)}: rank {rank} on {gpu[0]} [{gpu[1]}], the GPU of rank {first} (line {at}): hosts "
        "of one name (containers?) would be read as one host; give each host its own name, in the run or in the "
        "device lines"
    )


def read_nccl_tests_log(path: str | Path) -> Log:
    """Read one nccl-tests log (module docstring); any malformed part is one error naming the file and line."""
    path = Path(path)
    lines = _rejoined(_without_launcher_prefix(read_lines(path, "nccl-tests log")))
    said = _Comments(path)
    rows: list[Row] = []
    counts: list[tuple[int, list[str]]] = []  # each row's line and cells, for the ranks its count implies
    empty = 0  # rows of size 0: nothing sent
    turned_off: list[tuple[int, str, str]] = []  # NVLS or PAT turned off: the fit judges whether it matters
    kinds: dict[tuple[str, ...], int] = {}  # each (type, operation) of the rows, and its first line
    # A run killed while writing a row leaves it cut, then the file's end or a launcher's lines (``slurmstepd:
    # ... CANCELLED``, glued to it or after it): only the last row of a run without its closing summary may be
    # one not read; a malformed row that anything of nccl-tests' follows is an error.
    unread: tuple[int, InputError] | None = None  # a malformed row's line and error
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if unread is not None and (text.startswith("#") or _a_row(text.split(), said.columns)):
            raise unread[1]
        if text.startswith("#"):
            said.read(text, number)
            continue
        if FAILED.search(text):
            raise InputError(f"{where(path, number)}: {text!r}: the test failed; its rows are no measurement")
        _check_not_forced(text, path, number, turned_off)
        cells = text.split()
        if said.columns is None or not _a_row(cells, said.columns):
            continue  # NCCL's and MPI's own lines (HOST:PID:TID [dev] NCCL INFO ..., [host:pid] ...)
        try:
            row = _row(text, said.columns, path, number)
        except InputError as error:
            unread = number, error
            continue
        said.results = True
        counts.append((number, cells))
        kinds.setdefault(_kind(cells, said.columns), number)
        if len(kinds) > 1:  # -d all, -o all: each type and operation its own busbw, which one fit would mix
            (first, at), (now, _) = kinds.items()
            raise InputError(
                f"{where(path, number)}: {' '.join(now)} after {' '.join(first)} (line {at}): several data types or "
                "operations in one run (-d all, -o all)? Give one type and operation a log"
            )
        if row is not None:
            rows.append(row)
        else:
            empty += 1
    if said.columns is None:
        raise InputError(
            f"{path}: no column header ('#  size  count  type  redop  root  time  algbw  busbw ...'); "
            "expected nccl-tests' output (all_reduce_perf and the like)"
        )
    if not rows:
        raise InputError(
            f"{path}: every data row has size 0 (nothing sent: a size split over the ranks rounds to no "
            "element); run larger sizes (-b)"
            if empty
            else f"{path}: no data rows under the column header"
        )
    if not said.devices:
        raise InputError(
            f"{path}: no device lines ('#  Rank  0 Group  0 Pid ... on HOST device  0 [...] GPU'); the hosts "
            "and GPUs come from them"
        )
    collective = _collective(said.binary, path)
    _check_operation(collective, kinds, path)
    _check_whole(said, collective, counts, kinds, rows, path)
    return Log(
        path=path,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        collective=collective,
        gpu=_one_gpu(said.devices, path),
        hosts=tuple(dict.fromkeys(host for host, _, _ in said.devices.values())),
        gpus_per_node=_per_host(said.devices, path),
        rows=tuple(rows),
        finished=said.finished,
        cut=None if unread is None else unread[0],
        turned_off=tuple(turned_off),
    )


# The tests that reduce (their redop column an operation: sum by default); all-gather and all-to-all print none.
REDUCING = ("all_reduce", "reduce_scatter")
# sendrecv_perf reduces nothing but prints the operation it was given (sum by default: nccl-tests
# src/sendrecv.cu, SendRecvRunTest passes run_opnames[j] since v2.13), so its column says nothing of the test.
ANY_OPERATION = ("sendrecv",)


def _check_whole(
    said: "_Comments",
    collective: str,
    counts: list[tuple[int, list[str]]],
    kinds: dict[tuple[str, ...], int],
    rows: list[Row],
    path: Path,
) -> None:
    """The checks of a log read whole: its hosts' buses, its ranks against its counts, its rates."""
    said.check_buses()
    # another test's numbers are named only where the file's name said the collective (renaming it helps)
    named = said.binary is None
    _check_ranks(said.devices, collective, counts, said.columns or [], path, named)
    reduces = any(len(kind) > 1 and kind[1] != "none" for kind in kinds) if named else None
    _check_rates(rows, collective, len(said.devices), said.columns or [], path, reduces)


def forced_text(path: Path, number: int, name: str, value: str) -> str:
    """Why NCCL's line at ``number`` (``name`` set by environment to ``value``) is no measurement of its choice."""
    return (
        f"{where(path, number)}: {name} set by environment to {value}: {FORCED_CHANGES[name][0]}, where the fit "
        f"prices NCCL's own choice; run the test without {name}"
    )


def _check_not_forced(text: str, path: Path, number: int, turned_off: list[tuple[int, str, str]]) -> None:
    """Refuse NCCL's line saying the environment changed what the fit prices (:data:`FORCED`); NVLS or PAT
    turned off is kept in ``turned_off`` for the fit to judge (:data:`TURNED_OFF`)."""
    if (m := FORCED.search(text)) and m["value"] not in FORCED_CHANGES[m["name"]][1]:
        if m["name"] in TURNED_OFF:
            turned_off.append((number, m["name"], m["value"]))
            return
        raise InputError(forced_text(path, number, m["name"], m["value"]))


def _check_operation(collective: str, kinds: dict[tuple[str, ...], int], path: Path) -> None:
    """Refuse rows whose operation is not the collective's: an all-reduce or reduce-scatter reduces (its redop
    sum, prod, ...), an all-gather or all-to-all reduces nothing (none); send/recv prints any (ANY_OPERATION). A log whose collective came
    from its file's name (nccl-tests before 2.17 print no binary) was read as that name said: an all-gather's
    rows in all_reduce_perf.log fitted eta_nvl 0.517 where its own name gave 0.750 (a hunt)."""
    for kind, number in kinds.items():
        if len(kind) < 2 or collective in ANY_OPERATION or (kind[1] != "none") == (collective in REDUCING):
            continue
        does, others = (
            ("reduces (sum, prod, ...)", "all_gather_perf.log, alltoall_perf.log")
            if collective in REDUCING
            else ("reduces nothing (none)", "all_reduce_perf.log, reduce_scatter_perf.log")
        )
        raise InputError(
            f"{where(path, number)}: redop {kind[1]}, where {collective} {does}: a log of another test? Name the "
            f"file after the binary that printed it ({others})"
        )


def _check_ranks(
    devices: dict[int, tuple[str, str, int]],
    collective: str,
    counts: list[tuple[int, list[str]]],
    columns: list[str],
    path: Path,
    named: bool = False,
) -> None:
    """Refuse a log whose device lines are not every rank of the run: one rank (a collective of one GPU crosses
    no link: busbw 0), ranks missing between them, or fewer than a row's count says (:data:`PER_RANK_COUNT`'s
    tests: size / (count x the type's bytes) ranks). A log filtered or cut would be priced on the hosts it
    kept."""
    ranks = sorted(devices)
    if len(ranks) == 1:
        raise InputError(
            f"{path}: one rank (one device line): a collective of one GPU crosses no link (busbw 0); run it over "
            "a host's GPUs (-g 8, or a process a GPU with nccl-tests built with MPI=1) or across hosts"
        )
    missing = sorted(set(range(ranks[-1] + 1)) - set(ranks))
    if missing:
        raise InputError(
            f"{path}: device lines for ranks up to {ranks[-1]} without rank {', '.join(map(str, missing[:8]))}"
            f"{' ...' if len(missing) > 8 else ''}: a log filtered or cut? nccl-tests prints every rank's line"
        )
    if collective not in PER_RANK_COUNT:
        return
    at = {name: columns.index(name) for name in ("size", "count", "type")}
    for number, cells in counts:
        size, count, kind = (cells[at[name]] for name in ("size", "count", "type"))
        if not WHOLE.fullmatch(count) or int(count) == 0 or kind not in TYPE_BYTES:
            continue
        implied = int(size) / (int(count) * TYPE_BYTES[kind])
        if implied != len(ranks):
            # a count of the whole buffer is another test's (a hunt: an all-reduce's log in
            # reduce_scatter_perf.log was called filtered or cut)
            why = (
                "a count of the whole buffer, as all_reduce, broadcast and reduce print it: a log of another "
                "test? Name the file after the binary that printed it"
                if implied == 1 and named
                else "a log filtered or cut? nccl-tests prints every rank's line"
            )
            raise InputError(
                f"{where(path, number)}: {size} B of {count} {kind} a rank is {implied:g} ranks, where the device "
                f"lines list {len(ranks)}: {why}"
            )


def _check_rates(
    rows: list[Row], collective: str, ranks: int, columns: list[str], path: Path, reduces: bool | None = None
) -> None:
    """Refuse a row whose busbw is not its size over its time (us) times the collective's bus factor
    (:data:`~sweep.io.nccl_tests.BUS_FACTOR`), as nccl-tests computes it, beyond the printed digits (each to
    half its last digit, :func:`_rounding`: nccl-tests 2.17 prints a time past 10 s as ``1.2e+07``, two digits, a
    review) and 2% more. A row edited by hand, or another run's busbw pasted beside this one's time (a time of 0.00 with a
    busbw of 361 was fitted, a hunt). Not where the time column is ``cputime`` (nccl-tests' ``-C``: its rates
    stay the GPU's)."""
    if collective not in BUS_FACTOR or "cputime" in columns:
        return
    factor = BUS_FACTOR[collective](ranks)
    for row in rows:
        if not _rate_of(row, factor):
            said = factor * row.bytes / (row.time_us * 1e3)
            # another test's factor, at every row, where the file's name said the collective (a hunt: a
            # reduce-scatter's log in all_reduce_perf.log was called edited)
            # (``reduces``: whether the rows' operation reduces, None where the log named its test): the tests whose
            # operation is the rows' (a review: a sum's log was offered all_gather's name)
            other = [
                c
                for c, f in BUS_FACTOR.items()
                if reduces is not None
                and f(ranks) != factor
                and (c in ANY_OPERATION or (c in REDUCING) == reduces)
                and all(_rate_of(r, f(ranks)) for r in rows)
            ]
            why = (
                f"a log of {', '.join(other[:-1])}{' or ' * (len(other) > 1)}{other[-1]}? Name the file after the "
                "binary that printed it"
                if other
                else "the row was edited, or its columns are another run's"
            )
            raise InputError(
                f"{where(path, row.line)}: busbw {row.busbw:g} GB/s, where {row.bytes} B in {row.time_us:g} us of "
                f"{collective} over {ranks} ranks is {said:.4g} GB/s (size / time x {factor:g}, as nccl-tests "
                f"computes it): {why}"
            )


def _rate_of(row: Row, factor: float) -> bool:
    """Whether ``row``'s busbw is its size over its time times ``factor``, within the printed digits and 2%."""
    shortest = max(row.time_us - row.time_rounding_us, 1e-3)
    fastest = factor * row.bytes / (shortest * 1e3) * 1.02 + row.busbw_rounding
    slowest = factor * row.bytes / ((row.time_us + row.time_rounding_us) * 1e3) * 0.98 - row.busbw_rounding
    return slowest <= row.busbw <= fastest


def _a_row(cells: list[str], columns: list[str] | None) -> bool:
    """Whether a line's ``cells`` are a data row, whole or not: a size in bytes first, or, past a size that is not
    one (``4M``), one of nccl-tests' data types and operations where the header names them (never NCCL's or MPI's
    own lines, ``HOST:PID:TID [dev] NCCL INFO ...``, ``[host:pid] 7 more processes have sent help message``).
    None before the column header: no line is a row yet."""
    if not cells or columns is None:
        return False
    if cells[0].isdigit():
        return True
    kind = _kind(cells, columns)
    return len(kind) == 2 and kind[0] in TYPES and kind[1] in OPERATIONS


def _kind(cells: list[str], columns: list[str]) -> tuple[str, ...]:
    """A data row's (type, operation), as far as the row has them. A size printed again of the same kind (nccl-tests'
    ``-N`` cycles, or neighbouring sizes rounding to one count) is a measurement again; another kind is another
    run's."""
    return tuple(cells[i] for i in (columns.index("type"), columns.index("redop")) if i < len(cells))


# A data row's first five columns (size, count, type, redop, root) with one of NCCL's own lines glued to them or
# after them (``... -1node-a:41210:41300 [0] NCCL INFO ...``): nccl-tests prints them before it times the size, and
# NCCL_DEBUG=INFO's lines of the connections it makes then land inside the row.
# (the root's digits taken whole, (?!\d): no backtracking between them and a host name's)
SPLIT_ROW = re.compile(
    r"^(?P<head>\s*\d+\s+\d+\s+\S+\s+\S+\s+-?\d+)(?!\d)\s*[^\s:]+:\d+:\d+\s+\[\d+\]\s+NCCL\b"
)
# The rest of such a row: its times, rates and checks only (numbers, N/A).
ROW_TAIL = re.compile(
    r"^\s*(?:[-+]?[\d.]+(?:[eE][-+]?\d+)?|N/A)(?:\s+(?:[-+]?[\d.]+(?:[eE][-+]?\d+)?|N/A))*\s*$"
)


def _rejoined(lines: list[str]) -> list[str]:
    """``lines`` with each data row that NCCL's own lines split (:data:`SPLIT_ROW`) joined again: its head and
    the next line of numbers alone (:data:`ROW_TAIL`) past NCCL's lines, in the head's place, that line left
    empty (so every line keeps its number). A head no such line follows before another row's head or anything
    else is kept as it is (a malformed row): a row's times are never another's (a review)."""
    out = list(lines)
    for number, line in enumerate(lines):
        head = SPLIT_ROW.match(line)
        if head is None:
            continue
        for later in range(number + 1, len(lines)):
            if ROW_TAIL.match(out[later]) and out[later].strip():
                out[number], out[later] = f"{head['head']} {out[later].strip()}", ""
                break
            if SPLIT_ROW.match(out[later]) or "NCCL" not in out[later]:  # another row, or not NCCL's own line
                break
    return out


def _without_launcher_prefix(lines: list[str]) -> list[str]:
    """``lines`` without the launcher's prefix (:data:`LAUNCHER_PREFIX`) where a line has one (a line without it,
    as ``srun: ...``'s own warnings, is kept as it is): no line nccl-tests or NCCL print starts so."""
    return [LAUNCHER_PREFIX.sub("", line, count=1) for line in lines]


def _row(text: str, columns: list[str], path: Path, number: int) -> Row | None:
    """A data row by the header's column names: the first time, busbw and #wrong are out-of-place's. None for a
    size of 0 bytes, which nccl-tests prints where a small size split over many ranks rounds to no element
    (``alltoall_perf -b 8`` on 16 GPUs): nothing was sent, nothing measured."""
    cells = text.split()
    # The columns up to the in-place #wrong must be there; past them, per-iteration figures or a timestamp.
    wrong = [i for i, name in enumerate(columns) if name == "#wrong"]
    needed = (wrong[-1] if wrong else len(columns) - 1) + 1
    if len(cells) < needed:
        raise InputError(
            f"{where(path, number)}: a data row of {len(cells)} fields; the header names {needed} "
            f"({' '.join(columns[:needed])})"
        )
    at = {name: columns.index(name) for name in ("size", "count", "busbw")}
    at["time"] = next((i for i, name in enumerate(columns) if name in TIMES), -1)
    if at["time"] < 0:
        raise InputError(f"{where(path, number)}: the column header names no time column")
    size = cells[at["size"]]
    # ASCII digits: str.isdigit takes '8²' (int() then fails) and reads Arabic-Indic digits as numbers (a hunt)
    if not WHOLE.fullmatch(size) or int(size) > MAX_VALUE:
        raise InputError(
            f"{where(path, number)}: size {size!r} must be a whole number of bytes up to {MAX_VALUE:g}"
        )
    if not WHOLE.fullmatch(cells[at["count"]]):
        raise InputError(
            f"{where(path, number)}: count {cells[at['count']]!r} must be a whole number of elements"
        )
    if int(size) == 0:
        return None
    # A size of more than no bytes takes time (nccl-tests prints at least 0.01 us), but its -C cputime, a launch's
    # share, may print 0.00 (a review); the bounds as the CSV's.
    cputime = columns[at["time"]] == "cputime"
    values = {name: _number(cells[at[name]]) for name in ("time", "busbw")}  # NaN where not a number: refused
    if not ((0 <= values["time"] if cputime else 0 < values["time"]) and values["time"] <= MAX_TIME_US):
        raise InputError(
            f"{where(path, number)}: time {cells[at['time']]!r} must be a number {'from' if cputime else 'above'} "
            f"0 and up to a day ({MAX_TIME_US:g} us)"
        )
    if not 0 <= values["busbw"] <= MAX_BUSBW:
        raise InputError(
            f"{where(path, number)}: busbw {cells[at['busbw']]!r} must be a number from 0 to {MAX_BUSBW:g} GB/s "
            "(4x the fastest NVLink of any GPU here)"
        )
    failed = next((cells[i] for i in wrong if cells[i] != "N/A" and _number(cells[i]) != 0), None)
    if failed is not None:  # out-of-place or in-place: either check failing is a broken run
        raise InputError(
            f"{where(path, number)}: #wrong {failed}: nccl-tests' data check failed on this size; "
            "a wrong result's time is no measurement"
        )
    return Row(
        bytes=int(size),
        time_us=values["time"],
        busbw=values["busbw"],
        line=number,
        time_rounding_us=_rounding(cells[at["time"]]),
        busbw_rounding=_rounding(cells[at["busbw"]]),
    )


def _rounding(cell: str) -> float:
    """Half the unit of the last digit a number was printed to: 0.005 for ``361.28``, 0.05e7 for ``1.2e+07``
    (nccl-tests' %7.2f, %7.1f, %7.0f, then %7.1e where a time outgrows the column)."""
    mantissa, _, exponent = cell.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** ((int(exponent) if exponent else 0) - decimals)


def _number(cell: str) -> float:
    """A cell as nccl-tests prints a number (``%7.2f``, or ``%6.0e`` past the column's width); NaN if not."""
    try:
        return float(cell) if re.fullmatch(r"[0-9.eE+-]+", cell) else math.nan
    except ValueError:
        return math.nan


def _collective(binary: str | None, path: Path) -> str:
    """The model's name of the collective: the binary's (``all_reduce_perf`` -> ``all_reduce``), else the one
    binary the file's name names."""
    known = COLLECTIVES + OTHER_COLLECTIVES
    if binary is not None:
        name = re.sub(r"(_perf)?(_mpi)?$", "", Path(binary).name)
        if name not in known:
            raise InputError(f"{path}: test {binary}: not one of nccl-tests' {', '.join(known)}")
    else:
        # The binary's whole name (all_reduce_perf, not its tail reduce_perf), wherever it stands in the file's
        # name (nccl_all_reduce_perf.log, 2x8_all_reduce_perf.log): the longest name first at each place.
        names = "|".join(sorted(known, key=len, reverse=True))
        named = set(re.findall(rf"(?<![a-z])({names})_perf", path.name.lower()))
        if len(named) != 1:
            raise InputError(
                f"{path}: which collective? The log has no '# Collective test starting:' line (nccl-tests "
                "before 2.17); name the file after the binary (all_reduce_perf.log)"
            )
        (name,) = named
    if name not in COLLECTIVES:
        raise InputError(f"{path}: {name}: the model prices {', '.join(COLLECTIVES)}")
    return name


def _one_gpu(devices: dict[int, tuple[str, str, int]], path: Path) -> str:
    names = dict.fromkeys(gpu for _, gpu, _ in devices.values())
    if len(names) > 1:
        second = next(line for _, gpu, line in devices.values() if gpu != next(iter(names)))
        raise InputError(
            f"{where(path, second)}: GPUs of several models ({', '.join(names)}); the model prices one per log"
        )
    return next(iter(names))


def _per_host(devices: dict[int, tuple[str, str, int]], path: Path) -> int:
    counts: dict[str, int] = {}
    for host, _, _ in devices.values():
        counts[host] = counts.get(host, 0) + 1
    if len(set(counts.values())) > 1:
        said = ", ".join(f"{host} {n}" for host, n in counts.items())
        raise InputError(f"{path}: hosts of unequal GPU counts ({said}); the model prices equal hosts")
    return next(iter(counts.values()))
