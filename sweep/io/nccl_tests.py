"""A file of nccl-tests measurements in ``nccl_tests.csv``'s format (``../shared/published/nccl_tests.csv``).

One row per message size of one curve: the columns :data:`REQUIRED` (others, such as ``table_or_figure``,
``nccl_version`` and ``notes``, are kept as text). A malformed row is one :class:`InputError` naming the file,
line, row and rule; a row the model cannot price (no message size, no measured busbw, hardware it does not
know) is read all the same and reported by the validation (:mod:`sweep.analysis.nccl_validation`).

Units: ``bytes`` the nccl-tests size (the whole buffer), ``busbw_gbytes_s`` nccl-tests' busbw in GB/s
(1e9 bytes/s), ``nic_gbps`` Gbit/s of one NIC.
"""

import collections
import dataclasses
import math
import re
from pathlib import Path

from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError, where
from netsweep_jax.sweep.core.textfile import read_csv_table
from netsweep_jax.sweep.core.values import number
from netsweep_jax.sweep.model.compute import FASTEST_NIC_GBPS, GPUS, MAX_NIC_GBPS

REQUIRED = (
    "id",
    "source",
    "collective",
    "gpu",
    "gpus_per_node",
    "nics_per_node",
    "nic_gbps",
    "nodes",
    "algo_or_protocol_if_stated",
    "bytes",
    "busbw_gbytes_s",
)
# nccl-tests' binaries' collectives: those kernels/nccl.py prices, in its order, then the others (read, and
# reported as not priced).
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
OTHER_COLLECTIVES = ("broadcast", "reduce", "gather", "scatter", "hypercube")
MAX_ROWS = 100_000
# nccl-tests' busbw over algbw (size / time) for ``ranks`` ranks: its doc/PERFORMANCE.md and each test's GetBw
# (src/all_reduce.cu and the others); kernels.nccl.bus_factor's, on the host.
BUS_FACTOR = {
    "all_reduce": lambda ranks: 2 * (ranks - 1) / ranks,
    "all_gather": lambda ranks: (ranks - 1) / ranks,
    "reduce_scatter": lambda ranks: (ranks - 1) / ranks,
    "alltoall": lambda ranks: (ranks - 1) / ranks,
    "sendrecv": lambda ranks: 1.0,
}
# The largest number a cell may hold (a size in bytes: an exabyte, past any buffer a GPU holds).
MAX_VALUE = 1e18


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One row: a collective of ``bytes`` over ``gpus_per_node`` x ``nodes`` ranks and its measured busbw.

    ``bytes`` or ``busbw`` None where the file leaves them blank; ``nics`` and ``nic_gbps`` None where unstated;
    ``host_gpus`` the GPUs each host holds as built (at least ``gpus_per_node``, the ranks on it), None for the GPU's
    system's (``calibrate --nccl-tests --gpus-per-node``: nccl-tests prints the ranks, not the host).
    """

    id: str
    source: str
    collective: str
    gpu: str
    gpus_per_node: int
    nodes: int
    nics: int | None
    nic_gbps: float | None
    stated: str
    bytes: int | None
    busbw: float | None
    notes: str
    line: int
    host_gpus: int | None = None

    @property
    def curve(self) -> str:
        """The curve the row belongs to: its id without the trailing ``-NN``."""
        return re.sub(r"-\d+$", "", self.id)

    @property
    def source_id(self) -> str:
        """The source's id prefix (the id's first dash-separated word: ``NT309A``, ``AZ``, ``OCIGB300``)."""
        return self.id.split("-", 1)[0]

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes


def read_nccl_tests(path: str | Path) -> list[Measurement]:
    """Read and check a file of nccl-tests rows; any malformed row is one error naming the file, line, row
    and rule."""
    path = Path(path)
    header_line, header, table = read_csv_table(path, "nccl-tests file")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"{where(path, header_line)}: missing column(s) {', '.join(missing)}")
    if len(table) > MAX_ROWS:
        raise InputError(f"{path}: {len(table):,} rows; a file holds at most {MAX_ROWS:,}")
    rows = [_row(cells, path, line) for line, cells in table]
    if not rows:
        raise InputError(f"{path}: no rows after the header")
    counts = collections.Counter(r.id for r in rows)
    twice = sorted(i for i, n in counts.items() if n > 1)
    if twice:
        raise InputError(f"{path}: row id {twice[0]} appears twice; ids must be unique")
    return rows


# A busbw past any GPU's: 4x the fastest NVLink (GB/s one way; NVLS's in-switch reduction reaches about 1.07x
# on H100, nccl_tests.csv) takes a rate in MB/s (1,000x) or Gbit/s (8x the fastest) for the error it is.
MAX_BUSBW = 4 * max(g.nvlink for g in GPUS.values()) / 1e9


def _row(cells: dict[str, str], path: Path, line: int) -> Measurement:
    rid = cells["id"]
    if not rid:
        raise InputError(f"{where(path, line)}: id is empty; every row needs one")

    def bad(rule: str) -> InputError:
        return InputError(f"{where(path, line)} (row {rid}): {rule}")

    def value(name: str, whole: bool, low: float, required: bool, high: float = MAX_VALUE) -> float | None:
        text = cells[name]
        if not text:
            if required:
                raise bad(f"{name} is empty; it is required")
            return None
        v = number(text, f"{where(path, line)} (row {rid}): {name}")
        if not math.isfinite(v) or v < low or v > high or (whole and not v.is_integer()):
            kind = "a whole number" if whole else "a number"
            raise bad(f"{name} {text} must be {kind} from {low:g} to {high:g}")
        return v

    collective = cells["collective"].lower()
    if collective not in COLLECTIVES + OTHER_COLLECTIVES:
        known = ", ".join(COLLECTIVES + OTHER_COLLECTIVES)
        raise bad(f"collective {cells['collective']!r} is not one of nccl-tests' {known}")
    if not cells["gpu"]:
        raise bad("gpu is empty; it is required")
    g = value("gpus_per_node", True, 1, True, NUMERIC_AXES["gpus_per_node"].high)
    nodes = value("nodes", True, 1, True)
    if g is None or nodes is None or g * nodes > 1e7:
        raise bad("gpus_per_node x nodes must be at most 10,000,000 ranks")
    if g * nodes == 1:
        # the model prices it at 0 s, and one such row made the fit's loss infinite (a hunt)
        raise bad("one rank (gpus_per_node x nodes 1): a collective of one GPU crosses no link")
    nics = value("nics_per_node", True, 1, False, NUMERIC_AXES["nics_per_node"].high)
    gbps = value("nic_gbps", False, 1e-3, False)
    if gbps is not None and gbps > MAX_NIC_GBPS:
        raise bad(
            f"nic_gbps {cells['nic_gbps']}: one NIC's rate, at most {MAX_NIC_GBPS:g} Gbit/s (no NIC runs faster "
            f"than {FASTEST_NIC_GBPS:g} today); a host's total over its nics_per_node?"
        )
    size = value("bytes", True, 1, False)
    busbw = value("busbw_gbytes_s", False, 0, False)
    if busbw is not None and busbw > MAX_BUSBW:
        raise bad(
            f"busbw_gbytes_s {cells['busbw_gbytes_s']}: nccl-tests' busbw in GB/s, at most {MAX_BUSBW:g} (4x the "
            "fastest NVLink of any GPU here); a value in MB/s or Gbit/s?"
        )
    return Measurement(
        id=rid,
        source=cells["source"],
        collective=collective,
        gpu=cells["gpu"],
        gpus_per_node=int(g),
        nodes=int(nodes),
        nics=None if nics is None else int(nics),
        nic_gbps=gbps,
        stated=cells["algo_or_protocol_if_stated"],
        bytes=None if size is None else int(size),
        busbw=busbw,
        notes=cells.get("notes", ""),
        line=line,
    )
