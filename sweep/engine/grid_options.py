"""The typed specification of a sweep's keywords: :class:`SweepOptions`, shared by
:func:`sweep.engine.grid.make_grid` and :func:`sweep.evaluate`, and :class:`GridOptions`,
``make_grid``'s (PEP 692 ``**options``); each key documented once, with its units, and
defaulting to the schema's registry. Also the type aliases of what those keywords accept.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict

from netsweep_jax.sweep.model.fabric_constants import FabricConstants
from netsweep_jax.sweep.model.fabrics import FabricPreset
from netsweep_jax.sweep.model.profile import Profile

# What the specification accepts (see make_grid).
AxisValues = float | str | Sequence[float] | npt.NDArray[Any]  # a number, a sequence or value syntax
Names = str | Sequence[str]  # a name, a comma list or a sequence
Models = str | Profile | Sequence[str | Profile]
WorkloadValues = str | int | Sequence[str | int] | None  # a transformer workload setting
ReduceTable = str | Path | tuple[npt.ArrayLike, npt.ArrayLike] | None
Table = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


class SweepOptions(TypedDict, total=False):
    """The keywords of a sweep that :func:`make_grid` and :func:`sweep.evaluate` share, each optional.

    ``bandwidth`` and the kept variables are the two each of them spells itself: ``make_grid``
    (:class:`GridOptions`) takes ``bandwidth`` with a default and ``variables``, ``evaluate`` takes
    ``bandwidth`` with a default of its own (its signature's) and calls the variables ``vars`` (as ``--vars``). A key not given
    takes its registry's default (:data:`sweep.core.axes.NUMERIC_AXES`, :data:`sweep.core.schema.DEFAULTS`).

    Keys:
      fusion_buffer: tensor fusion buffer size, MiB.
      fusion_timeout: tensor fusion timeout, ms.
      nodes: number of nodes (integer).
      gpus_per_node: GPUs per node (integer).
      nics_per_node: network interfaces per node, shared by its GPUs (integer).
      utilization: fraction of link bandwidth the transport achieves, in [1e-4, 1].
      ratio: gradient compression ratio (>= 1).
      latency: per-message latency, us.
      overhead: time per iteration nothing overlaps when N > 1, ms.
      slowdown: compute stretched by 1 + slowdown when N > 1.
      jitter: coefficient of variation of a worker's compute time.
      accum: micro-batches of compute per gradient synchronization (integer).
        Each numeric axis takes a number, a sequence, or a value-syntax string (``"1..100@10"``)
        in those units; its bounds and default are :data:`sweep.core.axes.NUMERIC_AXES`'s
        (None: the default).
      collective: a name, comma list or sequence of names from :data:`sweep.core.schema.COLLECTIVES`
        (None: follows the workload, :func:`~sweep.engine.workloads.workload_defaults`: ``ring`` for the paper's CNNs,
        ``nccl-ring`` for transformers).
      bucketing: ``horovod``, ``ddp`` and/or ``fsdp`` (:mod:`sweep.model.fusion`), likewise (None:
        ``horovod`` for the paper's CNNs, ``ddp`` for transformers).
      reduce_table: ([T] bytes, [T] seconds), a ``bytes,seconds`` file, or None for
        the default V100 model.
      intra_bandwidth: Gbit/s, intra-node links (``hierarchical`` and ``nccl-*``) (None: the
        NVLink of the models' GPU preset, 1200 for the paper's V100 runs).
      dtype: ``"float32"`` or ``"float64"`` (compute).
      store: storage dtype, ``float16``, ``float32`` or ``float64`` (None: the compute dtype).
      gpu, precision, batch, seq_len: a transformer's workload, each a value or a comma list
        (:func:`~sweep.engine.workloads.resolve_models`, :mod:`sweep.model.compute`); only for transformer models.
      iteration_time: T1, seconds: every model's compute scaled to it, as ``--iteration-time`` scales it (None:
        each model's own).
      compressor: a spec, comma list or sequence (:mod:`sweep.model.compressors`: ``none``, ``fp16``,
        ``int8``, ``topk:D``, ``randomk:D``, ``signsgd``, ``powersgd:R``).
      iterations_factor: ``topk:0.01=1.3,...`` or a dict: iterations each compressor needs to
        reach the same accuracy, relative to none (default 1).
      codec_cost: a JSON file or a dict overriding the codec throughput model.
      reduce: ``OP:DIM[,DIM...]`` or a list of them (:mod:`sweep.engine.reductions`): reduce on
        the device; the result keeps the other dims.
      fabric: for NCCL's own collective (``collective`` nccl, which it implies where no collective is given): a
        fabric preset's name or :class:`~sweep.model.fabrics.FabricPreset` (:data:`sweep.model.fabrics.FABRICS`:
        its GPUs and NICs a node, NIC rate and GPU where not given, its NVLink domain, hosts a leaf, spine and
        SHARP), or a fabric file's :class:`~sweep.model.nccl_fabric.FabricConstants`
        (:func:`sweep.io.fabric_file.read_fabric`; ``sweep calibrate --nccl-tests`` writes them), whose
        constants replace the shipped fit's.
      oversubscription: with a preset, the spine's (one value; None: the preset's as built).
    """

    fusion_buffer: AxisValues | None
    fusion_timeout: AxisValues | None
    nodes: AxisValues | None
    gpus_per_node: AxisValues | None
    nics_per_node: AxisValues | None
    utilization: AxisValues | None
    ratio: AxisValues | None
    latency: AxisValues | None
    overhead: AxisValues | None
    slowdown: AxisValues | None
    jitter: AxisValues | None
    accum: AxisValues | None
    collective: Names | None
    bucketing: Names | None
    reduce_table: ReduceTable
    intra_bandwidth: float | None
    dtype: str
    store: str | None
    gpu: WorkloadValues
    precision: WorkloadValues
    batch: WorkloadValues
    seq_len: WorkloadValues
    iteration_time: float | None
    compressor: Names
    iterations_factor: str | Mapping[Any, float | str] | None
    codec_cost: str | Path | Mapping[str, float] | None
    reduce: str | Sequence[str] | None
    fabric: str | FabricPreset | FabricConstants | None
    oversubscription: float | str | None


class GridOptions(SweepOptions, total=False):
    """The keywords of :func:`~sweep.engine.grid.make_grid`: those of :class:`SweepOptions`, and these two.

    Keys:
      bandwidth: Gbit/s, a numeric axis as the others (None or not given: the schema's default).
      variables: the variables to keep: a comma list or sequence from :data:`sweep.core.schema.VARIABLES`
        (None: the first four, and ``time_to_accuracy`` when some compressor is not ``none``).
    """

    bandwidth: AxisValues | None
    variables: Names | None
