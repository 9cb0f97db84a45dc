"""One compile of the data-parallel kernel serves every --vars, --store and --reduce of a sweep's shapes (each is a
small compiled function of one output, :func:`sweep.engine.compiled.stored` and
:func:`~sweep.engine.compiled.reduced_outputs`), and latency 0 does not split the XLA scan's compiles (the
zero-latency promise is the Pallas kernel's). What each variant returns is what the full sweep gives, bit for bit.
"""

import numpy as np

import netsweep_jax.sweep as sweep
from helpers import COMPILE_EVENTS, TRACE_EVENT, counting_compiles

# An odd bandwidth count keeps these shapes apart from other tests' compiles in the same process.
AXES = dict(bandwidth="1..100@19", ratio=[1, 4], nodes=[2, 8], collective="ring,tree")


def test_vars_store_reduce_and_zero_latency_reuse_the_compiled_kernel():
    full = sweep.evaluate("resnet50", latency=2, **AXES)  # compiles the kernel (or the cache has it)
    with counting_compiles("grid_metrics") as counts:
        kept = sweep.evaluate("resnet50", latency=2, vars="iteration_time,exposed_comm", **AXES)
        half = sweep.evaluate("resnet50", latency=2, store="float16", **AXES)
        best = sweep.evaluate("resnet50", latency=2, reduce="argmax:collective", **AXES)
        mean = sweep.evaluate("resnet50", latency=2, reduce="mean:bandwidth,ratio", **AXES)
        no_latency = sweep.evaluate("resnet50", latency=0, **AXES)
    assert counts[TRACE_EVENT] == 0, counts

    assert sorted(kept.data_vars) == ["exposed_comm", "iteration_time"]
    for name in kept.data_vars:
        np.testing.assert_array_equal(kept[name].values, full[name].values)
    for name in full.data_vars:
        assert half[name].dtype == np.float16
        np.testing.assert_array_equal(half[name].values, full[name].values.astype(np.float16))
    sf = full.scaling_factor
    np.testing.assert_array_equal(best.scaling_factor.values, sf.max("collective").values)
    np.testing.assert_array_equal(
        best.scaling_factor_argmax_collective.values, sf.idxmax("collective").values
    )
    np.testing.assert_allclose(mean.scaling_factor.values, sf.mean(["bandwidth", "ratio"]).values, rtol=1e-6)
    # latency is a real input of the XLA scan: 0 and 2 us give different iteration times from one compile
    assert (no_latency.iteration_time.values < full.iteration_time.values).all()


def test_small_blocks_are_one_shape_whether_or_not_they_split_the_configurations():
    # A small sweep's blocks compile as 8 layouts x 64 configurations, whole or cut into blocks of fewer
    # configurations, and every block input is placed on the device either way: inputs placed or not lower
    # apart, and a sweep whose blocks split its configurations compiled the kernel again.
    from netsweep_jax.sweep.core.families import DATA_PARALLEL, LAYOUTS
    from netsweep_jax.sweep.engine.blocks import SMALL_DATA_PARALLEL_BLOCK, Blocking
    from netsweep_jax.sweep.engine.grid import make_grid

    sizes = dict(make_grid("vgg16", bandwidth="1..10@7", nodes=[2, 4, 8]).sizes)
    for budget in (4, 21, 2**18):  # blocks of part of a layout's 7 bandwidths, of one layout, of all three
        blocking = Blocking(sizes, budget, DATA_PARALLEL)
        assert (blocking.kb_width, blocking.ci_width) == SMALL_DATA_PARALLEL_BLOCK, budget
    axes = dict(bandwidth="1..10@7", nodes=[2, 4, 8])
    whole = sweep.evaluate("vgg16", **axes)
    with counting_compiles("grid_metrics") as counts:
        split = sweep.evaluate("vgg16", block_configs=4, **axes)
    assert counts[TRACE_EVENT] == counts[COMPILE_EVENTS[0]] == 0, counts
    for name in whole.data_vars:
        np.testing.assert_array_equal(split[name].values, whole[name].values)

    # The layout family: a setting's 9,216 layouts in blocks of 8,192 are the 8 x 8,192 shape of a small plan.
    layouts = dict(dict.fromkeys(LAYOUTS.dims, 1), tp=4, pp=3, cp=2, micro_batch=32, zero=4, recompute=3)
    blocking = Blocking(layouts, 8192, LAYOUTS)
    assert not blocking.splits_layouts and (blocking.kb_width, blocking.ci_width) == (8, 8192)
