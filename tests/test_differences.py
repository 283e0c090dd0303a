"""Each hint of ``differences.hints`` said exactly when the values prove it: a positive case with its words, a
partial match (one entry off) that says nothing, and the degenerate values (constants, a symmetric array,
integers or truth values) that would match anything."""
import numpy as np
import pytest

from autograder.diagnosis import differences, matching, traces

A = np.array([[0.3, -1.2, 2.0], [1.5, 0.7, -0.4], [-2.2, 0.9, 1.1], [0.05, -0.6, 0.8]])
BIAS = np.array([0.5, -0.25, 1.0])


def _record(name, value, reads=(), frame=1, at=(), kind="f"):
    return traces.Record(name, "mytorch/nn/x.py", 1, "", frame, "f", tuple(reads), np.asarray(value, float), at,
                         kind=kind)


def _hints(got, expected, operands=(), inputs=None, kind="f", later=None):
    """``differences.hints`` of a student value ``got`` against a quantity q of value ``expected`` that reads
    ``operands`` (name, value); ``later``: the reference's next value of q's name in the same call."""
    reference = [_record(name, value) for name, value in operands]
    q = _record("q", expected, range(len(reference)), at=(("t", 1),))
    reference.append(q)
    if later is not None:
        reference.append(_record("q", later, at=(("t", 2),)))
    s = _record("q", got, kind=kind)
    finding = matching.Finding(len(operands), list(range(len(operands))), {}, -1)
    return differences.hints(s, q, finding, reference, [s], inputs)


def _one_off(value):
    wrong = value.copy()
    wrong.flat[1] += 0.01
    return wrong


def test_a_case_input_missing_as_a_term_is_named_as_the_student_knows_it():
    inputs = {"param/bias_hh": BIAS, "x": A, "param/weight_ih": np.eye(3)}
    assert _hints(A - BIAS, A, inputs=inputs) == [
        "    Hint: your value plus `bias_hh` is the reference's: the line misses that term"]
    assert _hints(_one_off(A - BIAS), A, inputs=inputs) == []


def test_a_bias_missing_from_every_row_when_no_input_names_it():
    assert _hints(A - BIAS, A) == ["    Hint: the reference's value minus yours is the same vector in every row: a "
                                   "bias term missing (or one added twice, where the difference is the negative of "
                                   "one)"]
    assert _hints(_one_off(A - BIAS), A) == []
    assert _hints((A - BIAS)[:1], A[:1]) == []                         # one row proves nothing


def test_the_references_next_value_is_an_index_one_step_ahead():
    later = A * 2.0 + 1.0
    assert _hints(later, A, later=later) == [
        "    Hint: your value is the reference's next value of `q` (when t = 2): an index one step ahead"]
    assert _hints(_one_off(later), A, later=later) == []
    assert _hints(np.zeros(3), np.ones(3), later=np.zeros(3)) == []    # constants match too much: no log of 1


@pytest.mark.parametrize("axis, d", [(0, 1), (0, -1), (0, 2), (1, 1)])
def test_a_shift_along_time_or_the_lattice(axis, d):
    got = np.roll(A, d, axis=axis) + 7.0 * (np.arange(A.shape[axis]) < d if d > 0 else
                                             np.arange(A.shape[axis]) >= A.shape[axis] + d).reshape(
        (-1, 1) if axis == 0 else (1, -1))
    said = _hints(got, A)
    assert len(said) == 1 and f"along axis {axis}" in said[0] and f"an index {abs(d)} step" in said[0]


def test_time_reversed_but_not_of_a_value_that_is_its_own_reversal():
    assert _hints(A[::-1], A) == [
        "    Hint: your value is the reference's with its first axis reversed: time taken in the opposite order"]
    symmetric = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]])
    assert not any("reversed" in line for line in _hints(symmetric[::-1] + 1e-3, symmetric))
    assert _hints(_one_off(A[::-1]), A) == []


def test_a_sum_over_another_axis_of_what_the_quantity_reads():
    d = np.arange(9.0).reshape(3, 3) ** 1.5
    said = _hints(d.sum(axis=1), d.sum(axis=0), operands=[("d", d)])
    assert said == ["    Hint: your value is `d` summed over axis 1; the reference's sums it over axis 0"]


def test_a_sibling_read_in_the_place_of_the_references_operand():
    r, z, h = A, A[::-1] * 0.5, A + 1.0
    reference = [_record("r", r), _record("z", z), _record("h", h), _record("n", np.tanh(r * h), [0, 2])]
    student = [_record("r", r), _record("z", z), _record("h", h), _record("n", np.tanh(z * h), [1, 2])]
    finding = matching.Finding(3, [0, 1, 2], {0: [(0, "")], 1: [(1, "")], 2: [(2, "")]}, 2)
    assert differences.hints(student[3], reference[3], finding, reference, student) == [
        "    Hint: your line reads a value equal to the reference's `z` where the reference's reads `r`"]
    both = [*student[:3], _record("n", np.tanh(z * r * h), [0, 1, 2])]     # reads r too: not a swap
    assert differences.hints(both[3], reference[3], finding, reference, both) == []


@pytest.mark.parametrize("kind", ["i", "b"])
def test_no_hint_is_said_of_integers_or_truth_values(kind):
    assert _hints(A - BIAS, A, kind=kind) == [] and _hints(A[::-1], A, kind=kind) == []
