"""Profile readers: the three formats, and errors that name file and line."""

import json

import numpy as np
import pytest

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.profile import load_profile


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_round_trip(tmp_path):
    path = write(tmp_path, "m.csv", "name,grad_bytes,backward_us\nfc.bias,4000,500\nfc.weight,8192000,27\n")
    p = load_profile(path, t1=0.1)
    assert p.names == ("fc.bias", "fc.weight")
    np.testing.assert_array_equal(p.grad_bytes, [4000, 8192000])
    np.testing.assert_allclose(p.ready, [500e-6, 527e-6])
    assert p.model == "m" and p.t1 == 0.1


def test_a_csv_profiles_columns_are_read_by_name_with_forward_times(tmp_path):
    # a hunt: reordered columns were refused, and forward_us, which a JSON profile takes and FSDP needs, too
    path = write(
        tmp_path, "m.csv", "grad_bytes,name,backward_us,forward_us\n4000,fc.bias,500,300\n8,b,20,7\n"
    )
    p = load_profile(path, t1=0.1)
    assert p.names == ("fc.bias", "b")
    units = write(tmp_path, "u.csv", "name,grad_bytes,backward_us,unit\na,4,5,1\nb,4,5,1\n")
    assert load_profile(units, t1=0.1).unit.tolist() == [1, 1]
    np.testing.assert_array_equal(p.grad_bytes, [4000, 8])
    np.testing.assert_allclose(p.wait, [500e-6, 20e-6])
    np.testing.assert_allclose(p.forward, [300e-6, 7e-6])
    same = load_profile(
        write(tmp_path, "n.csv", "name,grad_bytes,backward_us\nfc.bias,4000,500\nb,8,20\n"), t1=0.1
    )
    assert same.forward is None and np.array_equal(same.wait, p.wait)
    with pytest.raises(InputError, match="shorter than the forward and backward passes"):
        load_profile(path, t1=0.0008)  # the forward counts in T1's floor, as a JSON profile's


def test_json_round_trip(tmp_path):
    p = load_profile(write(tmp_path, "m.csv", "name,grad_bytes,backward_us\na,10,1\nb,20,2\n"), t1=0.2)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(p.to_json()))
    q = load_profile(path)
    assert q.names == p.names and q.t1 == 0.2
    np.testing.assert_allclose(q.wait, p.wait)
    assert q.content_hash() == p.content_hash()


def test_bklog(tmp_path):
    path = write(tmp_path, "x.bk.log", "comment\n1\n2\n552.6,4000\n27.1,8192000\n")
    p = load_profile(path, t1=0.128)
    assert p.model == "x" and len(p.names) == 2
    assert p.backward_time == pytest.approx(579.7e-6)


@pytest.mark.parametrize(
    "name,text,t1,message",
    [
        ("a.csv", "name,grad_bytes,backward_us\na,10\n", 0.1, "a.csv:2: expected 3 columns"),
        ("a.csv", "name,grad_bytes,backward_us\na,ten,1\n", 0.1, "a.csv:2: grad_bytes 'ten' is not a number"),
        ("a.csv", "name,grad_bytes,backward_us\na,10,-1\n", 0.1, "a.csv:2: backward_us '-1' must be finite"),
        ("a.csv", "name,bytes\n", 0.1, "a.csv:1: column 'bytes' is not read"),
        # a hunt: every header was "header must be exactly ...", the one read never shown nor its unit said
        ("a.csv", "", 0.1, "a.csv: empty; a CSV profile's first line is its header"),
        ("a.csv", "name\tgrad_bytes\tbackward_us\n", 0.1, "a.csv:1: columns separated by tabs"),
        (
            "a.csv",
            "name,grad_bytes,backward_ms\n",
            0.1,
            "column 'backward_ms' is not read (backward_us is read, in microseconds: convert the column from ms "
            "and name it so); the columns: name, grad_bytes, backward_us, and optionally forward_us, unit, shape; "
            "header is name,grad_bytes,backward_ms",
        ),
        ("a.csv", "name,grad_MB,backward_us\n", 0.1, "(grad_bytes is read, in bytes: convert the column from MB"),
        ("a.csv", "Name,grad_bytes,backward_us\n", 0.1, "column 'Name' is not read (name in another case: name it"),
        # a review: a column already in the unit read was told to convert, an empty one said nothing
        ("a.csv", "name,grad_bytes,backward_time_us\n", 0.1, "(backward_us is read, in microseconds: name the column so)"),
        ("a.csv", ",name,grad_bytes,backward_us\n", 0.1, "column '' is not read (an empty name: a trailing comma, or"),
        ("a.csv", "name;grad_bytes;backward_us\n", 0.1, "a.csv:1: columns separated by semicolons"),
        ("a.csv", "name,gradient_bytes,backward_us\n", 0.1, "(did you mean 'grad_bytes'?)"),
        ("a.csv", "name,grad_bytes\n", 0.1, "a.csv:1: missing column(s) backward_us; header is name,grad_bytes"),
        ("a.csv", "name,grad_bytes,backward_us,name\n", 0.1, "column 'name' given twice"),
        # a hunt: a quoted name across two lines put the next error a line early; a comment line is a comment
        ("a.csv", 'name,grad_bytes,backward_us\n"a\nb",4,1\nc,xx,1\n', 0.1, "a.csv:4: grad_bytes 'xx'"),
        ("a.csv", "# mine\nname,grad_bytes,backward_us\nc,xx,1\n", 0.1, "a.csv:3: grad_bytes 'xx'"),
        ("a.bk.log", "c\n1\n3\n1,2\n3,4\n", 0.1, "a.bk.log:3: count line says 3 tensors but 2 rows"),
        ("a.bk.log", "c\n1\n1\n1,-4\n", 0.1, "a.bk.log:4: grad_bytes '-4' must be finite"),
        ("a.bk.log", "c\n1\n1\n1,2,3\n", 0.1, "a.bk.log:4: expected 2 columns"),
        ("a.bk.log", "c\n1\nx\n", 0.1, "a.bk.log:3: tensor count 'x'"),
        # a hunt: int() took '3_0' as 30 and any script's digits; the batch line was not read at all
        ("a.bk.log", "c\n1\n1_0\n", 0.1, "a.bk.log:3: tensor count '1_0' is not a whole number in ASCII"),
        ("a.bk.log", "c\nabc\n1\n1,2\n", 0.1, "a.bk.log:2: batch count 'abc'"),
        # a hunt: JSON keeps the last of a key given twice, and torch's dtype spelling was 4-byte gradients
        (
            "a.json",
            '{"iteration_time_s": 0.05, "iteration_time_s": 5, "tensors": [{"grad_bytes": 4, "backward_us": 1}]}',
            None,
            "key 'iteration_time_s' twice in one object",
        ),
        ("a.bk.log", "c\n1\n1\n1,2\n", None, "t1 needed: "),  # load_profile's keyword (a hunt)
        ("a.json", '{"tensors": [}', 0.1, "a.json:1: not valid JSON"),
        ("a.txt", "", 0.1, "unknown profile format"),
        # found by a hunt: a traceback and a cube's .partial left behind (HDF5 has a group '.' already),
        # OverflowErrors, and a unit of 0.5 read as 0
        (
            "a.json",
            '{"model": ".", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}',
            0.1,
            "model name '.' must",
        ),
        (
            "a.json",
            '{"model": "a,b", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}',
            0.1,
            "without '/' or ','",
        ),
        (
            "a.json",
            '{"model": " a", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}',
            0.1,
            "spaces at its ends",
        ),
        (
            "a.json",
            '{"tensors": [{"grad_bytes": 4, "backward_us": 1, "unit": 1e30}]}',
            0.1,
            "FSDP units must be",
        ),
        (
            "a.json",
            '{"tensors": [{"grad_bytes": 4, "backward_us": 1, "unit": 0.5}]}',
            0.1,
            "whole numbers from 0",
        ),
        (
            "a.json",
            '{"tensors": [{"grad_bytes": 4, "backward_us": 1, "shape": [1e400]}]}',
            0.1,
            "shape [inf] must",
        ),
        # found by a hunt: a NUL was a traceback as the cube was written, its checkpoint left behind, blocking
        # the next run; an integer past Python's digits a traceback; a batch size of NaN or 1.5 kept in the cube;
        # a name too long for the sweep's default file
        ("a.csv", "name,grad_bytes,backward_us\nfc\x00b,10,1\n", 0.1, "tensor 0 name 'fc\\x00b' holds the control"),
        ("a.json", '{"model": "x\\u0000y", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "control characters"),
        ("a.json", '{"device": "h\\n1", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "device 'h\\n1' holds"),
        ("a.json", '{"tensors": [{"grad_bytes": 4' + "0" * 4400 + ', "backward_us": 1}]}', 0.1, "more digits than Python"),
        ("a.json", '{"batch_size": NaN, "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "batch_size nan must"),
        ("a.json", '{"batch_size": 1.5, "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "whole number of samples"),
        ("a.json", '{"model": "' + "m" * 129 + '", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "at most 128"),
        ("a.json", '{"model": "' + "模" * 50 + '", "tensors": [{"grad_bytes": 4, "backward_us": 1}]}', 0.1, "128 bytes"),
    ],
)  # fmt: skip
def test_bad_profiles_name_file_and_line(tmp_path, name, text, t1, message):
    with pytest.raises(InputError, match=None) as err:
        load_profile(write(tmp_path, name, text), t1=t1)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="profile file not found"):
        load_profile(tmp_path / "nope.csv", t1=0.1)


def test_a_builtin_model_scaled_to_another_t1():
    from netsweep_jax.sweep.engine.workloads import resolve_models

    (p,) = resolve_models("resnet50")
    (q,) = resolve_models("resnet50", iteration_time=2 * p.t1)
    np.testing.assert_allclose(q.wait, 2 * p.wait)
    np.testing.assert_array_equal(q.grad_bytes, p.grad_bytes)
    assert q.t1 == 2 * p.t1 and "compute x2" in q.source


def test_a_profile_files_own_t1_is_scaled_as_a_builtins_and_as_calibrates_t1_column(tmp_path):
    # grid's --iteration-time replaced a JSON profile's T1 (the waits unchanged) where calibrate's t1 column
    # scaled them: a fitted utilization then predicted 0.5486 in grid for the 0.7 it was fitted to (a hunt)
    import netsweep_jax.sweep as sweep
    from netsweep_jax.sweep.engine.workloads import resolve_models

    own = {"model": "ov", "iteration_time_s": 0.01, "tensors": [{"grad_bytes": 4e7, "backward_us": 1000}] * 2}
    path = write(tmp_path, "ov.json", json.dumps(own))
    (p,) = resolve_models(profile=path)
    (q,) = resolve_models(profile=path, iteration_time=0.05)
    np.testing.assert_allclose(q.wait, 5 * p.wait)
    np.testing.assert_array_equal(q.grad_bytes, p.grad_bytes)
    api = load_profile(path, t1=0.05)  # the Python API reads it as the command does
    assert api.t1 == q.t1 and api.wait.tolist() == q.wait.tolist()
    assert q.t1 == 0.05
    (r,) = resolve_models(
        profile=write(tmp_path, "m.csv", "name,grad_bytes,backward_us\na,10,1\n"), iteration_time=0.05
    )
    assert r.t1 == 0.05 and r.wait.tolist() == [1e-6]  # a file without a T1 takes it as its own
    rows = write(
        tmp_path,
        "m2.csv",
        "model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\nov.json,4,8,100,0.05,0.7\n",
    )
    fitted = sweep.calibrate(rows)["fitted"][0]["value"]
    sf = sweep.evaluate(q, bandwidth=100, nodes=4, utilization=fitted).scaling_factor.values.item()
    assert sf == pytest.approx(0.7, abs=1e-4), sf


@pytest.mark.parametrize(
    "given,message",
    [
        (["--model", "vgg16"], "--model and --profile name two models"),
        (["--model", "mynet"], "--model and --profile name two models"),  # not "unknown" (a review)
        (
            ["--precision", "bf16"],
            "--precision bf16: only for built-in transformer models, not with a profile",
        ),
        (["--gpu", "h100"], "--gpu h100: only for built-in transformer models"),
    ],
)
def test_options_a_profile_file_does_not_take_are_refused_not_dropped(tmp_path, given, message):
    # they were dropped in silence: the cube was the profile's own (a hunt)
    from helpers import invoke, one_line_error

    path = write(
        tmp_path,
        "mine.json",
        json.dumps({"iteration_time_s": 0.01, "tensors": [{"grad_bytes": 4, "backward_us": 1}]}),
    )
    for command in (
        ["grid", "--out", tmp_path / "x.h5"],
        ["need", "--target", "0.9", "--solve", "bandwidth"],
    ):
        r = invoke(*command, "--profile", path, "--nodes", "2", *given)
        assert message in one_line_error(r) and not (tmp_path / "x.h5").exists(), r.output


def test_calibrate_refuses_a_profile_no_row_names(tmp_path):
    # its model column named other models, and --profile was dropped in silence (a hunt)
    from helpers import invoke, one_line_error

    mine = write(
        tmp_path,
        "p.json",
        json.dumps(
            {"model": "mine", "iteration_time_s": 0.01, "tensors": [{"grad_bytes": 4e6, "backward_us": 100}]}
        ),
    )
    header = "model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
    other = write(tmp_path, "other.csv", header + "resnet50,4,8,100,0.1,0.7\n")
    assert "p.json: no row of" in one_line_error(invoke("calibrate", other, "--profile", mine))
    named = write(tmp_path, "named.csv", header + "mine,4,8,100,0.01,0.7\n")
    assert invoke("calibrate", named, "--profile", mine).exit_code == 0


def test_pytorchs_dtype_spelling_is_a_half_precision():
    # A hunt: "torch.float16" read as 4-byte gradients, which fp16 then halved.
    from netsweep_jax.sweep.model.profile import half_dtype

    assert all(half_dtype(d) for d in ("torch.float16", "torch.half", "torch.bfloat16", " BF16", "half"))
    assert not any(half_dtype(d) for d in ("float32", "torch.float32", "float32+bfloat16", ""))


def test_a_profile_csv_takes_comments_before_its_header_and_a_tensor_named_with_a_hash(tmp_path):
    # A review: read as records, a '#fc.bias' row after the header was dropped as a comment, a gradient lost.
    from netsweep_jax.sweep.model.profile import read_csv

    path = tmp_path / "p.csv"
    path.write_text("# my run\nname,grad_bytes,backward_us\n#fc.bias,4000,5\nfc.weight,8000,10\n")
    assert read_csv(path, 0.1).names == ("#fc.bias", "fc.weight")


@pytest.mark.parametrize("own", ["NaN", "Infinity", "1e400", '"abc"', "-1", "0", "true"])
def test_a_json_profiles_own_bad_iteration_time_is_refused_even_with_t1_given(tmp_path, own):
    # --iteration-time had taken the place of a T1 that is no number of seconds, in silence (a hunt); it still
    # takes the place of none, and of one shorter than the file's own passes.
    tensors = '"tensors": [{"name": "a", "grad_bytes": 4, "backward_us": 100}]'
    bad = write(tmp_path, "bad.json", f'{{"model": "m", "iteration_time_s": {own}, {tensors}}}')
    with pytest.raises(InputError, match="iteration time .* must be a number of seconds"):
        load_profile(bad, t1=0.05)
    for name, t1 in (("none.json", ""), ("short.json", '"iteration_time_s": 1e-5, ')):
        p = load_profile(write(tmp_path, name, f'{{"model": "m", {t1}{tensors}}}'), t1=0.05)
        assert p.t1 == 0.05
