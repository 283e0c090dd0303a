"""Only the code a reader of the submission sees is graded: the sources of its ``mytorch``.

A submission may carry bytecode: a pyc in ``__pycache__`` that Python would load without reading its source (an
unchecked hash-based pyc), or a ``.pyc`` with no source at all that the visible code imports. Either would let
stub source (``raise NotImplementedError``) score with code nobody can read. Each part's child imports the
submission from its ``.py`` files alone (``worker.source_only``), whether forked from a zygote or started as its
own Python, and whether or not the grader's compile child covered every file.
"""
import importlib.util
import os
import py_compile

import pytest

from autograder import grade
from autograder.parts import spec
from autograder.sandbox import zygote
from tests.graderkit import make_submission

FORWARD = "        x, (h,), batched, _ = self._prepare(x, state)\n"
STUB = '        raise NotImplementedError("TODO: the RNN cell\'s forward")\n' + FORWARD
MODES = {"forked from a zygote": "1", "one Python per part": "0"}


def rnn_forward(sub):
    return grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"]])[0]


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request, monkeypatch):
    monkeypatch.setenv("MYTORCH_GRADER_ZYGOTE", MODES[request.param])
    return request.param


@pytest.mark.parametrize("compile_child", ["covers every file", "stops at its size limit"])
def test_an_unchecked_pyc_beside_stub_source_is_not_run(tmp_path, mode, compile_child):
    sub = make_submission(tmp_path / "sub")
    source = os.path.join(sub, "mytorch", "nn", "rnn_cell.py")
    py_compile.compile(source, cfile=importlib.util.cache_from_source(source), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    with open(source) as f:
        text = f.read()
    with open(source, "w") as f:
        f.write(text.replace(FORWARD, STUB, 1))
    if compile_child == "stops at its size limit":
        with open(os.path.join(sub, "mytorch", "_padding.py"), "w") as f:
            f.write("#" * (zygote.SOURCE_BYTES + 1) + "\n")
    result = rnn_forward(sub)
    assert result.score == 0 and "not implemented yet" in result.output, result.output
    assert "mytorch/nn/rnn_cell.py" in result.output, result.output


def test_a_pyc_without_source_is_not_imported(tmp_path, mode):
    """A ``.pyc`` of the solution's cell imported by stub source: the import fails, and says which module."""
    sub = make_submission(tmp_path / "sub", [("nn/rnn_cell.py", FORWARD, STUB)])
    py_compile.compile(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mytorch", "nn",
                                    "rnn_cell.py"), cfile=os.path.join(sub, "mytorch", "nn", "_accel.pyc"),
                       doraise=True)
    with open(os.path.join(sub, "mytorch", "nn", "rnn_cell.py"), "a") as f:
        f.write("\nfrom ._accel import RNNCell  # noqa: E402,F811\n")
    result = rnn_forward(sub)
    assert result.score == 0 and "mytorch.nn._accel" in result.output, result.output


def test_the_source_is_graded_when_no_bytecode_hides_it(tmp_path, mode):
    """The control: the same solution, with no bytecode shipped, keeps its full marks in either mode."""
    result = rnn_forward(make_submission(tmp_path / "sub"))
    assert result.score == result.part.points, result.output
