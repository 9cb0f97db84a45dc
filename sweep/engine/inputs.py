"""The host-side input builder: the arrays the kernel sees, in SI units, for sweeps, ``need`` and ``calibrate``.

Every kernel input is made here, from the same three steps:

- buckets: a profile's fused buckets (:func:`sweep.model.fusion.buckets_for`, the fusion
  knobs converted once, by :func:`fused`), padded to a multiple of :data:`BUCKET_PAD`
  (:func:`bucket_rows`);
- layouts: the collective coefficients of worker layouts (:mod:`sweep.model.collectives`),
  computed in float64 and padded with single workers (zero cost) (:func:`layout_arrays`);
- configurations: the inner axes in SI units, padded with harmless finite values
  (:func:`config_arrays`).

Two shapes use them: :class:`BlockInputs`, the blocks of a :class:`~sweep.engine.blocks.Blocking`
over a :class:`~sweep.engine.grid.Grid` (every task padded to the sweep's largest bucket
count; fusion and coefficients cached, as blocks share tasks and layouts), and
:func:`row_inputs`, one configuration, layout and bucket set per row (measured runs,
for calibration).
"""

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.fit import Rows
from netsweep_jax.kernels.nccl import nvlink_gbs
from netsweep_jax.kernels.overlap import NCCL_CHOICE, PAD_CONFIG, Buckets, Config, Features, Workers
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import NCCL_COLLECTIVES, is_nccl, uses_nccl
from netsweep_jax.sweep.core.schema import INNER, STRUCTURAL, WORKERS
from netsweep_jax.sweep.core.values import si_values
from netsweep_jax.sweep.engine.blocks import Block, Blocking
from netsweep_jax.sweep.engine.grid import Grid
from netsweep_jax.sweep.engine.grid_options import Table
from netsweep_jax.sweep.engine.workloads import gpu_of
from netsweep_jax.sweep.model.collectives import PIPELINED, Coefficients, coefficients
from netsweep_jax.sweep.model.compressors import bucket_codec, codec_cost_for, tensor_codec
from netsweep_jax.sweep.model.compute import die
from netsweep_jax.sweep.model.fabrics import SweepFabric
from netsweep_jax.sweep.model.fusion import Buckets as Fused
from netsweep_jax.sweep.model.fusion import Units, buckets_for
from netsweep_jax.sweep.model.nccl_fabric import ARCH, SHIPPED
from netsweep_jax.sweep.model.profile import Profile

BUCKET_PAD = 16  # the bucket count is padded to a multiple of this
# No --fabric: the shipped fit's constants, each host its own NVLink domain, no tier above the hosts.
NO_FABRIC = SweepFabric(SHIPPED, "")
Array = npt.NDArray[Any]
Host = Any  # host (numpy) arrays, handed to the kernels' NamedTuples whose fields are typed jax.Array
Task = tuple[int, ...]
Slab = tuple[slice, ...]


def nccl_code(collective: str) -> float:
    """The kernel's code of a collective (:attr:`kernels.overlap.Workers.nccl`): 0 not NCCL's own, NCCL_CHOICE
    (1) NCCL's choice (``nccl``), NCCL_CHOICE + i its forcing i of :data:`kernels.nccl.FORCINGS` (``nccl:ALGO``,
    ``nccl:PROTO``: ``nccl`` is index 0 of :data:`~sweep.core.layout_axes.NCCL_COLLECTIVES`)."""
    return float(NCCL_CHOICE + NCCL_COLLECTIVES.index(collective)) if is_nccl(collective) else 0.0


def padded_count(longest: int) -> int:
    """The bucket count that holds ``longest`` buckets: the next multiple of :data:`BUCKET_PAD`."""
    return -(-longest // BUCKET_PAD) * BUCKET_PAD


def fused(profile: Profile, bucketing: str, fusion_buffer: float, fusion_timeout: float) -> Fused | Units:
    """A profile's buckets (or FSDP units) under a schedule, the fusion knobs in stored units (MiB, ms)."""
    return buckets_for(
        profile,
        bucketing,
        float(si_values("fusion_buffer", fusion_buffer)),
        float(si_values("fusion_timeout", fusion_timeout)),
    )


def bucket_rows(b: Fused | Units, count: int, dtype: np.dtype) -> Host:
    """[4, count]: ready (FSDP: forward), nbytes, valid, and (FSDP only) backward; FSDP units are
    right-aligned (padding first), buckets left-aligned."""
    out = np.zeros((4, count), dtype=dtype)
    if isinstance(b, Units):
        out[:, count - len(b) :] = (b.forward, b.nbytes, np.ones(len(b)), b.backward)
    else:
        out[:3, : len(b)] = (b.ready, b.nbytes, np.ones(len(b)))
    return out


def layout_arrays(c: Coefficients, width: int, dtype: np.dtype) -> tuple[Host, Host]:
    """(scalars [6, width], reduce [width, Bk]) of K <= width layouts' coefficients; the padding
    lanes are single workers (zero cost)."""
    k = c.transfer.shape[0]
    scalars = np.zeros((6, width), dtype=dtype)
    scalars[:, :k] = (c.transfer, c.wire, c.messages, c.straggle, c.multi, c.piped)
    reduce = np.zeros((width, c.reduce.shape[1]), dtype=dtype)
    reduce[:k] = c.reduce
    return scalars, reduce


def _workers(scalars: Host, reduce: Host, *extra: Host) -> Workers:
    """:class:`~kernels.overlap.Workers` from [6, K] scalars, [K, Bk] reduce and the optional fields."""
    return Workers(scalars[0], scalars[1], scalars[2], scalars[3], scalars[4], scalars[5], reduce, *extra)


def _buckets(rows: Host, backward: Host, *extra: Host) -> Buckets:
    """:class:`~kernels.overlap.Buckets` from [3+, Bk] (ready, nbytes, valid) rows and the optional fields."""
    return Buckets(rows[0], rows[1], rows[2], backward, *extra)


@functools.lru_cache(maxsize=64)
def _nccl_gpu(gpu: str | None, intra_bits: float, dtype: str) -> tuple[int, float]:
    """(NCCL's architecture index, NVLink GB/s as NCCL counts it) of a profile's GPU preset at the sweep's
    intra-node rate (bit/s): the same for every layout and block of a task, so computed once (a JAX call on the
    host; NCCL's collective needs a GPU preset: make_grid refuses a profile without one). ``dtype``: the sweep's,
    in which JAX computes it: a key of the cache, so that a float32 sweep's rounding never serves a float64 one
    (a float64 sweep after a float32 one of the same GPU was off by 5e-8)."""
    arch = ARCH[die(gpu or "v100")]
    return arch, float(np.asarray(nvlink_gbs(intra_bits / 8, arch)))


def config_arrays(values: Sequence[npt.ArrayLike], width: int, dtype: np.dtype) -> Config:
    """:class:`~kernels.overlap.Config` of [width]: ``values`` (one SI array per field of
    :data:`~sweep.core.schema.INNER`), then :data:`~kernels.overlap.PAD_CONFIG` lanes."""
    out: Host = np.empty((len(INNER), width), dtype=dtype)
    for row, given, pad in zip(out, values, PAD_CONFIG):
        a = np.asarray(given).ravel()
        row[:] = pad
        row[: a.size] = a
    return Config(*out)


def features_of(grid: Grid) -> Features:
    """The model terms a grid's sweep needs (static switches of the kernel)."""
    return Features(
        piped=any(c in PIPELINED for c in grid.collectives),
        compute=any(np.any(grid.values[d] != 0) for d in ("overhead", "slowdown", "jitter")),
        fsdp="fsdp" in grid.bucketings,
        compress=grid.compresses,
        accuracy="time_to_accuracy" in grid.variables,
        nccl=uses_nccl(grid.collectives),
    )


class BlockInputs:
    """Host arrays for the blocks of ``blocking`` over ``grid``, in the grid's dtype."""

    def __init__(self, grid: Grid, blocking: Blocking) -> None:
        self.grid = grid
        self.blocking = blocking
        self.dtype = np.dtype(grid.dtype)
        self._fused: dict[tuple[int, ...], Fused | Units] = {}
        self._workers: dict[tuple[Any, ...], Workers] = {}
        self._codecs: dict[tuple[int, ...], Host] = {}
        self.bucket_count = padded_count(max(len(self._fuse(t)) for t in blocking.tasks()))
        self.zero_latency = bool(np.all(grid.values["latency"] == 0))
        self.features = features_of(grid)

    def _named(self, task: Task) -> dict[str, int]:
        return dict(zip(STRUCTURAL, task))

    def _intra_bits(self, task: Task) -> float:
        """The task's profile's intra-node bandwidth, bit/s (:meth:`~sweep.engine.grid.Grid.intra_of`)."""
        return float(si_values("bandwidth", self.grid.intra_of(self._named(task)["model"])))  # Gbit/s as --bw

    def _fuse(self, task: Task) -> Fused | Units:
        """Fused buckets of a task (cached by profile and fusion knobs: not collective)."""
        t = self._named(task)
        key = (t["model"], t["bucketing"], t["fusion_buffer"], t["fusion_timeout"])
        if key not in self._fused:
            g = self.grid
            self._fused[key] = fused(
                g.profiles[t["model"]],
                g.bucketings[t["bucketing"]],
                g.values["fusion_buffer"][t["fusion_buffer"]],
                g.values["fusion_timeout"][t["fusion_timeout"]],
            )
        return self._fused[key]

    def buckets(self, task: Task) -> Buckets:
        """:class:`~kernels.overlap.Buckets` of [bucket_count] arrays for a task (FSDP units: padding first)."""
        b = self._fuse(task)
        out = bucket_rows(b, self.bucket_count, self.dtype)
        fsdp = self.features.fsdp
        sharded = self.dtype.type(isinstance(b, Units)) if fsdp else None
        if not self.features.compress:
            return _buckets(out, out[3] if fsdp else None, sharded)
        compressor = self.grid.compressors[self._named(task)["compressor"]]
        codec: Host = np.zeros((4, self.bucket_count), dtype=self.dtype)
        codec[:, : len(b)] = self._codec(task)
        scalars = (compressor.gather, compressor.rounds, self.grid.factors[compressor.name])
        return _buckets(
            out, out[3] if fsdp else None, sharded, *codec, *(self.dtype.type(v) for v in scalars)
        )

    def _codec(self, task: Task) -> Host:
        """(payload, encode, decode, unpack) [buckets] float64 of a task's compressor (cached)."""
        t = self._named(task)
        key = (t["model"], t["bucketing"], t["fusion_buffer"], t["fusion_timeout"], t["compressor"])
        if key not in self._codecs:
            g = self.grid
            profile = g.profiles[t["model"]]
            codec = tensor_codec(
                g.compressors[t["compressor"]], profile, codec_cost_for(profile, g.codec_overrides)
            )
            b = self._fuse(task)
            assert isinstance(b, Fused)  # compression is refused with FSDP (make_grid)
            self._codecs[key] = bucket_codec(codec, b.last_tensor)
        return self._codecs[key]

    def t1(self, task: Task) -> np.floating:
        """The task's single-GPU iteration time (s), a scalar of the compute dtype."""
        return self.dtype.type(self.grid.profiles[self._named(task)["model"]].t1)

    def workers(self, task: Task, workers_slab: Slab) -> Workers:
        """:class:`~kernels.overlap.Workers` of [kb_width] coefficients (cached per task and slab)."""
        key = (task, tuple((s.start, s.stop) for s in workers_slab))
        if key not in self._workers:
            self._workers[key] = self._make_workers(task, workers_slab)
        return self._workers[key]

    def _make_workers(self, task: Task, workers_slab: Slab) -> Workers:
        g = self.grid
        values = [g.values[d][s] for d, s in zip(WORKERS, workers_slab)]
        nodes, gpus, nics = (a.ravel() for a in np.meshgrid(*values, indexing="ij"))
        collective = g.collectives[self._named(task)["collective"]]
        plain: Host = self.buckets(task).nbytes.astype(np.float64)
        table, intra = g.table_of(self._named(task)["model"]), self._intra_bits(task)

        def coefficients_for(nbytes: Array) -> Coefficients:
            return coefficients(collective, nodes, gpus, nbytes, table, intra, nics_per_node=nics)

        c = coefficients_for(plain)
        kb, k = self.blocking.kb_width, nodes.size
        scalars, reduce = layout_arrays(c, kb, self.dtype)
        if not self.features.compress:
            workers = _workers(scalars, reduce)
        else:
            # The payload is what gets reduced; an all-gathered one is summed while decoding.
            compressor = g.compressors[self._named(task)["compressor"]]
            payload = np.zeros(self.bucket_count)
            if not compressor.gather:
                payload[: len(self._fuse(task))] = self._codec(task)[0]
            _, compressed = layout_arrays(coefficients_for(payload), kb, self.dtype)
            extra: Host = np.ones((3, kb), dtype=self.dtype)
            extra[1:] = 0.0
            extra[:, :k] = (c.spread, c.workers, c.gather_messages)
            plain_reduce = reduce if self.features.accuracy else None
            workers = _workers(scalars, compressed, extra[0], extra[1], plain_reduce)._replace(
                gather_messages=extra[2]
            )
        if not self.features.nccl:
            return workers
        ours: Host = np.zeros(kb, dtype=self.dtype)
        ours[:k] = nccl_code(
            collective
        )  # 0 flat, 1 NCCL's choice, 1 + i its forcing i (kernels.nccl.FORCINGS)
        return workers._replace(nccl=ours, fabric=self._fabric(task, nodes, gpus, nics, kb))

    def _fabric(self, task: Task, nodes: Array, gpus: Array, nics: Array, width: int) -> Host:
        """[width, 16] each layout's fabric for NCCL's collective (:class:`~kernels.overlap.Workers`'s
        ``fabric``, :data:`~kernels.overlap.FABRIC_FIELDS`): GPUs a host, hosts, NVLink as NCCL counts it (the
        sweep's intra-node bandwidth, by default the task's GPU's NVLink), NICs, the GPU's architecture, the GPUs
        of one NVLink domain (a ``--fabric`` preset's, else the host's), and the fabric's tier and constants
        (``--fabric``'s, else none and the shipped fit's); the padding lanes one GPU on one host."""
        gpu = gpu_of(self.grid.profiles[self._named(task)["model"]])
        arch, nvlink = _nccl_gpu(gpu, self._intra_bits(task), str(np.dtype(self.dtype)))
        chosen = self.grid.fabric or NO_FABRIC
        lane = [1.0, 1.0, nvlink, 1.0, arch, 1.0, *chosen.tier(), *chosen.constants.columns()]
        fabric: Host = np.tile(np.array(lane, dtype=self.dtype), (width, 1))
        k = nodes.size
        fabric[:k, 0], fabric[:k, 1], fabric[:k, 3] = gpus, nodes, nics
        fabric[:k, 5] = chosen.domain_of(gpus)  # GPUs a domain (compute.host_system's for a preset)
        return fabric

    def configs(self, inner_slab: Slab) -> Config:
        """:class:`~kernels.overlap.Config` of [ci_width] SI values for the inner part of a slab."""
        g = self.grid
        values = [si_values(d, g.values[d][s]) for d, s in zip(INNER, inner_slab)]
        return config_arrays(np.meshgrid(*values, indexing="ij"), self.blocking.ci_width, self.dtype)

    def block(self, block: Block) -> tuple[Config, Workers, Buckets, np.floating]:
        """The four host inputs of one block: configurations [ci_width], layouts [kb_width], buckets, T1."""
        return (
            self.configs(block.inner_slab),
            self.workers(block.task, block.outer_slab),
            self.buckets(block.task),
            self.t1(block.task),
        )


def row_inputs(
    runs: Sequence[Profile],
    *,
    bucketing: Sequence[str],
    fusion_buffer: Sequence[float],
    fusion_timeout: Sequence[float],
    collective: Sequence[str],
    nodes: Sequence[float],
    gpus_per_node: Sequence[float],
    nics_per_node: Sequence[float],
    inner: Mapping[str, Sequence[float]],
    reduce_tables: Sequence[Table],
    intra_bandwidths: Sequence[float],
    dtype: str = "float64",
) -> tuple[Rows, Features]:
    """Kernel inputs of R rows, each its own run: a profile, schedule, fusion, layout and configuration.

    Args:
      runs: [R] profiles; bucketing, fusion_buffer (MiB), fusion_timeout (ms), collective,
        nodes, gpus_per_node, nics_per_node: [R] each, in stored units.
      inner: each axis of :data:`~sweep.core.schema.INNER` -> [R] stored values.
      reduce_tables: [R] each row's ([T] bytes, [T] seconds); intra_bandwidths: [R] each row's, Gbit/s (a fit of
        rows on several GPUs prices each at its own GPU's NVLink and memory, as a sweep does).

    Returns:
      (:class:`kernels.fit.Rows` with buckets padded to the longest row's and an empty [R, 0]
      parameter index, the :class:`~kernels.overlap.Features` they need).
    """
    if uses_nccl(collective):
        raise InputError(
            f"{','.join(sorted({c for c in collective if is_nccl(c)}))}: not calibrated from measured runs (NCCL's "
            "own collective takes the transport's efficiency from its fabric constants, eta_net, where a fitted "
            "utilization would be a second efficiency over it); "
            "calibrate with nccl-ring or nccl-tree, or fit NCCL's own constants to nccl-tests logs (sweep "
            "calibrate --nccl-tests LOG --out FABRIC) and give grid or plan --fabric FABRIC",
            param="collective",
        )
    n, dt = len(runs), np.dtype(dtype)
    fuses = [fused(p, bucketing[i], fusion_buffer[i], fusion_timeout[i]) for i, p in enumerate(runs)]
    count = max(len(b) for b in fuses)  # a fit pads rows and buckets itself (calibrate._padded)
    buckets: Host = np.stack([bucket_rows(b, count, dt) for b in fuses], axis=1)  # [4, R, count]
    fsdp = any(isinstance(b, Units) for b in fuses)
    intra_bits = si_values("bandwidth", np.asarray(intra_bandwidths, np.float64))
    scalars: Host = np.zeros((6, n), dt)
    reduce: Host = np.zeros((n, count), dt)
    for i in range(n):
        c = coefficients(
            collective[i],
            [nodes[i]],
            [gpus_per_node[i]],
            buckets[1, i].astype(np.float64),
            reduce_tables[i],
            float(intra_bits[i]),
            nics_per_node=[nics_per_node[i]],
        )
        scalars[:, i : i + 1], reduce[i : i + 1] = layout_arrays(c, 1, dt)
    config = config_arrays([si_values(d, inner[d]) for d in INNER], n, dt)
    sharded: Host = np.array([isinstance(b, Units) for b in fuses], dt) if fsdp else None
    t1: Host = np.array([p.t1 for p in runs], dt)
    index: Host = np.zeros((n, 0), np.int32)
    rows = Rows(
        config, _workers(scalars, reduce), _buckets(buckets, buckets[3] if fsdp else None, sharded), t1, index
    )
    features = Features(piped=any(c in PIPELINED for c in collective), compute=True, fsdp=fsdp)
    return rows, features
