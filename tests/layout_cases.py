"""Shared by the layout tests: random layouts for the float64 reference, the kernel run on them."""

import random

import jax
import jax.numpy as jnp
import numpy as np

import reference
from helpers import TOLERANCE as REFERENCE_TOLERANCE
from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.engine.compiled import layout_rows
from netsweep_jax.sweep.engine.layouts import ROWS_BLOCK
from netsweep_jax.sweep.model.llms import LLMS

TOLERANCE = REFERENCE_TOLERANCE["layout"]
# The options of a small large-model sweep (the bad-input cases add one bad option to them).
LLAMA_8B = ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"]
# The fabric's constants NCCL's pricing reads (collectives nccl only): the shipped fit, as a sweep's default.
NCCL_FABRIC = dict(zip(reference.NCCL_LAYOUT_KEYS, reference.NCCL_LAYOUT_CONSTANTS))


def random_case(rng):
    heads = rng.choice([8, 12, 16, 32, 64])
    kv = rng.choice([n for n in (1, 2, 4, 8, heads) if heads % n == 0])
    head_dim = rng.choice([64, 128])
    experts = rng.choice([0, 0, 8, 16])
    layers = rng.randint(2, 40)
    mla = rng.random() < 0.3  # multi-head latent attention: one KV head per query head, low-rank K and V
    kv = heads if mla else kv
    v_head = rng.choice([32, head_dim]) if mla else head_dim
    arch = dict(
        layers=layers,
        hidden=heads * head_dim,
        heads=heads,
        kv_heads=kv,
        q_width=heads * head_dim,
        kv_width=kv * head_dim,
        v_width=kv * v_head,
        q_rank=rng.choice([0, 256]) if mla else 0,
        kv_rank=128 if mla else 0,
        rope_width=32 if mla else 0,
        ffn=rng.choice([2, 4]) * heads * head_dim,
        vocab=rng.choice([32000, 50257]),
        seq=rng.choice([512, 1026, 2048]),
        experts=experts,
        top_k=rng.choice([1, 2]) if experts else 1,
        expert_ffn=heads * head_dim,
        shared_experts=rng.choice([0, 1]) if experts else 0,
        moe_layers=rng.randint(1, layers) if experts else 0,
        gated=rng.choice([0, 1]),
        tied=rng.choice([0, 1]),
        dropout=rng.choice([0, 1]),
        mtp_layers=rng.choice([0, 0, 1, 2]),
    )
    dev = dict(
        peak=rng.choice([312e12, 989e12]),
        hbm=rng.choice([2e12, 3.35e12]),
        memory=80e9,
        param_bytes=2.0,
        grad_bytes=rng.choice([2.0, 4.0]),
        act_bytes=2.0,
        usable=rng.choice([0.9, 1.0]),
        gemm_input_bytes=rng.choice([1.0, 2.0]),
        half_peak=rng.choice([312e12, 989e12]),
        gemm_latency=rng.choice([0.0, 6.5e-6, 2e-5]),
        moment_bytes=rng.choice([1.0, 2.0, 4.0]),
    )
    # Drawn apart from rng (seeded by the case so far), so that the cases the tests' seeds draw stay the ones they drew
    # before this setting existed (their counts of layouts that can exist, cross a spine, ... are asserted).
    seed = repr(sorted((k, float(v)) for k, v in {**arch, **dev}.items()))  # plain floats: any NumPy's repr
    dev["main_param_bytes"] = random.Random(seed).choice([2.0, 4.0])
    lay = dict(
        gpus=rng.choice([8, 16, 64, 128, 96]),
        tp=rng.choice([1, 2, 4, 8]),
        pp=rng.choice([1, 2, 3, 4]),
        cp=rng.choice([1, 1, 2]),
        ep=rng.choice([1, 1, 2, 4]),
        expert_tp=rng.choice([1, 1, 2]),
        dp=rng.choice([0, 0, 0, 0, 2, 4]),
        micro_batch=rng.choice([1, 2, 4]),
        global_batch=rng.choice([64, 128, 256]),
        schedule=rng.choice([1, 1, 2]),
        recompute=rng.choice([0, 1, 2, 4, 8, 16, 32, 64, 128, 33, 96, 248, 34, 192]),  # modes as bit sums
        sequence_parallel=rng.choice([0, 1]),
        zero=rng.choice([0, 1, 2, 3]),
        attention=rng.choice([0, 1]),
        nvlink_domain=rng.choice([8, 16, 72]),
        nvlink_bw=rng.choice([300e9, 450e9]),
        gpus_per_node=rng.choice([4, 8]),
        nics_per_node=rng.choice([1, 4, 8]),
        bandwidth=rng.choice([100e9, 400e9]),
        utilization=rng.uniform(0.3, 1),
        latency=rng.choice([0, 5e-6]),
        collective=rng.choice([0, 1, 2]),
        efficiency=rng.uniform(0.3, 0.7),
        overhead=rng.choice([0, 0.01]),
        slowdown=rng.choice([0, 0.1]),
        straggle=rng.choice([0, 0.05]),
        imbalance=rng.choice([1.0, 1.2]),
        offload_layers=rng.choice([0, 0, 1, 3]),
        attention_efficiency=rng.uniform(0.3, 0.7),
        overlap=rng.choice([0, 1, 2, 3, 4, 8, 15, 7]),
        dispatch_fp8=rng.choice([0, 1]),
        nccl_arch=2,  # kernels.nccl's Hopper (collectives nccl only; tests/test_layout_nccl.py draws it)
        **NCCL_FABRIC,
        collectives=0,
        leaf_hosts=0.0,  # no tier above the hosts (tests/test_layout_nccl.py draws it: collectives nccl only)
        oversubscription=1.0,
        sharp=0.0,  # NCCL's CollNet off, wired as the spine says (tests/test_layout_nccl.py draws both)
        rail_only=0.0,
    )
    # Drawn last, so that every draw above (and the cases other tests picked by seed) stays as it was: the MoE
    # dispatcher, group-limited routing, top-4, and hosts of 1 or 2 GPUs, each its own NVLink domain, so that EP
    # groups span several domains (the flex dispatcher's RDMA stage) beside the domains of 8 and more above.
    lay["moe_dispatcher"] = rng.choice([0, 1])
    groups = rng.choice([0, 2, 4]) if experts else 0
    arch.update(router_groups=groups, group_topk=rng.randint(1, groups) if groups else 0)
    if experts and rng.random() < 0.3:
        arch["top_k"] = 4
    if rng.random() < 0.3:
        lay["nvlink_domain"] = lay["gpus_per_node"] = rng.choice([1, 2])
    # Megatron-Core runs a mixture of experts at tp > 1 only with sequence parallelism (a status rule since
    # 2026-12-06): most such cases take it, drawn apart from rng so that every draw above stays as it was, a
    # fifth keep the rule's side.
    if experts and lay["tp"] > 1 and random.Random(seed + "sp").random() < 0.8:
        lay["sequence_parallel"] = 1
    # and overlaps the expert all-to-all only at ep > 1, without full recomputation, interleaved where pp > 1
    unhidable = lay["ep"] < 2 or lay["recompute"] & (2 | 128) or arch.get("mtp_layers", 0) > 1
    unhidable = unhidable or (lay["pp"] > 1 and lay["schedule"] < 2)
    if experts and lay["overlap"] & 8 and unhidable and random.Random(seed + "a2a").random() < 0.8:
        lay["overlap"] -= 8
    # A fifth of the cases take NICs that do not divide a host's GPUs (3 or 5), where the slowest GPU's part of a
    # NIC prices them (kernels.layout_collectives.nic_fraction, since 2026-12-06), drawn apart as the rules' are.
    nics = random.Random(seed + "nics")
    if nics.random() < 0.2:
        lay["nics_per_node"] = nics.choice([3, 5])
    # and offloads activations only on one stage without recomputation (a status rule since 2026-12-06): all but
    # a few cases keep it, so that enough layouts can exist and the rule is still hit
    if (
        lay["offload_layers"]
        and (lay["pp"] > 1 or lay["recompute"])
        and random.Random(seed + "cpu").random() < 0.95
    ):
        lay["offload_layers"] = 0
    # half of the cases run ZeRO 3 under a pipeline as PyTorch's FSDP2 does (gathered once a step), drawn apart
    lay["zero3_gather_once"] = random.Random(seed + "zero3").choice([0, 1])
    return arch, dev, lay


def run_kernel(cases, dtype):
    # Padded to the rows kernel's block (the last repeated), through the product's own jitted entry point: in
    # float64 the same compiled function as every fit and validation, one compile per dtype for the suite.
    def stack(i, fields):
        return {
            f: jnp.asarray(
                np.pad([float(c[i][f]) for c in cases], (0, ROWS_BLOCK - len(cases)), "edge"), dtype
            )
            for f in fields
        }

    # One pricing of collectives for all the cases (a static setting: each its own compile).
    (collectives,) = {int(c[2]["collectives"]) for c in cases}
    with jax.enable_x64(dtype == "float64"):
        out = layout_rows(
            kernel.Arch(**stack(0, kernel.Arch._fields)),
            kernel.Device(**stack(1, kernel.Device._fields)),
            kernel.Parallelism(**stack(2, kernel.Parallelism._fields)),
            collectives=collectives,
        )
        return {k: np.asarray(v, np.float64)[: len(cases)] for k, v in out.items()}


def run_one(case):
    return {k: v[0] for k, v in run_kernel([case], "float64").items()}


def gpt3_case(**changes):
    m = LLMS["gpt3-175b"]
    arch = dict(
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        q_width=m.hidden,
        kv_width=m.hidden,
        v_width=m.hidden,
        q_rank=0,
        kv_rank=0,
        rope_width=0,
        ffn=m.ffn,
        vocab=m.vocab,
        seq=m.seq,
        experts=0,
        top_k=1,
        expert_ffn=m.ffn,
        shared_experts=0,
        moe_layers=0,
        gated=0,
        tied=1,
        dropout=1,
        mtp_layers=0,
        router_groups=0,
        group_topk=0,
    )
    dev = dict(
        peak=312e12,
        hbm=2.039e12,
        memory=80e9,
        param_bytes=2.0,
        grad_bytes=2.0,
        act_bytes=2.0,
        usable=1.0,
        gemm_input_bytes=2.0,
        half_peak=312e12,
        gemm_latency=0.0,
        moment_bytes=4.0,
        main_param_bytes=4.0,
    )
    lay = dict(
        gpus=8,
        tp=8,
        pp=1,
        cp=1,
        ep=1,
        expert_tp=1,
        dp=0,
        micro_batch=1,
        global_batch=1,
        schedule=1,
        recompute=0,
        sequence_parallel=0,
        zero=0,
        attention=0,
        nvlink_domain=8,
        nvlink_bw=300e9,
        gpus_per_node=8,
        nics_per_node=8,
        bandwidth=200e9,
        utilization=1.0,
        latency=0.0,
        collective=0,
        efficiency=0.5,
        overhead=0.0,
        slowdown=0.0,
        straggle=0.0,
        imbalance=1.0,
        offload_layers=0,
        attention_efficiency=0.5,
        overlap=3,
        dispatch_fp8=0,
        nccl_arch=1,
        **NCCL_FABRIC,
        collectives=0,
        leaf_hosts=0.0,  # no tier above the hosts
        oversubscription=1.0,
        sharp=0.0,
        rail_only=0.0,
        moe_dispatcher=0,
        zero3_gather_once=0,
    )
    for key, value in changes.items():
        (arch if key in arch else dev if key in dev else lay)[key] = value
    arch["v_width"] = changes.get("v_width", arch["kv_width"])  # V as wide as K unless said
    return arch, dev, lay
