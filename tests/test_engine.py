"""Engine structure: blocks tile the grid exactly once; a sweep compiles once."""

import itertools

import numpy as np
import pytest

from sweep.engine import Plan, Runner, block_kernel, evaluate_arrays
from sweep.grid import make_grid


@pytest.mark.parametrize("block_configs", [1, 7, 60, 600, 10**6])
def test_blocks_tile_the_grid_once(block_configs):
    grid = make_grid(["resnet50", "vgg16"], bandwidth=[1, 10, 100], ratio=[1, 2, 5, 10], nodes=[2, 4, 8],
                     gpus_per_node=[4, 8], utilization=[0.5, 1.0], collective=["ring", "tree"])
    plan = Plan(grid, block_configs)
    count = np.zeros(grid.shape, np.int64)
    for block in plan.blocks():
        assert block.size <= max(block_configs, 1) or plan.split_dim == 5
        count[block.region()] += 1
        # Every block fits the one compiled kernel shape.
        assert block.size <= plan.kb * plan.ci
    assert np.all(count == 1)
    assert [b.index for b in plan.blocks()] == list(range(len(plan.blocks())))
    assert plan.blocks() is plan.blocks()  # cut once: --resume looks blocks up by index


def test_a_sweep_compiles_once_per_collective():
    # Many blocks, a padded last block, two fusion settings with different bucket
    # counts: one compile per (collective, padded bucket count). An odd block size
    # keeps these shapes apart from other tests' compiles in the same process.
    grid = make_grid("resnet50", bandwidth="1..100@37", ratio=[1, 3], nodes=[2, 8], fusion_buffer=[32, 64],
                     collective=["ring", "ps"])
    before = block_kernel._cache_size()
    evaluate_arrays(grid, block_configs=23)
    after = block_kernel._cache_size()
    runner = Runner(Plan(grid, 23))
    lengths = {runner.task_arrays(t)[0].shape[0] for t in itertools.product(range(1), range(2), range(2), range(1))}
    assert after - before == 2 * len(lengths)
    evaluate_arrays(grid, block_configs=23)  # the same sweep again: no new compile
    assert block_kernel._cache_size() == after


def test_result_does_not_depend_on_block_size():
    grid = make_grid("vgg16", bandwidth="1..100@11", ratio=[1, 2, 5], nodes=[1, 2, 8], latency=[0, 5])
    a = evaluate_arrays(grid, block_configs=2**18)
    for size in (1, 13, 99):
        b = evaluate_arrays(grid, block_configs=size)
        for name in a:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-6)
