"""One compile of the data-parallel kernel serves every --vars, --store and --reduce of a sweep's shapes (each is a
small compiled function of one output, :func:`sweep.engine.compiled.stored` and
:func:`~sweep.engine.compiled.reduced_outputs`), and latency 0 does not split the XLA scan's compiles (the
zero-latency promise is the Pallas kernel's). What each variant returns is what the full sweep gives, bit for bit.
"""

import numpy as np

import netsweep_jax.sweep as sweep
from helpers import TRACE_EVENT, counting_compiles

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
