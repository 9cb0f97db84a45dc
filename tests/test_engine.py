"""Engine structure: blocks tile the grid once; a sweep compiles once; precision is scoped."""

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import COMPILE_EVENTS, TRACE_EVENT, counting_compiles
from netsweep_jax.kernels.overlap import METRICS, Config
from netsweep_jax.sweep.core.schema import INNER, VARIABLES
from netsweep_jax.sweep.engine.blocks import Blocking
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays
from netsweep_jax.sweep.engine.grid import make_grid


@pytest.mark.parametrize("block_configs", [1, 7, 60, 600, 10**6])
def test_blocks_tile_the_grid_once(block_configs):
    grid = make_grid(
        ["resnet50", "vgg16"],
        bandwidth=[1, 10, 100],
        ratio=[1, 2, 5, 10],
        nodes=[2, 4, 8],
        gpus_per_node=[4, 8],
        utilization=[0.5, 1.0],
        collective=["ring", "tree"],
    )
    blocking = Blocking(grid.sizes, block_configs, grid.family)
    count = np.zeros(grid.shape, np.int64)
    for block in blocking.blocks():
        assert block.size <= block_configs or blocking.split_dim == "latency"
        count[block.region()] += 1
        assert block.size <= blocking.kb * blocking.ci  # every block fits the one compiled kernel shape
    assert np.all(count == 1)
    assert [b.index for b in blocking.blocks()] == list(range(len(blocking.blocks())))
    assert blocking.blocks() is blocking.blocks()  # cut once: --resume looks blocks up by index


def test_a_sweep_compiles_once():
    # Many blocks, a padded last block, two collectives, two fusion settings with
    # different bucket counts, latency on: one compile at most (none where another
    # test in this process traced the same shapes: the kernel's compile no longer
    # depends on --vars, --store, --reduce or a zero latency, so sweeps share it).
    grid = make_grid(
        "resnet50",
        bandwidth="1..100@37",
        ratio=[1, 3],
        nodes=[2, 8],
        fusion_buffer=[0, 64],
        collective=["ring", "ps"],
        latency=[0, 2],
    )
    with counting_compiles("grid_metrics") as counts:
        evaluate_arrays(grid, block_configs=23)
    lowered, compiled = (counts[e] for e in COMPILE_EVENTS)
    assert counts[TRACE_EVENT] <= 1 and lowered == counts[TRACE_EVENT] and compiled <= lowered  # cache: 0
    other = make_grid(
        "resnet50",
        bandwidth="2..90@37",
        ratio=[1, 5],
        nodes=[4, 16],
        fusion_buffer=[0, 8],
        collective=["tree", "hierarchical"],
        latency=[0, 9],
    )
    with counting_compiles("grid_metrics") as counts:
        evaluate_arrays(other, block_configs=23)  # same shapes, other values: no new trace, no new compile
    assert counts == dict.fromkeys(counts, 0)


def test_result_does_not_depend_on_block_size():
    grid = make_grid("vgg16", bandwidth="1..100@11", ratio=[1, 2, 5], nodes=[1, 2, 8], latency=[0, 5])
    a = evaluate_arrays(grid, block_configs=2**18)
    for size in (1, 13, 99):
        b = evaluate_arrays(grid, block_configs=size)
        for name in a:
            # float32 rounding; times near 0 (exposed_comm = end - R_last) against T1
            np.testing.assert_allclose(b[name], a[name], rtol=1e-6, atol=1e-6 * 0.19)


def test_float64_is_scoped_to_the_computation():
    grid = make_grid("resnet50", bandwidth=[10, 100], dtype="float64")
    out = evaluate_arrays(grid)
    assert out["scaling_factor"].dtype == np.float64
    assert jnp.zeros(1).dtype == jnp.float32  # the process's setting is untouched


def test_kernel_and_schema_agree_on_names():
    assert METRICS == tuple(VARIABLES) and Config._fields == INNER


def test_paper_collectives_are_bit_identical_with_the_new_terms_compiled_in():
    # The non-network terms at 0 and a pipelined collective in the same sweep must not move
    # a single bit of the paper's collectives.
    kw = dict(bandwidth=[1, 10, 100], nodes=[1, 2, 8], ratio=[1, 5], latency=[0, 3], fusion_buffer=[0, 64])
    plain = make_grid("resnet50", collective=["ring", "tree", "ps", "hierarchical"], **kw)
    mixed = make_grid(
        "resnet50",
        collective=["ring", "tree", "ps", "hierarchical", "nccl-ring"],
        overhead=[0, 1],
        jitter=[0, 0.1],
        **kw,
    )
    a, b = evaluate_arrays(plain), evaluate_arrays(mixed)
    from netsweep_jax.sweep.core.schema import DIMS

    paper_part = tuple(
        slice(0, 4) if d == "collective" else slice(0, 1) if d in ("overhead", "jitter") else slice(None)
        for d in DIMS
    )
    for name in a:
        np.testing.assert_array_equal(b[name][paper_part], a[name])


class FakeDevice:
    def __init__(self, platform, stats):
        self.platform, self._stats = platform, stats

    def memory_stats(self):
        return self._stats


def test_block_size_from_free_device_memory():
    from netsweep_jax.sweep.engine.blocks import DEFAULT_BLOCK_CONFIGS
    from netsweep_jax.sweep.engine.dispatch import MAX_DEVICE_BLOCK, default_block_configs

    assert default_block_configs(FakeDevice("cpu", None)) == DEFAULT_BLOCK_CONFIGS
    gib = 2**30
    assert (
        default_block_configs(FakeDevice("gpu", {"bytes_limit": 140 * gib, "bytes_in_use": 0}))
        == MAX_DEVICE_BLOCK
    )
    # 2 GiB free: a quarter of it at 148 B per configuration (every output of the kernel on the device, kept or
    # not, and the kept ones' store copies) is 3.6e6 configurations, 2^21 rounded down
    assert default_block_configs(FakeDevice("gpu", {"bytes_limit": 3 * gib, "bytes_in_use": gib})) == 2**21
    assert default_block_configs(FakeDevice("gpu", {})) == DEFAULT_BLOCK_CONFIGS
