"""One configuration per row: measured runs, each with its own layout, evaluated for many candidate
constants at once (``validate --llm`` and ``calibrate`` of layouts), and any configurations given as columns
(``sweep need`` of a layout: one layout at many candidate fabrics)."""

import dataclasses
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.core.layout_axes import (
    DEFAULT_ATTENTION,
    DEFAULT_COLLECTIVE,
    LAYOUT_COLLECTIVES,
    recompute_code,
)
from netsweep_jax.sweep.core.sweep_settings import SweepSettings
from netsweep_jax.sweep.engine.compiled import (
    GPU_FIELDS,
    INNER_COLUMNS,
    OUTER_COLUMNS,
    PRECISION_FIELDS,
    layout_inputs,
    layout_rows_status,
)
from netsweep_jax.sweep.engine.compiled import layout_rows as layout_block_rows
from netsweep_jax.sweep.engine.layout_grid import arch_row, gpu_row, precision_bytes
from netsweep_jax.sweep.model.llms import LLM
from netsweep_jax.sweep.model.nccl_fabric import SHIPPED

ROWS_BLOCK = 2**14  # (run, candidate constants) pairs per call of the rows kernel: one compiled shape


@dataclasses.dataclass(frozen=True)
class LayoutRow:
    """One training run to evaluate: a model, a GPU, a precision and a layout (stored units, as the CLI's).

    ``None`` for a system setting means the GPU preset's; ``dp`` 0 means gpus / (tp pp cp). ``settings``: the
    run's settings of one value per sweep (the stack's: :mod:`sweep.core.sweep_settings`).
    """

    llm: LLM
    gpu: str
    precision: str
    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    expert_tp: int = 1
    dp: int = 0
    micro_batch: int = 1
    global_batch: int = 1
    chunks: int = 1
    recompute: str = "none"
    grad_bytes: int = 0
    offload_layers: int = 0
    settings: SweepSettings = SweepSettings()
    sequence_parallel: int = 1
    zero: int = 0
    attention: str = DEFAULT_ATTENTION
    collective: str = DEFAULT_COLLECTIVE
    nvlink_domain: float | None = None
    nvlink_bw: float | None = None
    gpus_per_node: float | None = None
    nics_per_node: float | None = None
    bandwidth: float | None = None
    latency: float = 0.0
    overhead: float = 0.0
    imbalance: float = 1.0


def evaluate_rows(
    rows: list[LayoutRow],
    efficiency: np.ndarray,
    utilization: np.ndarray,
    outputs: Sequence[str] | None = None,
    memory_efficiency: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every output of :mod:`kernels.layout` (or those named in ``outputs``) for each row and candidate
    constant, in float64.

    ``efficiency``, ``utilization`` and ``memory_efficiency`` (None: each row's own): [R, K] (K candidates per
    row, broadcast as arrays), or [R]. Returns dict name -> [R, K] (or [R]); a fit asks for the outputs it
    needs, so the host holds those only."""
    if memory_efficiency is None:  # each row's own, [R] or [R, 1] beside [R, K] candidates
        own = np.array([r.settings.memory_efficiency for r in rows], np.float64)
        memory_efficiency = own.reshape(-1, *(1,) * (np.ndim(efficiency) - 1))
    memory = memory_efficiency
    efficiency, utilization, memory = np.broadcast_arrays(
        np.asarray(efficiency, np.float64),
        np.asarray(utilization, np.float64),
        np.asarray(memory, np.float64),
    )
    one = efficiency.ndim == 1
    if one:
        efficiency, utilization, memory = efficiency[:, None], utilization[:, None], memory[:, None]
    asked = efficiency.shape

    settings, layout = row_columns(rows)
    # The R x K (row, candidate) pairs, flattened, in blocks (_in_blocks).
    n = efficiency.size
    flat = {
        "efficiency": efficiency.ravel(),
        "utilization": utilization.ravel(),
        "memory_efficiency": memory.ravel(),
    }

    def columns(pair: np.ndarray) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        row = pair // asked[1]
        per_pair = {k: v[pair] for k, v in flat.items()}
        cell = {k: jnp.asarray(per_pair.get(k, v[row])) for k, v in settings.items()}
        return cell, {k: jnp.asarray(v[row]) for k, v in layout.items()}

    result = _in_blocks(n, columns, outputs)
    result = {k: v.reshape(asked) for k, v in result.items()}
    return {k: v[:, 0] for k, v in result.items()} if one else result


def rows_status(rows: Sequence[LayoutRow]) -> np.ndarray:
    """[R] int: each row's :data:`kernels.layout.STATUS` code (0: a layout that can exist), the kernel's
    ``status`` output without compiling the kernel. Rows are padded to a power of two (at least 64) by repeating
    the last, so that files of similar length share one small compile."""
    settings, layout = row_columns(rows)
    n = len(rows)
    pick = np.minimum(np.arange(max(64, 1 << (n - 1).bit_length())), n - 1)
    with jax.enable_x64(True):
        status = layout_rows_status(
            {k: jnp.asarray(v[pick]) for k, v in settings.items()},
            {k: jnp.asarray(v[pick]) for k, v in layout.items()},
        )
    return np.asarray(status)[:n].astype(int)


def evaluate_columns(
    cell: dict[str, np.ndarray],
    layout: dict[str, np.ndarray],
    collectives: int = 0,
    outputs: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Every output of :mod:`kernels.layout` (or those named in ``outputs``) of R configurations given as
    columns, in float64: ``cell`` a setting cell's (:data:`~sweep.engine.compiled.OUTER_COLUMNS`, SI, 0 for a
    system setting that follows the GPU's preset) and ``layout`` a layout's
    (:data:`~sweep.engine.compiled.INNER_COLUMNS`), name -> [R] each; ``collectives`` the pricing (0 flat, 1
    nccl). Evaluated as :func:`evaluate_rows` evaluates, in blocks of :data:`ROWS_BLOCK` (the last padded by
    repeating its last row): one compiled shape per pricing, the one every fit and validation calls.
    Returns dict name -> [R]."""
    n = len(next(iter(cell.values())))

    def columns(row: np.ndarray) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
        return (
            {k: jnp.asarray(np.asarray(v, np.float64)[row]) for k, v in cell.items()},
            {k: jnp.asarray(np.asarray(v, np.float64)[row]) for k, v in layout.items()},
        )

    return _in_blocks(n, columns, outputs, collectives)


def _in_blocks(
    n: int,
    columns: Callable[[np.ndarray], tuple[dict[str, jax.Array], dict[str, jax.Array]]],
    outputs: Sequence[str] | None,
    collectives: int = 0,
) -> dict[str, np.ndarray]:
    """The kernel's outputs (or those named in ``outputs``) of ``n`` configurations, name -> [n] float64, in
    blocks of :data:`ROWS_BLOCK` (the last padded by repeating its last configuration): ``columns(index)`` gives
    a block's setting-cell and layout columns for configuration indices [ROWS_BLOCK]. Every fit, validation and
    check calls one compiled shape per pricing, whatever ``n``, and holds one block's inputs at a time."""
    result: dict[str, np.ndarray] = {}
    with jax.enable_x64(True):
        for start in range(0, n, ROWS_BLOCK):
            arch, dev, lay = layout_inputs(*columns(np.minimum(np.arange(start, start + ROWS_BLOCK), n - 1)))
            if collectives:  # the pricing as an array, as tests/layout_cases.py hands it: the same compile
                lay = lay._replace(collectives=jnp.full(ROWS_BLOCK, float(collectives), jnp.float64))
                out = layout_block_rows(arch, dev, lay, collectives=collectives)
            else:
                out = layout_block_rows(arch, dev, lay)
            for k in outputs or out:
                result.setdefault(k, np.empty(n, np.float64))[start : start + ROWS_BLOCK] = np.asarray(
                    out[k], np.float64
                )[: n - start]
    return result


def row_columns(rows: Sequence[LayoutRow]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each run as a setting cell's columns (:data:`~sweep.engine.compiled.OUTER_COLUMNS`) and a layout's
    (:data:`~sweep.engine.compiled.INNER_COLUMNS`), [R] float64 each, in the block tables' units (SI; 0 for a
    system setting that follows the GPU's preset; efficiency and utilization 0, the caller's to set):
    :func:`~sweep.engine.compiled.layout_inputs` maps them to the kernel's inputs, as for a sweep's block.
    :func:`evaluate_rows` and the validation's fit (:mod:`sweep.analysis.llm_fit`) both read them."""

    def column(values: Sequence[float]) -> np.ndarray:  # [R]: one value per row
        return np.asarray(values, np.float64)

    cell = {name: column([0.0] * len(rows)) for name in OUTER_COLUMNS}
    cell.update({f: column([getattr(arch_row(r.llm), f) for r in rows]) for f in kernel.Arch._fields})
    gpu_columns = [
        (
            *gpu_row(r.gpu),
            *r.settings.columns(),
            *SHIPPED.columns(),
            0.0,  # no tier above the hosts: a run states no fabric
            1.0,
            0.0,  # no SHARP, not rail-only
            0.0,
        )
        for r in rows
    ]  # fmt: skip (the fabric's constants: the shipped fit's, read only where a run is priced by NCCL's tuner)
    cell.update({name: column([g[k] for g in gpu_columns]) for k, name in enumerate(GPU_FIELDS)})
    precision = [precision_bytes(r.precision) for r in rows]
    cell.update({name: column([b[k] for b in precision]) for k, name in enumerate(PRECISION_FIELDS)})
    for name, factor in (("nvlink_domain", 1.0), ("nvlink_bw", 1e9), ("gpus_per_node", 1.0),
                         ("nics_per_node", 1.0), ("bandwidth", 1e9)):  # fmt: skip
        cell[name] = column([0.0 if getattr(r, name) is None else getattr(r, name) * factor for r in rows])
    cell.update(
        gpus=column([r.gpus for r in rows]),
        global_batch=column([r.global_batch for r in rows]),
        grad_bytes=column([r.grad_bytes for r in rows]),
        attention=column([float(r.attention == "flash") for r in rows]),
        offload_layers=column([r.offload_layers for r in rows]),
        latency=column([r.latency * 1e-6 for r in rows]),
        collective=column([LAYOUT_COLLECTIVES.index(r.collective) for r in rows]),
        imbalance=column([r.imbalance for r in rows]),
        overhead=column([r.overhead * 1e-3 for r in rows]),
    )  # slowdown, jitter and e_N stay 0: a measured run's stragglers are in its measurement
    layout = {name: column([0.0] * len(rows)) for name in INNER_COLUMNS}
    layout.update(
        dp=column([r.dp for r in rows]),
        tp=column([r.tp for r in rows]),
        pp=column([r.pp for r in rows]),
        cp=column([r.cp for r in rows]),
        ep=column([r.ep for r in rows]),
        expert_tp=column([r.expert_tp for r in rows]),
        micro_batch=column([r.micro_batch for r in rows]),
        schedule=column([r.chunks for r in rows]),
        recompute=column([recompute_code(r.recompute) for r in rows]),
        sequence_parallel=column([r.sequence_parallel for r in rows]),
        zero=column([r.zero for r in rows]),
    )
    return cell, layout
