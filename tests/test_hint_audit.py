"""The hint audit (tests/hint_audit.py): its oracle on made-up values, and the grader's catalogue hints checked
against it on the fresh mistakes and the AST mutants."""
import importlib.util

import numpy as np
import pytest

from autograder.diagnosis import mistakes
from tests import hint_audit, mutants


def test_a_report_s_catalogue_hints_and_diagnosis_phrases_are_found():
    """A catalogue hint is found whole (however the report wraps it) or by its first 60 characters (a BPTT hint
    with the student's line after it); the diagnosis's "Hint:" lines and kinds come from its own section."""
    wrapped = mistakes.Z_SWAPPED.replace(": ", ":\n      ")
    report = ("1 of 3 cases passed\ncase 2 (N=2): failed\n  h_t: values differ in 4 of 8 entries\n"
              f"  Hint: {wrapped}\n"
              f"  Hint: {mistakes.TIME_NOT_REVERSED[:70]}; look at mytorch/nn/recurrent.py:218: steps = …\n"
              "  Hint: the right magnitude but the opposite sign: check a subtraction\n"
              "Where case 2 first goes wrong: `dz`\n"
              "  your `dz` at mytorch/nn/gru_cell.py:80:\n"
              "    got 0.5 at [0, 0], expected -0.5; the opposite sign\n"
              "    Hint: your value plus `n` is the reference's: the line misses that term\n")
    catalogue, diagnosis = hint_audit.hints_in(report)
    assert catalogue == [mistakes.Z_SWAPPED, mistakes.TIME_NOT_REVERSED]
    assert diagnosis == ["Hint: your value plus `n` is the reference's: the line misses that term",
                         "the opposite sign"]
    assert hint_audit.hints_in("0 of 3 cases passed\n  Hint: the right magnitude but the opposite sign") == ([], [])


def test_a_hint_is_proved_only_by_equal_arrays_in_every_case():
    """Equal within rtol 1e-6 / atol 1e-8 (NaN equal to NaN), in every case and every array, with the same shape
    and dtype; a case that differs, an array one side lacks, another dtype: not proved."""
    swapped = mistakes.HINTED[0]
    theirs = [{"h_t": np.array([[0.5, np.nan]]), "dx": np.zeros((1, 2))}, {"h_t": np.array([[1.0, 2.0]])}]
    catalogue = {swapped.id: theirs}
    same = [{"h_t": np.array([[0.5 + 1e-9, np.nan]]), "dx": np.zeros((1, 2))}, {"h_t": np.array([[1.0, 2.0]])}]
    assert hint_audit.proved(swapped, same, catalogue)
    assert hint_audit.first_difference(same, theirs) is None
    other_case = [same[0], {"h_t": np.array([[1.0, 2.1]])}]
    assert not hint_audit.proved(swapped, other_case, catalogue)
    assert hint_audit.first_difference(other_case, theirs) == "case 2: h_t"
    lacking = [{"h_t": same[0]["h_t"]}, same[1]]
    assert hint_audit.first_difference(lacking, theirs) == "case 1: dx"
    as_float32 = [same[0], {"h_t": np.array([[1.0, 2.0]], dtype=np.float32)}]
    assert hint_audit.first_difference(as_float32, theirs) == "case 2: h_t"
    assert not hint_audit.proved(swapped, same, {})                    # a mistake with no outputs proves nothing
    assert not hint_audit.proved(swapped, None, catalogue)             # nor a mutant whose run broke


def _sets():
    """The fresh sets' mutants (the third one's too, once it is in tests/) and every AST mutant: grading all
    255 AST mutants takes about 20 s on two cores, so the sample is the whole set."""
    items = mutants.fresh() + mutants.mutants()
    if importlib.util.find_spec("tests.fresh_mistakes_third"):
        from tests.fresh_mistakes_third import FRESH_THIRD
        items += mutants.fresh(FRESH_THIRD)
    return items


@pytest.mark.mutants
@pytest.mark.slow
def test_no_catalogue_hint_is_given_that_the_oracle_does_not_prove():
    """Every catalogue hint ("these values are what … would give") a graded mutant's report gives is proved:
    the mutant's outputs are the catalogue mistake's on every case of the part (tests/hint_audit.py). A hint that
    fires because one array of one case matched sends a student the wrong way."""
    records = [hint_audit.judge(*g) for g in hint_audit.grade(_sets())]
    assert sum(bool(r["catalogue_hints"]) for r in records) >= 1            # the audit saw hints to judge
    false = hint_audit.false_hints(records)
    assert not false, f"{len(false)} catalogue hints the oracle does not prove:\n" + "\n".join(false)
