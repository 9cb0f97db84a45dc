"""Shared fixtures: the paper's measured logs in ../shared/paper-data (optional); the tests' XLA flags."""

import functools
import os

# The tests compile a few hundred kernels and run each on a few thousand configurations: there XLA's
# optimizations cost more than they save: LLVM's (-O0: the layout kernel compiles in 5 s instead of 8-10 on a
# 2-core machine) and HLO constant folding (which evaluates the kernels' constant subexpressions on the host at
# compile time; off, the layout kernel compiled in 3.3 s instead of 5.5 and the NCCL-priced one in 30 instead of
# 56, 2026-12-03); and LLVM's code generation in one piece (XLA splits a module's code generation into parallel
# jobs, which on a two-core machine already running two test workers only add work: 4% less CPU over two test
# files, about 1.5% over the suite, 2026-12-04). The programs compute the same; float32 results may differ in the
# last bit (no fused multiply-adds), which every comparison allows. XLA's CPU fusion emitters stay on here: without
# them a data-parallel cube and the API (two compiled programs) differed in the last bit where the tests hold them equal
# (the layout family's programs turn them off themselves, for every caller: sweep/engine/compiled.py). The CLI,
# the API and the benchmarks keep XLA's defaults otherwise. Set before JAX starts its backend; subprocesses inherit it.
os.environ["XLA_FLAGS"] = (
    f"{os.environ.get('XLA_FLAGS', '')} --xla_backend_optimization_level=0 --xla_disable_hlo_passes=constant_folding"
    " --xla_cpu_parallel_codegen_split_count=1"
).strip()
import gc
from pathlib import Path

import numpy as np
import pytest

from netsweep_jax.sweep.model.profile import make_profile

PAPER_DATA = Path(__file__).resolve().parents[2] / "shared" / "paper-data"


def pytest_configure(config):
    """Python's cyclic garbage collector less often in the test processes: tracing a kernel makes a few
    hundred thousand short-lived objects, and with the default thresholds (700, 10, 10) the collector walked
    the whole heap of compiled kernels, cubes and fits over and over (a test process is long-lived, a
    ``sweep`` command is not). 7-8% of three test files' time, measured 2026-12-04; nothing a test checks
    depends on when a cycle is freed."""
    gc.set_threshold(50_000, 20, 1_000)


def pytest_sessionfinish(session, exitstatus):
    """One full collection, then the heap frozen: pytest's check for exceptions raised in finalizers collects
    garbage five times as the session ends, and each pass walked a test process's whole heap of compiled
    kernels (about 0.5 s a pass, 2026-12-04). Here the session's garbage is collected once, its finalizers run
    under pytest's check; pytest's own passes then walk only what was made after this one."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def compile_cache_in_a_temporary_directory(tmp_path_factory):
    """The persistent compilation cache goes to a test directory, not the user's home, shared by the run's
    workers (the parent of each worker's temporary root) and on for the library as for the CLI: a kernel
    of the same shapes is compiled once in the whole run, whichever worker meets it first."""
    from netsweep_jax.sweep.engine import compile_cache

    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if root.name.startswith("popen-gw") else root) / "jax-cache"
    os.environ["NETSWEEP_CACHE_DIR"] = str(shared)
    compile_cache.enable()


@pytest.fixture(autouse=True, scope="session")
def cli_command_built_once():
    """Typer's test runner builds the click command from the app on every call, and each option's Pydantic
    coercion again on its first use in that command (about 0.1 s per call; 70 of the run's CPU seconds, py-spy
    2026-12-03). The suite's few hundred calls share one command per process, as one ``sweep`` process has one:
    click keeps no state between calls but each option's coercion, which is the same for every call."""
    import typer.main
    import typer.testing

    built = functools.cache(typer.main.get_command)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(typer.testing, "_get_command", built)
        m.setattr(typer.main, "get_command", built)  # the console script's path (entry._run -> app())
        yield


@pytest.fixture(autouse=True, scope="session")
def shipped_llm_validation_computed_once(tmp_path_factory):
    """``validate --llm``'s fit of the shipped runs file, computed once in the whole run, by whichever worker
    needs it first (the other waits on a lock and loads it): the committed report's test and the docs'
    example run the same fit, about 10 s each on two cores. Only the computation is shared: each caller still
    checks its --out, writes its report and prints, and is told the fit's progress as it was said."""
    import fcntl
    import hashlib
    import pickle

    from netsweep_jax.sweep.analysis import llm_validation
    from netsweep_jax.sweep.io.runs import DATASET

    root = tmp_path_factory.getbasetemp()
    shared = root.parent if root.name.startswith("popen-gw") else root
    compute = llm_validation.run_validation
    digest = hashlib.sha256(Path(DATASET).read_bytes()).hexdigest()[:16]

    def once(path=DATASET, train=None, progress=None):
        if Path(path).resolve() != Path(DATASET).resolve() or train is not None:
            return compute(path, train, progress)
        said, stored = [], shared / f"llm-validation-{digest}.pickle"
        with open(stored.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker computes it meanwhile: wait, then load
            if not stored.exists():
                v = compute(path, train, said.append)
                stored.write_bytes(pickle.dumps((v, said)))
        v, said = pickle.loads(stored.read_bytes())
        for line in said:
            (progress or (lambda text: None))(line)
        return v

    with pytest.MonkeyPatch.context() as m:
        m.setattr(llm_validation, "run_validation", once)
        yield


@pytest.fixture(autouse=True, scope="session")
def layout_searches_computed_once(tmp_path_factory):
    """Each block of a ``sweep plan`` search (:func:`layout_block_best` on one block's settings and layouts)
    computed once in the whole run, by whichever worker meets it first: about ten tests run the same 40-setting
    plan to test what happens around the search (files kept, checkpoints, signals, closed pipes, messages), each
    search about 4 s on two cores. Keyed by the block's input bytes and the static arguments, so a block that
    differs in any input is computed; the block loop, checkpoints and sinks around it run as written. The search
    itself is checked against the float64 reference by the tests that compute it."""
    import hashlib
    import pickle

    from netsweep_jax.sweep.engine import layout_blocks

    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if root.name.startswith("popen-gw") else root) / "layout-blocks"
    shared.mkdir(exist_ok=True)
    compute = layout_blocks.layout_block_best

    def once(rows, columns, mask, *, keep, collectives=0):
        digest = hashlib.sha256(repr((keep, collectives, np.asarray(rows).dtype.str)).encode())
        for a in (rows, columns, mask):
            digest.update(np.ascontiguousarray(np.asarray(a)).tobytes())
        stored = shared / digest.hexdigest()
        if stored.exists():
            return pickle.loads(stored.read_bytes())
        best, where, picked = compute(rows, columns, mask, keep=keep, collectives=collectives)
        result = (np.asarray(best), np.asarray(where), {k: np.asarray(v) for k, v in picked.items()})
        partial = stored.with_suffix(f".{os.getpid()}")
        partial.write_bytes(pickle.dumps(result))
        partial.replace(stored)  # whole or absent: the other worker may be reading
        return result

    with pytest.MonkeyPatch.context() as m:
        m.setattr(layout_blocks, "layout_block_best", once)
        yield


@pytest.fixture(autouse=True, scope="session")
def cube_probe_once_per_file_state():
    """The CLI's crash probe of a cube (:func:`sweep.io.integrity.crashes_hdf5`: a forked child walks its
    metadata) answered once per file state in a test process: the same unchanged cube is read by several
    commands of one test, and each fork copies a test process's whole heap of compiled kernels (0.1-0.2 s a
    probe; 128 of the suite's 202 probes were of a file probed before, unchanged, 2026-12-07). Keyed by the
    file's inode, size and change times, so a file damaged or rewritten is probed again; only the CLI's calls
    are answered so, never a test's own (the probe's tests call it directly)."""
    import sys

    from netsweep_jax.sweep.io import integrity

    probe, answers = integrity.crashes_hdf5, {}

    def once(path):
        if sys._getframe(1).f_globals.get("__name__") != "netsweep_jax.sweep.cli.cubes":
            return probe(path)
        try:
            st = os.stat(path)
        except OSError:
            return probe(path)
        key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key not in answers:
            answers[key] = probe(path)
        return answers[key]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(integrity, "crashes_hdf5", once)
        yield


MEASURED_T1 = {
    "resnet50": 0.12808580219559176,
    "resnet101": 0.19200599479476405,
    "vgg16": 0.19452352295080985,
}


@pytest.fixture
def paper_data():
    """Path of ../shared/paper-data; skips the test where it is absent."""
    if not (PAPER_DATA / "resnet50.bk.log").is_file():
        pytest.skip(f"paper data not found at {PAPER_DATA} (../shared/paper-data is not laid out here)")
    return PAPER_DATA


def random_profile(rng, n_tensors=None, name="random"):
    """A profile with physically plausible random waits (s) and sizes (bytes)."""
    n = int(n_tensors or rng.integers(1, 60))
    sizes = rng.choice([4e3, 1e5, 1e6, 4e6, 1.6e7], size=n) * rng.uniform(0.5, 2.0, n)
    sizes = np.round(sizes)
    waits = rng.uniform(0.0, 2e-3, n) * (rng.uniform(size=n) < 0.7)
    t1 = float(waits.sum() + rng.uniform(0.05, 0.3))  # T1 covers the backward pass and more
    return make_profile(name, [f"t{i}" for i in range(n)], sizes, waits, t1)


def assert_same_figure(new, old):
    """Two PNGs show the same figure: same size, under 1% of pixels apart (fonts may rasterize differently
    between library versions)."""
    import matplotlib.image as mpimg

    a, b = mpimg.imread(new), mpimg.imread(old)
    assert a.shape == b.shape, (new, a.shape, b.shape)
    assert np.mean(np.abs(a - b) > 0.1) < 0.01, new


def assert_same_text(new, old):
    """A regenerated report file equals the committed one, byte for byte."""
    assert Path(new).read_text() == Path(old).read_text(), f"{new} differs from the committed {old}"


# The longest files first: the two workers then finish together instead of one waiting on a long file that
# started last (pytest-xdist's loadfile hands out whole files in collection order). test_layout.py first, and
# the README's examples (plan, a layout grid, validate --llm) a few files later on the other worker: by then the
# layout kernel's blocks are in the shared compilation cache, instead of both workers compiling them at once.
LONGEST_FIRST = (
    "test_layout.py",
    "test_layout_sweeps.py",
    "test_calibrate.py",
    "test_resume.py",
    "test_readme.py",
    "test_reduce.py",
    "test_silent.py",
    "test_hostile.py",
    "test_devices.py",
    "test_kernels.py",
    "test_validate.py",
    "test_llm_validation.py",
    "test_api.py",
)


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its own order
