"""What sweep plan says: why a setting is network-bound, the settings with no feasible layout, its progress."""

import re

from helpers import invoke
from netsweep_jax.sweep.cli import progress
from netsweep_jax.sweep.core.wording import rounded

# Llama 3 70B, 12 layouts: on 8 GPUs none fits; on 64 over 100 Gbit/s NICs the best layout recomputes
# everything to fit TP 1, so the network costs a third of the step while the NICs carry a sixth of it.
PLAN = [
    "plan", "--model", "llama3-70b", "--gpus", "8,64", "--global-batch", "64", "--bw", "100", "--tp", "1,2",
    "--pp", "1", "--cp", "2", "--micro-batch", "1", "--zero", "3", "--keep", "1",
]  # fmt: skip


def test_plan_says_why_the_network_costs_more_than_its_time_on_the_nics(tmp_path):
    r = invoke(*PLAN, "--out", tmp_path / "p.h5")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    verdict = next(i for i, line in enumerate(lines) if "<- network-bound" in line)
    row = lines[verdict - 2]
    assert "rc-ful" in row and re.search(r" 1[0-9]%  compute", row), row  # on NICs well under the cost
    why = lines[verdict + 1]
    assert why.startswith("  why: 1") and "% of the step waits on the NICs" in why, why
    assert "forces this layout (full recompute: 20% of the step)" in why, why
    assert why.endswith("on an ideal network the best is tp2xpp1xcp2xdp16 mb1 z3"), why


def test_plan_plans_the_settings_that_can_exist_and_names_the_others(tmp_path):
    # The whole plan used to be refused because 8 GPUs cannot hold the model.
    r = invoke(*PLAN, "--out", tmp_path / "p.h5")
    assert r.exit_code == 0 and (tmp_path / "p.h5").exists(), r.output
    text = r.output
    assert "--gpus 8:\n  no feasible layout: " in text and "none fits: the least hungry lacks" in text
    assert "ZeRO 3" not in text and "(more GPUs, --cpu-offloading-num-layers or a GPU with more" in text
    assert "--gpus 64:\n  # layout" in text
    assert text.count("no feasible layout:") == 1
    assert "1 of 1 setting (1 setting with no feasible layout)" in text
    r = invoke(*PLAN, "--csv", "--out", tmp_path / "q.h5")  # the CSV has no row for it: one line on stderr
    assert r.exit_code == 0 and "no feasible layout (--gpus 8): " in r.stderr, r.output
    assert [float(line.split(",")[6]) for line in r.stdout.splitlines()[1:]] == [64]
    # offloading runs on one stage alone (status rule 13): not named where every layout has two (a review)
    two_stages = [a if i != PLAN.index("--pp") + 1 else "2" for i, a in enumerate(PLAN)]
    r = invoke(*two_stages, "--out", tmp_path / "r.h5")
    assert "none fits" in r.output and "(more GPUs or a GPU with more memory might)" in r.output, r.output


def test_plan_progress_counts_every_search_and_shows_without_a_terminal(tmp_path, monkeypatch):
    # No terminal (CliRunner's stderr): a line every LINE_EVERY_S seconds; 0 here, so one per block.
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.0)
    r = invoke(*PLAN[:4], "64", *PLAN[5:], "--out", tmp_path / "p.h5")
    assert r.exit_code == 0, r.output
    said = re.findall(r"^plan: ([\d,]+) of ([\d,]+) layouts searched \((\d+)%\)", r.stderr, re.M)
    # One line a search (the plan, the ideal network, 3 switches) but the first: its end has no rate to tell.
    assert len(said) >= 4, r.stderr
    counts = [int(done.replace(",", "")) for done, _, _ in said]
    totals = {int(total.replace(",", "")) for _, total, _ in said}
    assert totals == {12 * 5} and counts == sorted(counts) and counts[-1] == 12 * 5
    assert [int(p) for _, _, p in said][-1] == 100 and all(int(p) <= 100 for _, _, p in said)
    assert not any(int(p) == 100 for _, _, p in said[:-1])  # not at 100% before the last search


def test_time_left_is_the_rate_after_the_first_step_which_holds_the_compile(capsys):
    # A clock that says 16 s for the first step (its compile) and 1 s for each of the others.
    times = iter([0.0, 16.0, 17.0, 18.0])
    lines_of = progress.progress_lines("plan", "layouts searched", clock=lambda: next(times), every=0.0)
    with lines_of(400, 0) as step:
        for _ in range(3):
            step(100)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "plan: 200 of 400 layouts searched (50%) in 17 s; about 2 s left",
        "plan: 300 of 400 layouts searched (75%) in 18 s; about 1 s left",
    ]  # over the whole run it said 17 s and 6 s
    # the last steps quick: under half a second left is said so (a hunt: "about 0 s left")
    times = iter([0.0, 16.0, 16.1, 16.2])
    lines_of = progress.progress_lines("plan", "layouts searched", clock=lambda: next(times), every=0.0)
    with lines_of(400, 0) as step:
        for _ in range(3):
            step(100)
    assert capsys.readouterr().err.splitlines()[-1].endswith("(75%) in 16 s; under a second left")


def test_why_names_the_wait_inside_nvlink_domains():
    # A hunt: an NVL72's plan said "1% of the step waits on the NICs; the slow network forces this layout" where
    # the expert all-to-all on NVLink took 15% of the step.
    from netsweep_jax.sweep.analysis.planning import _forced_text

    row = dict(layout_recompute="none", recompute_time=0.0, iteration_time=10.0, network_fraction=0.01,
               tp_exposed=0.0, cp_exposed=0.0, ep_exposed=1.5, pp_exposed=0.0, dp_exposed=0.1)  # fmt: skip
    assert _forced_text(row, "tp1xpp1xep16xdp144 mb1 z3", nccl=True) == (
        "why: 1% of the step waits on the NICs and 15% on traffic inside NVLink domains; the network forces this "
        "layout; on an ideal network the best is tp1xpp1xep16xdp144 mb1 z3"
    )
    # Priced flat, NVLink's traffic costs the ideal network the same: not the network's (a hunt)
    assert _forced_text(row, "tp1xpp1xep16xdp144 mb1 z3", nccl=False) == (
        "why: 1% of the step waits on the NICs; the slow network forces this layout; on an ideal network the best "
        "is tp1xpp1xep16xdp144 mb1 z3"
    )
    row.update(ep_exposed=0.0, layout_recompute="full", recompute_time=2.0)  # all of it on the NICs
    assert _forced_text(row, "x", nccl=True) == (
        "why: 1% of the step waits on the NICs; the slow network forces this layout (full recompute: 20% of the "
        "step); on an ideal network the best is x"
    )
    # the ideal network's best recomputes fully too: the network did not force the recomputation (a hunt)
    assert _forced_text(row, "tp8xpp8xdp8 mb1 z3 rc-ful", nccl=True) == (
        "why: 1% of the step waits on the NICs; the slow network forces this layout; on an ideal network the best "
        "is tp8xpp8xdp8 mb1 z3 rc-ful"
    )
    assert "(full recompute: 20%" in _forced_text(row, "tp8xpp8xdp8 mb1 z3 rc-sel", nccl=True)
    # modules whose names read alike in a layout's name (moe, moe_act): not known to be the same, said (a review)
    row.update(layout_recompute="moe")
    assert "(moe recompute: 20%" in _forced_text(row, "tp8xpp8xdp8 mb1 z3 rc-moe", nccl=True)


def test_a_bar_at_80_columns_shows_the_whole_total(monkeypatch):
    # A hunt: at 80 columns the bar cut the total short, "82880000/5120000…" of 512,000,000 (16x past the end).
    import io
    import re
    import sys

    from netsweep_jax.sweep.cli.progress import progress_bar, rate_text

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar(True)(512_000_000, 82_880_000) as advance:
        for _ in range(5):  # a rate to show
            advance(1000)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue()).split("\r")[-1]
    assert "82885000/512000000" in shown and len(shown.rstrip("\n")) <= 80, shown
    assert [rate_text(r) for r in (96_427_377, 512, 1234, 999.6, 1.1e11)] == [
        "96.4M",
        "512",
        "1.23k",
        "1k",
        "110G",
    ]


def test_what_might_make_a_layout_fit_is_what_the_grid_does_not_hold():
    # A hunt: a torchtitan layout that runs with full recomputation was told to offload (Megatron-Core's switch)
    # and not to recompute; offloading needs one stage without recomputation (status rule 13).
    from netsweep_jax.sweep.analysis.planning import might_fit
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    llama = dict(gpus=64, global_batch=64, tp=8)
    assert might_fit(make_layout_grid("llama3-70b", recompute="none", zero=1, **llama)) == (
        "more GPUs, ZeRO 3, --recompute full, --cpu-offloading-num-layers"
    )
    assert might_fit(make_layout_grid("llama3-70b", recompute="full", zero=3, pp=2, **llama)) == "more GPUs"


def r_args(tmp_path):
    """A plan whose every layout breaks a rule, 9 of its 18 sequence parallelism's (4095 tokens over TP 8)."""
    return ["plan", "--arch", "layers=8,hidden=4096,heads=32,seq=4095,vocab=32000", "--gpus", "16",
            "--global-batch", "16", "--tp", "8", "--pp", "1", "--cp", "1", "--micro-batch", "1", "-q",
            "--out", tmp_path / "p.h5"]  # fmt: skip


def test_a_plan_refused_by_sequence_parallelism_says_what_lifts_it(tmp_path):
    # A review: every layout of a 4095-token sequence at TP 8 broke sequence parallelism's rule, and the refusal
    # named only the other rule of as many layouts, nothing of --sequence-parallel 0.
    r = invoke(*r_args(tmp_path))
    assert r.exit_code == 2 and r.output.strip().splitlines()[-1].endswith(
        " (9 break sequence parallelism needs each cp rank's tokens divisible by tp: --sequence-parallel 0 lifts it)"
    )
    assert not (tmp_path / "p.h5").exists()
    r = invoke(*r_args(tmp_path), "--sequence-parallel", "0,1")  # and it does
    assert r.exit_code == 0, r.output


def test_a_tiny_models_small_values_are_said_as_less_than_the_least_shown_not_as_none(tmp_path):
    # A two-layer model on an ideal-speed network: its MFU (about 0.001), memory (a few MB) and the optimizer's
    # share of the step round to nothing at the table's places; they read 0.00, 0.0 and 0%, as if none.
    r = invoke(
        "plan", "--arch", "layers=2,hidden=64,heads=2,seq=128,vocab=1000", "--gpus", "8", "--global-batch", "8",
        "--keep", "1", "--bw", "1000000", "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1",
        "--zero", "3", "--out", tmp_path / "p.h5",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if line.startswith("  1 tp1xpp1xdp8"))
    assert re.search(r" <0\.01 +1 +<0\.1 +\d+\.\d +0%  compute 100%, optimizer <1%$", row), row
    assert rounded(0.0009, 2) == "<0.01" and rounded(0.004, percent=True) == "<1%"
    assert rounded(0.006, 2) == "0.01" and rounded(0.0, 2) == "0.00" and rounded(1234.4) == "1,234"


def test_a_sequence_that_splits_over_no_tp_says_sequence_parallelism_rules_tp_out():
    # A hunt: at seq 2047 a plan searched tp 1,2,4,8 and ranked TP 1 alone, never saying why.
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    def said(seq: int, **kw) -> list[str]:
        arch = f"layers=8,hidden=1024,heads=8,seq={seq},vocab=32000"
        grid = make_layout_grid(None, arch=arch, gpus="16", global_batch="16", **kw)
        return [p for p in grid.assumed if "sequence parallelism" in p]

    searched = {"tp": "1,2,4,8", "cp": "1,2,4"}
    assert said(2047, search=searched) == [
        "tp 2,4,8 ruled out: sequence parallelism splits each cp rank's tokens over tp, and seq 2047 divides by "
        "no tp x cp here; --sequence-parallel 0 lifts it"
    ]
    assert said(2046, tp="1,4", cp="1") != [] and said(2046, tp="1,2,4", cp="1") == []  # 2046 = 2 x 1023
    assert said(2047, search=searched, sequence_parallel="0") == [] and said(2048, search=searched) == []
    # where cp rules every layout out (2050 at cp 2: rule 8), turning sequence parallelism off lifts nothing
    assert said(2050, tp="1,2", cp="2") == [] and said(2049, tp="1,2", cp="1") != []
    # a mixture of experts needs it at TP > 1: said with it off too, and no way out named (a review)
    moe = "layers=8,hidden=1024,heads=8,seq=2047,vocab=32000,experts=8,top_k=2,expert_ffn=512"
    grid = make_layout_grid(None, arch=moe, gpus="16", global_batch="16", tp="1,2", sequence_parallel="0,1")
    (phrase,) = [p for p in grid.assumed if "sequence parallelism" in p]
    assert phrase.startswith("tp 2 ruled out") and "lifts" not in phrase
