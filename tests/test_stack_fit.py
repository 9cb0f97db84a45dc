"""validate --llm's fit per stack preset and GPU die (sweep.analysis.llm_fit.fit with by_stack): each stack's
efficiency on each die it has training runs on, each die's pooled efficiency for a stack with none there, the
default for a die with no training run at all."""

import dataclasses

import numpy as np
import pytest

from netsweep_jax.sweep.analysis import llm_fit as F
from netsweep_jax.sweep.analysis.llm_predict import efficiency_of, predict
from netsweep_jax.sweep.io.runs import DATASET, read_runs

TRAIN = ("K23-T5-01", "K23-T5-02", "fsdp-mpt70b_a100x64")  # two megatron-2021 A100 runs, one fsdp A100 run


def test_efficiency_of_takes_the_stacks_then_the_dies_then_the_default():
    table = {"fsdp/h100": 0.5, "h100": 0.55, "a100": 0.7}
    assert efficiency_of(table, "fsdp", "h100") == 0.5
    assert efficiency_of(table, "megatron-core", "h100") == 0.55  # no stack entry: the die's
    assert efficiency_of(table, "fsdp", "a100") == 0.7
    assert efficiency_of(table, "fsdp", "gb200") == F.EFFICIENCY == 0.6  # neither: the documented default


def test_a_stack_without_training_runs_on_a_die_takes_the_dies_pooled_efficiency():
    runs = {r.id: r for r in read_runs(DATASET)}
    # A 2022 run as if on Megatron-Core: its stack has no training run on the A100; an H100 run: no die's.
    other = dataclasses.replace(runs["K23-T5-03"], preset="megatron-core")
    sub = [*(runs[i] for i in TRAIN), other, runs["MB-H100-01"]]
    train = [r.id in TRAIN and r is not other for r in sub]
    # The shared constants held: only the efficiencies are fitted (the pooled one with them held too).
    fitted = F.fit(sub, train, "t", utilization=F.NIC_UTILIZATION, memory_efficiency=0.5, by_stack=True)
    assert fitted.by_stack and fitted.rows == TRAIN
    assert fitted.fitted == ("efficiency fsdp/a100", "efficiency megatron-2021/a100", "efficiency a100")
    own, fsdp, pooled = (fitted.efficiency[k] for k in ("megatron-2021/a100", "fsdp/a100", "a100"))
    assert min(own, fsdp) < pooled < max(own, fsdp)  # one efficiency for both stacks' runs lies between
    assert (
        fitted.efficiency["megatron-core/a100"] == pooled and fitted.efficiency["megatron-core/h100"] == 0.6
    )
    described = fitted.describe()
    assert f"a100 {pooled:.4g} (pooled)" in described and "megatron-core/h100 0.6 (default)" in described
    out = predict(sub, fitted.efficiency, fitted.utilization, fitted.memory_efficiency)["predicted"]
    measured = np.array([r.value for r in sub])
    # A class of one training run (fsdp on the A100) fits it exactly; its stack's efficiency, not the pooled one.
    assert out[2] == pytest.approx(measured[2], rel=1e-4)
    pooled_only = predict([other], {"a100": pooled}, fitted.utilization, fitted.memory_efficiency)[
        "predicted"
    ]
    assert out[3] == pooled_only[0]
    # Each per-stack efficiency and the pooled one are their runs' least squares: no step of 0.06% improves.
    for key, ids in (("megatron-2021/a100", TRAIN[:2]), ("fsdp/a100", TRAIN[2:]), ("a100", TRAIN)):
        on = [runs[i] for i in ids]
        table = {"a100" if "/" not in key else key: fitted.efficiency[key]}

        def loss(scale, on=on, table=table):
            p = predict(on, {k: v * scale for k, v in table.items()}, F.NIC_UTILIZATION, 0.5)["predicted"]
            return float(np.sum(np.log(p / np.array([r.value for r in on])) ** 2))

        assert loss(1.0) <= min(loss(1 - 6e-4), loss(1 + 6e-4)) + 1e-12, key


def test_a_stacks_efficiency_on_a_die_it_never_trained_on_is_said_as_the_dies_pooled():
    # A hunt: fsdp/h100's value, the H100's pooled fit, was said "(default)", as if 0.6.
    from netsweep_jax.sweep.analysis.llm_fit import Fit

    efficiency = {"fsdp/h100": 0.55, "megatron-core/h100": 0.55, "h100": 0.55, "b300": 0.6}
    fit = Fit("x", efficiency, 0.92, ("efficiency megatron-core/h100", "efficiency h100"), (), by_stack=True)
    said = fit.describe()
    assert (
        "fsdp/h100 0.55 (the die's pooled), megatron-core/h100 0.55, b300 0.6 (default), h100 0.55 (pooled)"
        in said
    )
