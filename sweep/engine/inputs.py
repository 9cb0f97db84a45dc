"""Block inputs: the host arrays the kernel sees for one block, in SI units.

For a block of a :class:`~sweep.engine.plan.Plan` over a :class:`~sweep.engine.grid.Grid`:

- its task's fused buckets (:func:`sweep.model.fusion.fuse`), padded to the sweep's
  largest bucket count, so every task has the same shape;
- its worker layouts' collective coefficients (:mod:`sweep.model.collectives`), computed
  in float64 and padded to ``plan.kb`` with single workers (zero cost);
- its inner configurations, padded to ``plan.ci`` with harmless finite values.

Fusion and coefficients are cached: blocks that share a task or a layout share them.
"""

import numpy as np

from netsweep_jax.kernels.overlap import PAD_CONFIG, Buckets, Config, Features, Layout
from netsweep_jax.sweep.core.schema import INNER, LAYOUT, STRUCTURAL
from netsweep_jax.sweep.core.values import si_values
from netsweep_jax.sweep.model.collectives import PIPELINED, coefficients
from netsweep_jax.sweep.model.compressors import bucket_codec, codec_cost_for, tensor_codec
from netsweep_jax.sweep.model.fusion import Units, buckets_for

BUCKET_PAD = 16  # the bucket count is padded to a multiple of this


class BlockInputs:
    """Host arrays for the blocks of ``plan`` over ``grid``, in the grid's dtype."""

    def __init__(self, grid, plan):
        self.grid = grid
        self.plan = plan
        self.dtype = np.dtype(grid.dtype)
        self._fused = {}
        self._layouts = {}
        self._codecs = {}
        longest = max(len(self._fuse(t)) for t in plan.tasks())
        self.bucket_count = -(-longest // BUCKET_PAD) * BUCKET_PAD
        self.zero_latency = bool(np.all(grid.values["latency"] == 0))
        self.features = Features(
            piped=any(c in PIPELINED for c in grid.collectives),
            compute=any(np.any(grid.values[d] != 0) for d in ("overhead", "slowdown", "jitter")),
            fsdp="fsdp" in grid.bucketings,
            compress=grid.compresses,
            accuracy="time_to_accuracy" in grid.variables)
        self.intra_bits = float(si_values("bandwidth", grid.intra_bandwidth))  # Gbit/s, like bandwidth

    def _named(self, task):
        return dict(zip(STRUCTURAL, task))

    def _fuse(self, task):
        """Fused buckets of a task (cached by profile and fusion knobs: not collective)."""
        t = self._named(task)
        key = (t["model"], t["bucketing"], t["fusion_buffer"], t["fusion_timeout"])
        if key not in self._fused:
            g = self.grid
            self._fused[key] = buckets_for(
                g.profiles[t["model"]], g.bucketings[t["bucketing"]],
                float(si_values("fusion_buffer", g.values["fusion_buffer"][t["fusion_buffer"]])),
                float(si_values("fusion_timeout", g.values["fusion_timeout"][t["fusion_timeout"]])),
            )
        return self._fused[key]

    def buckets(self, task):
        """:class:`~kernels.overlap.Buckets` of [bucket_count] arrays for a task (FSDP units: padding first)."""
        b = self._fuse(task)
        out = np.zeros((4, self.bucket_count), dtype=self.dtype)
        if isinstance(b, Units):
            real = slice(self.bucket_count - len(b), None)
            out[:, real] = (b.forward, b.nbytes, np.ones(len(b)), b.backward)
        else:
            out[:3, : len(b)] = (b.ready, b.nbytes, np.ones(len(b)))
        sharded = self.dtype.type(isinstance(b, Units)) if self.features.fsdp else None
        if not self.features.compress:
            return Buckets(*out[:3], out[3] if self.features.fsdp else None, sharded)
        compressor = self.grid.compressors[self._named(task)["compressor"]]
        codec = np.zeros((4, self.bucket_count), dtype=self.dtype)
        codec[:, : len(b)] = self._codec(task)
        scalars = (compressor.gather, compressor.rounds, self.grid.factors[compressor.name])
        return Buckets(*out[:3], out[3] if self.features.fsdp else None, sharded, *codec,
                       *(self.dtype.type(v) for v in scalars))

    def _codec(self, task):
        """(payload, encode, decode, unpack) [buckets] float64 of a task's compressor (cached)."""
        t = self._named(task)
        key = (t["model"], t["bucketing"], t["fusion_buffer"], t["fusion_timeout"], t["compressor"])
        if key not in self._codecs:
            g = self.grid
            profile = g.profiles[t["model"]]
            codec = tensor_codec(g.compressors[t["compressor"]], profile, codec_cost_for(profile, g.codec_overrides))
            self._codecs[key] = bucket_codec(codec, self._fuse(task).last_tensor)
        return self._codecs[key]

    def t1(self, task):
        """The task's single-GPU iteration time (s), a scalar of the compute dtype."""
        return self.dtype.type(self.grid.profiles[self._named(task)["model"]].t1)

    def layout(self, task, layout_slab):
        """:class:`~kernels.overlap.Layout` of [kb] coefficients (cached per task and slab)."""
        key = (task, tuple((s.start, s.stop) for s in layout_slab))
        if key not in self._layouts:
            g = self.grid
            values = [g.values[d][s] for d, s in zip(LAYOUT, layout_slab)]
            nodes, gpus, nics = (a.ravel() for a in np.meshgrid(*values, indexing="ij"))
            collective = g.collectives[self._named(task)["collective"]]
            plain = self.buckets(task).nbytes.astype(np.float64)

            def coefficients_for(nbytes):
                return coefficients(collective, nodes, gpus, nbytes, g.reduce_table, self.intra_bits,
                                    nics_per_node=nics)

            c = coefficients_for(plain)
            kb, k = self.plan.kb, nodes.size
            scalars = np.zeros((6, kb), dtype=self.dtype)  # padding: zero cost, like a single worker
            scalars[:, :k] = (c.transfer, c.wire, c.messages, c.straggle, c.multi, c.piped)
            reduce = np.zeros((kb, self.bucket_count), dtype=self.dtype)
            reduce[:k] = c.reduce
            if not self.features.compress:
                self._layouts[key] = Layout(*scalars, reduce)
                return self._layouts[key]
            # The payload is what gets reduced; an all-gathered one is summed while decoding.
            compressor = g.compressors[self._named(task)["compressor"]]
            payload = np.zeros(self.bucket_count)
            if not compressor.gather:
                payload[: len(self._fuse(task))] = self._codec(task)[0]
            compressed = np.zeros((kb, self.bucket_count), dtype=self.dtype)
            compressed[:k] = coefficients_for(payload).reduce
            extra = np.ones((2, kb), dtype=self.dtype)
            extra[1] = 0.0
            extra[:, :k] = (c.spread, c.workers)
            self._layouts[key] = Layout(*scalars, compressed, *extra, reduce if self.features.accuracy else None)
        return self._layouts[key]

    def configs(self, inner_slab):
        """:class:`~kernels.overlap.Config` of [ci] SI values for the inner part of a slab."""
        g, ci = self.grid, self.plan.ci
        values = [si_values(d, g.values[d][s]) for d, s in zip(INNER, inner_slab)]
        cells = [a.ravel() for a in np.meshgrid(*values, indexing="ij")]
        out = np.empty((len(INNER), ci), dtype=self.dtype)
        for row, a, pad in zip(out, cells, PAD_CONFIG):
            row[:] = pad
            row[: a.size] = a
        return Config(*out)
