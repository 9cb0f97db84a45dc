"""Value syntax and validation of axes."""

import numpy as np
import pytest

from netsweep_jax.sweep.core.axes import NUMERIC_AXES, apart
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import cli_message
from netsweep_jax.sweep.core.values import parse_values

R = NUMERIC_AXES["ratio"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("10,25,100", [10, 25, 100]),
        ("1..5", [1, 2, 3, 4, 5]),
        ("1..20:5", [1, 6, 11, 16]),
        ("1..1000@4", [1, 334, 667, 1000]),
        ("1..1000@4log", [1, 10, 100, 1000]),
        ("1,2,5..7", [1, 2, 5, 6, 7]),
        ("5..5", [5]),
    ],
)
def test_syntax(text, expected):
    np.testing.assert_allclose(parse_values(text, R), expected)


def test_decimal_steps_are_exact_as_typed():
    v = parse_values("0.1..1:0.1", NUMERIC_AXES["utilization"])
    assert 0.3 in v.tolist() and v[-1] == 1.0


@pytest.mark.parametrize(
    "axis,text,message",
    [
        ("ratio", "100..1", "--ratio '100..1': range is reversed"),
        ("ratio", "5..5:0", "--ratio '5..5:0': step 0 is empty"),
        ("ratio", "0.5", "--ratio 0.5: ratio must be a number from 1 to 1000000"),
        ("bandwidth", "0", "--bw 0: bandwidth must be a number from 0.001 to 1000000"),
        ("bandwidth", "fast", "--bw 'fast': 'fast' is not a number"),
        ("utilization", "1.5", "--util 1.5: utilization must be a number from 0.0001 to 1"),
        ("utilization", "0", "--util 0: utilization must be a number from 0.0001 to 1"),
        ("nodes", "2.5", "--nodes 2.5: nodes must be an integer from 1 to 1000000"),
        ("nodes", "0", "--nodes 0: nodes must be an integer from 1 to 1000000"),
        ("gpus_per_node", "0", "--gpus-per-node 0"),
        ("latency", "-1", "--latency -1: latency must be a number from 0 to 1000000"),
        ("fusion_buffer", "-2", "--fusion-mb -2"),
        ("fusion_timeout", "-2", "--fusion-ms -2"),
        ("ratio", "1,1", "value 1 appears twice"),
        ("ratio", "1..10@0", "@N needs N >= 2"),
        ("ratio", "", "give at least one value"),
    ],
)
def test_bad_values(axis, text, message):
    with pytest.raises(InputError) as err:
        parse_values(text, NUMERIC_AXES[axis])
    assert message in cli_message(err.value)  # the CLI spelling; the library names the axis
    assert str(err.value).startswith(axis)


def test_numbers_that_differ_are_never_printed_alike():
    # Two constants that differ past the fourth digit (a message saying they differ printed "0.6032, 0.6032").
    assert apart([0.60321, 0.60324]) == ["0.60321", "0.60324"]
    assert apart([0.6032, 0.75]) == ["0.6032", "0.75"] and apart([0.5, 0.5]) == ["0.5", "0.5"]
    first, second = apart([1 / 3, 1 / 3 + 1e-14])
    assert first != second and len(second) <= 17
