"""Hostile or broken submissions: the grader finishes, writes a valid results file, and awards no points it
should not. Each one edits GRUCell.forward (parts 2.x); part 1.1 (RNN) must still be graded in full."""
import os
import subprocess
import sys
import time

import pytest

from autograder.parts import spec
from tests.graderkit import (
    REPO,
    at_top_of_forward,
    check_gradescope,
    load_results,
    make_grader_copy,
    make_submission,
    run_cli,
)

pytestmark = pytest.mark.slow                  # hostile submissions and grader copies, each graded whole

FULL_1_1_AND_2_1 = spec.PARTS_BY_NUMBER["1.1"].points + spec.PARTS_BY_NUMBER["2.1"].points


def hostile(code):
    """Edits that put ``code`` at the top of GRUCell.forward."""
    return at_top_of_forward(code, "nn/gru_cell.py")


# Where the kernel has Landlock, student code of the grader's own user cannot write outside its folder at all
# (tests/test_shared_user.py); these attacks are run without it, on the defences behind it that older kernels
# and macOS rely on.
BEHIND_LANDLOCK = {"MYTORCH_GRADER_LANDLOCK": "0"}

CASES = {
    # name: (edits, text expected in part 2.1's output)
    "segfault": (hostile("import ctypes\nctypes.string_at(0)"), "segmentation fault"),
    "sys.exit": (hostile("import sys\nsys.exit(0)"), "SystemExit"),
    "os._exit": (hostile("import os\nos._exit(0)"), "exited with code 0 before returning its results"),
    "infinite loop": (hostile("while True:\n    pass"), "did not finish within 3 s"),
    "memory bomb": (hostile("import numpy\nbig = numpy.ones((1 << 37,))"), "MemoryError"),
    "growing memory": (hostile("hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 26))"), "MemoryError"),
    # a memfd's pages are no process's address space: the open-file limit bounds them (errno 24, EMFILE)
    "memory held in memfds": (hostile(
        "import os\nfds = []\ntry:\n    while len(fds) < 1024:\n        fds.append(os.memfd_create('m'))\n"
        "        os.write(fds[-1], bytes(1 << 20))\nexcept OSError as e:\n"
        "    raise ValueError(f'memfds stopped by errno {e.errno}')\nraise ValueError('memfds never stopped')"),
        "memfds stopped by errno 24"),
    "megabytes of printing": (hostile("for _ in range(100):\n    print('x' * 100000)"), "printed more than 1 MiB"),
    "syntax error": ([("nn/gru_cell.py", "import math\n", "import math\ndef broken(:\n")],
                     "SyntaxError"),
    "import error": ([("nn/gru_cell.py", "import math\n", "import math\nimport module_that_does_not_exist\n")],
                     "No module named 'module_that_does_not_exist'"),
    "reads standard input": (hostile("input()"), "EOFError"),
    "lingering child process": (hostile("import os, time\nif os.fork() == 0:\n    time.sleep(600)\n"
                                        "raise ValueError('parent gives up')"), "ValueError: parent gives up"),
    "monkeypatches numpy comparisons": (hostile(
        "import numpy\nfor name in ('allclose', 'array_equal', 'isclose', 'testing'):\n"
        "    setattr(numpy, name, lambda *a, **k: True)\nreturn numpy.zeros((x.shape[0], self.hidden_size)) "
        "if x.ndim == 2 else numpy.zeros(self.hidden_size)"), "values differ"),
    "ndarray subclass that claims equality": (hostile(
        "import numpy\nclass Liar(numpy.ndarray):\n    def __eq__(self, other):\n        return True\n"
        "    __ne__ = lambda self, other: False\n"
        "out = numpy.zeros((x.shape[0], self.hidden_size) if numpy.ndim(x) == 2 else self.hidden_size)\n"
        "return out.view(Liar)"), "a subclass of numpy.ndarray"),
    "returns a list": (hostile("return [0.0] * self.hidden_size"), "got list"),
}


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    return make_grader_copy(tmp_path_factory.mktemp("grader"))


@pytest.mark.parametrize("name", CASES)
def test_hostile_submission(name, grader, tmp_path):
    edits, reason = CASES[name]
    sub = make_submission(tmp_path / "sub", edits)
    results_path = tmp_path / "results.json"
    start = time.monotonic()
    timeout = "3" if name == "infinite loop" else "30"     # filling 1 GiB takes ~2 s here, 10 s on a busy machine
    proc = run_cli(["1.1", "2.1", "--submission", sub, "--timeout", timeout, "--json", str(results_path)], cwd=grader)
    assert time.monotonic() - start < 100                   # a part's limit, and once more alone if starved
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout and "Traceback" not in proc.stderr
    tests = check_gradescope(load_results(results_path))
    assert tests["1.1"]["score"] == tests["1.1"]["max_score"], tests["1.1"]["output"]   # graded in full
    assert tests["2.1"]["score"] == 0 and tests["2.1"]["status"] == "failed"
    assert reason in tests["2.1"]["output"], tests["2.1"]["output"]


def test_student_code_cannot_write_the_results(grader, tmp_path):
    results_path = tmp_path / "results.json"
    forge = f"open({str(results_path)!r}, 'w').write('{{\"score\": 100}}')"
    sub = make_submission(tmp_path / "sub", hostile(forge))
    proc = run_cli(["1.1", "2.1", "--submission", sub, "--json", str(results_path)], cwd=grader, env=BEHIND_LANDLOCK)
    assert proc.returncode == 0
    results = load_results(results_path)
    check_gradescope(results)
    assert results["score"] == FULL_1_1_AND_2_1                                    # the parent's own verdict, written last


def test_editing_reference_data_changes_nothing_now_and_is_caught_next_time(tmp_path):
    grader = make_grader_copy(tmp_path / "grader")
    data = os.path.join(grader, "autograder", "data")
    vandal = (f"import glob\nfor f in glob.glob({data!r} + '/*.npz'):\n    open(f, 'wb').write(b'garbage')")
    sub = make_submission(tmp_path / "sub", hostile(vandal))
    first = run_cli(["1.1", "2.1", "--submission", sub, "--json", str(tmp_path / "1.json")], cwd=grader,
                    env=BEHIND_LANDLOCK)
    assert first.returncode == 0
    assert load_results(tmp_path / "1.json")["score"] == FULL_1_1_AND_2_1         # references were loaded before any child ran
    second = run_cli(["1.1", "2.1", "--submission", sub, "--json", str(tmp_path / "2.json")], cwd=grader,
                    env=BEHIND_LANDLOCK)
    assert second.returncode == 0 and "Traceback" not in second.stdout + second.stderr
    tests = check_gradescope(load_results(tmp_path / "2.json"))
    assert all(t["score"] == 0 for t in tests.values())
    assert "part_1.1.npz has been modified" in tests["1.1"]["output"]


def test_missing_and_damaged_reference_data(tmp_path):
    grader = make_grader_copy(tmp_path / "grader")
    data = os.path.join(grader, "autograder", "data")
    os.remove(os.path.join(data, "part_2.1.npz"))
    proc = run_cli(["1.1", "2.1", "--json", str(tmp_path / "r.json"), "--submission",
                    make_submission(tmp_path / "sub")], cwd=grader)
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    assert tests["1.1"]["score"] == tests["1.1"]["max_score"] and tests["2.1"]["score"] == 0
    assert "part_2.1.npz is missing" in tests["2.1"]["output"] and "Traceback" not in proc.stdout + proc.stderr
    os.remove(os.path.join(data, "manifest.json"))
    proc = run_cli(["--json", str(tmp_path / "r2.json"), "--submission", str(tmp_path / "sub")], cwd=grader)
    assert proc.returncode == 0 and "manifest" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    assert load_results(tmp_path / "r2.json")["score"] == 0


def test_no_mytorch_at_all(tmp_path):
    """A folder without the package: one message and every part 0 with it (no part runs another mytorch); the
    package folder itself named: the folder to give instead."""
    (tmp_path / "empty").mkdir()
    proc = run_cli(["1.1", "2", "--submission", str(tmp_path / "empty"), "--json", str(tmp_path / "r.json")])
    message = f"No mytorch package in {tmp_path / 'empty'}: run from the folder that holds mytorch/"
    assert proc.returncode == 0 and message in proc.stdout.replace("\n  ", " ")
    tests = load_results(tmp_path / "r.json")["tests"]
    assert len(tests) == 3 and all(t["score"] == 0 and message in t["output"] for t in tests)
    assert "importing mytorch failed" not in proc.stdout
    sub = make_submission(tmp_path / "sub")
    proc = run_cli(["1.1", "--submission", os.path.join(sub, "mytorch")])
    assert f"which is the package itself: give the folder that holds it, --submission {sub}." in \
        proc.stdout.replace("\n  ", " ")


def test_editing_any_grader_module_then_hanging_changes_nothing_in_the_grader(tmp_path):
    """Every grader module the parent uses is imported before student code runs: a submission that appends
    code to each of them (local mode lets it write there) and then hangs until the part times out must
    not get that code run in the grading process."""
    grader = make_grader_copy(tmp_path / "grader")
    folder = os.path.join(grader, "autograder")
    inject = ("import glob\n"
              f"for f in glob.glob({folder!r} + '/*.py'):\n"
              "    open(f, 'a').write('\\nimport sys\\nif not sys.argv[0].endswith(\"worker.py\"):\\n'\n"
              "                       '    open(' + repr(f + '.ran') + ', \"w\").close()\\n')\n"
              "while True:\n    pass")
    sub = make_submission(tmp_path / "sub", hostile(inject))
    proc = run_cli(["1.1", "2.1", "--submission", sub, "--timeout", "3", "--json", str(tmp_path / "r.json")],
                   cwd=grader, env=BEHIND_LANDLOCK)
    assert proc.returncode == 0, proc.stderr
    assert not [f for f in os.listdir(folder) if f.endswith(".ran")], "grader code edited by the submission ran"
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    assert tests["2.1"]["score"] == 0 and "did not finish within 3 s" in tests["2.1"]["output"]


def test_a_folder_put_at_the_results_path_is_cleared(grader, tmp_path):
    results_path = tmp_path / "results.json"
    block = f"import os\nos.makedirs({str(results_path)!r} + '/x', exist_ok=True)"
    sub = make_submission(tmp_path / "sub", hostile(block))
    proc = run_cli(["1.1", "2.1", "--submission", sub, "--json", str(results_path)], cwd=grader)
    assert proc.returncode == 0, proc.stderr
    assert load_results(results_path)["score"] == spec.PARTS_BY_NUMBER["1.1"].points


def test_fresh_seed_in_a_student_handout_needs_the_instructors_solution(tmp_path):
    grader = make_grader_copy(tmp_path / "grader")
    os.remove(os.path.join(grader, "autograder", "instructor", "generate.py"))               # as the handout ships it
    proc = run_cli(["1.1", "--fresh-seed", "5", "--submission", make_submission(tmp_path / "sub")], cwd=grader)
    assert proc.returncode != 0 and "--solution DIR" in proc.stderr


def test_an_error_that_memory_running_out_explains_says_so(tmp_path):
    """A MemoryError, or the SystemError CPython raises when a C allocation fails without saying so, reached
    the student as 'SystemError: error return without exception set': the child names its memory limit."""
    from autograder.sandbox import worker
    code = ("import resource, sys; sys.path.insert(0, sys.argv[1]); from autograder.sandbox import worker\n"
            "resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))\n"
            "print(worker._out_of_memory(SystemError('error return without exception set')))\n"
            "print(worker._out_of_memory(MemoryError()))")
    said = subprocess.run([sys.executable, "-c", code, REPO], capture_output=True, text=True, check=True).stdout
    assert said.count("most likely your code used up its memory of 512 MiB") == 2, said
    assert worker._out_of_memory(ValueError("x")) == ""


def test_a_part_is_held_to_its_memory_limit_across_all_its_processes(grader, tmp_path):
    """Three forked processes each write 400 MiB and hold it: each is within the 1 GiB address-space limit, but
    together they are over the part's 1 GiB. In the part's memory cgroup the kernel ends one of them (the
    parent then ends the others with SIGTERM, which is not counted)."""
    from autograder.sandbox import cgroups
    probe = cgroups.make(64)
    if probe is None:
        pytest.skip("no memory cgroup can be made here (not root, or none delegated): per-process limits only")
    cgroups.remove(probe)
    code = ("import os, signal\nif getattr(os, 'tried', 0):\n    raise ValueError('once is enough')\nos.tried = 1\n"
            "kids = []\nfor _ in range(3):\n    pid = os.fork()\n    if pid == 0:\n"
            "        held = b'x' * (400 << 20)\n        import time\n        time.sleep(20)\n        os._exit(0)\n"
            "    kids.append(pid)\n"
            "first, status = os.wait()\nended = {first: status}\n"
            "for k in set(kids) - {first}:\n    os.kill(k, signal.SIGTERM)\n    ended[k] = os.waitpid(k, 0)[1]\n"
            "killed = sum(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in ended.values())\n"
            "raise ValueError(f'children killed: {killed} of 3')")
    sub = make_submission(tmp_path / "sub", hostile(code))
    results_path = tmp_path / "results.json"
    proc = run_cli(["2.1", "--submission", sub, "--timeout", "30", "--memory", "1024", "--json", str(results_path)],
                   cwd=grader)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    output = check_gradescope(load_results(results_path))["2.1"]["output"]
    assert "children killed: 1 of 3" in output or "children killed: 2 of 3" in output, output


TOP_OF_RNN_CELL = ("nn/rnn_cell.py", "from mytorch.nn.cell import Cache, RecurrentCell\n")


def test_what_a_files_top_level_warns_of_costs_no_case(grader, tmp_path):
    """A cell's file is loaded when first used; the grader loads the files a part uses before its first case, so
    an overflow in a constant at the top of the file is no case's warning (its cases' values are right)."""
    edit = (*TOP_OF_RNN_CELL, TOP_OF_RNN_CELL[1] + "_HUGE = float(np.exp(np.float64(800.0)))\n")
    sub = make_submission(tmp_path / "sub", [edit])
    proc = run_cli(["1.1", "6.1", "--submission", sub, "--json", str(tmp_path / "r.json")], cwd=grader)
    assert proc.returncode == 0, proc.stderr
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    for number in ("1.1", "6.1"):
        assert tests[number]["score"] == tests[number]["max_score"], tests[number]["output"]


def test_an_endless_loop_at_the_top_of_a_file_is_located_at_its_line(grader, tmp_path):
    """A loop in a file's own top level, run when the part loads the file: the report names that line."""
    edit = (*TOP_OF_RNN_CELL, TOP_OF_RNN_CELL[1] + "_n = 0\nwhile True:\n    _n += 1\n")
    sub = make_submission(tmp_path / "sub", [edit])
    line = open(os.path.join(sub, "mytorch", "nn", "rnn_cell.py")).read().split("\n").index("    _n += 1") + 1
    proc = run_cli(["1.1", "--submission", sub, "--timeout", "3", "--json", str(tmp_path / "r.json")], cwd=grader)
    assert proc.returncode == 0, proc.stderr
    output = " ".join(check_gradescope(load_results(tmp_path / "r.json"))["1.1"]["output"].split())
    assert f"mytorch/nn/rnn_cell.py:{line} in <module>" in output or \
        f"mytorch/nn/rnn_cell.py:{line - 1} in <module>" in output, output
