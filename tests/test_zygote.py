"""The per-submission zygote: every child starts from its pristine state, a zygote killed or stuck is replaced and
the grade completes, batch never shares one between submissions (each is forked from the batch's template, which
forks nothing else), and it holds nothing a student may not see.
(That a child cannot trace, read or signal it under --run-as is in tests/test_run_as.py.)"""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from autograder import grade
from autograder.instructor import batch
from autograder.parts import data, spec
from autograder.sandbox import bytecode, namespaces, reaper, runner, zygotes
from autograder.sandbox.childspec import ChildSpec, Limits
from tests.graderkit import REPO, at_top_of_forward, load_results, make_submission, report_of, run_cli


def rnn_edit(code):
    """Code run at the top of RNNCell.forward (parts 1.1 and 1.2 both call it)."""
    return at_top_of_forward(code)


def _pid_namespace(monkeypatch, wanted):
    """MYTORCH_GRADER_PID_NAMESPACE set to ``wanted`` for this test, and ``unshare`` looked for again with it
    (``namespaces.pid_namespace`` keeps its first answer for the process)."""
    monkeypatch.setenv("MYTORCH_GRADER_PID_NAMESPACE", wanted)
    monkeypatch.setattr(namespaces, "_unshare", [])


def live_zygotes():
    """Pids of the zygotes this process started and that are alive now."""
    found = set()
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                parent = int(f.read().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if name.isdigit() and b"autograder/sandbox/zygote.py" in command and parent == os.getpid():
            found.add(int(name))
    return found


def test_each_child_starts_from_the_pristine_zygote(tmp_path):
    """Part 1.1 changes NumPy, a module of the standard library, the builtins and the grader's own driver (all
    loaded in the zygote) in its child; part 1.2, forked
    afterwards from the same zygote, finds none of it (its cases, run in one child, do share it). Both keep
    full marks."""
    leave = ("import numpy as _np, json as _json, builtins as _b, mytorch as _m, sys as _s\n"
             "_mine = _m.__dict__.setdefault('_token', object())      # one per child: cases share it\n"
             "_f = _s._getframe()                                      # the grader's driver, loaded in the zygote\n"
             "while 'run_case' not in _f.f_globals:\n"
             "    _f = _f.f_back\n"
             "for _where in (_np.__dict__, _json.__dict__, _b.__dict__, _f.f_globals):\n"
             "    if _where.setdefault('left_by_a_part', _mine) is not _mine:\n"
             "        raise ValueError('state left by another part')\n"
             "_np.zeros = _np.ones\n")
    sub = make_submission(tmp_path / "sub", rnn_edit(leave))
    results = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["1.2"]], jobs=1)
    assert [r.score for r in results] == [r.part.points for r in results], [r.output for r in results]


@pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace needs root")
@pytest.mark.parametrize("zygotes_on", ["1", "0"], ids=["zygote", "spawned"])
def test_as_root_each_childs_code_runs_as_process_1_of_a_pid_namespace_of_its_own(tmp_path, monkeypatch, zygotes_on):
    """Four parts, two at a time: every case's code sees itself as process 1 (with no parent in its namespace),
    in four processes (their pids in the grader's namespace, which the host's /proc shows), so in four
    namespaces, none the grader's. (Namespace inode numbers are reused once one is gone, so they are not
    compared.)"""
    monkeypatch.setenv("MYTORCH_GRADER_ZYGOTE", zygotes_on)
    monkeypatch.setenv("MYTORCH_GRADER_LANDLOCK", "0")             # the record is written outside its folder
    _pid_namespace(monkeypatch, "1")
    log = tmp_path / "seen"
    record = (f"with open({str(log)!r}, 'a') as _f:\n"
              "    import os as _os\n"
              "    _f.write(f\"{_os.getpid()} {_os.getppid()} {_os.readlink('/proc/self')} \"\n"
              "             f\"{_os.readlink('/proc/self/ns/pid')}\\n\")\n")
    sub = make_submission(tmp_path / "sub", rnn_edit(record))
    parts = [spec.PARTS_BY_NUMBER[n] for n in ("1.1", "1.2", "1.1", "1.2")]
    results = grade.grade(sub, parts, jobs=2)
    assert [r.score for r in results] == [r.part.points for r in results], [r.output for r in results]
    seen = [line.split() for line in log.read_text().splitlines()]
    assert {(pid, parent) for pid, parent, _, _ in seen} == {("1", "0")}, seen
    assert len({host_pid for _, _, host_pid, _ in seen}) == 4, seen
    assert os.readlink("/proc/self/ns/pid") not in {namespace for _, _, _, namespace in seen}, seen


@pytest.mark.parametrize("forked", ["1", "0"], ids=["zygote", "spawned"])
@pytest.mark.parametrize("namespace", ["1", "0"], ids=["pid-namespace", "no-pid-namespace"])
def test_a_part_over_its_cpu_limit_is_told_so_even_as_process_1(tmp_path, monkeypatch, namespace, forked):
    """A process 1 of a PID namespace ignores the SIGXCPU of its soft CPU limit and dies of the SIGKILL at the
    hard one, which alone would read as the memory limit's. With the CPU limit lowered to 1 s (hard 2 s) and a
    wall-clock limit of 60 s (a busy machine may give the loop a small share of a CPU), a busy loop is ended by
    the CPU limit, and the report says so either way."""
    _pid_namespace(monkeypatch, namespace)
    monkeypatch.setenv("MYTORCH_GRADER_ZYGOTE", forked)
    monkeypatch.setattr(runner, "cpu_limit", lambda timeout: 1)
    sub = make_submission(tmp_path / "sub", rnn_edit("while True:\n    pass"))
    [result] = grade.grade(ChildSpec(sub, Limits(timeout=60.0)), [spec.PARTS_BY_NUMBER["1.1"]])
    assert result.score == 0 and "of CPU time" in result.output, result.output
    assert "out of memory" not in result.output and "did not finish" not in result.output, result.output


def test_a_spawned_child_that_ends_just_after_it_is_polled_is_reaped_with_its_cpu_time(monkeypatch):
    """A spawned child is reaped by ``os.wait4`` alone, which gives its CPU time (the CPU limit's SIGKILL is
    told from the memory limit's by it). Here the child has ended, but the first ``wait4`` answers as if it had
    not yet, as when it ends just after being asked on a busy machine: the poll says it runs, and the next one
    reaps it with its CPU time (reaped by ``Popen.poll``, it lost its time: under a full test run, one busy loop
    in 87 ended by the CPU limit was reported as "killed (out of memory?)")."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    while reaper._state(proc.pid) != "Z":                # ended, not reaped
        time.sleep(0.01)
    real, asked = os.wait4, []

    def just_before_it_ended(pid, options):
        if pid == proc.pid and not asked:
            asked.append(pid)
            return 0, 0, None
        return real(pid, options)
    monkeypatch.setattr(os, "wait4", just_before_it_ended)
    assert runner._poll(proc) is None
    assert runner._poll(proc) == 3 and proc.returncode == 3
    assert isinstance(proc.cpu_seconds, float) and proc.cpu_seconds > 0


def test_the_zygote_holds_no_data_no_shared_memory_and_no_extra_files():
    if os.geteuid() != 0:
        pytest.skip("the zygote is non-dumpable: only root may read its /proc/PID/fd and maps")
    reaper.become_subreaper()
    worker = zygotes.Zygote()
    try:
        code = bytecode.compiled(ChildSpec(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), zygote=worker))
        assert code                                   # the generation is ready once it compiled
        pid = worker.current.proc.pid
        fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        assert {fd for fd, target in fds.items() if target.startswith("socket:")} and len(fds) <= 6, fds
        assert not [t for t in fds.values() if "data" in t or t.endswith((".npz", ".json"))], fds
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        assert not [m for m in maps if m.split()[1][1] == "w" and m.split()[1][3] == "s"]      # no shared writes
        assert not [m for m in maps if ".npz" in m or "autograder/data" in m]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1:3] == [b"-I", b"-B"]
    finally:
        worker.close()
    assert pid not in live_zygotes()


def test_a_killed_zygote_is_replaced_and_the_grade_completes(tmp_path):
    """Part 2.1's child (as the grader's own user, no PID namespace and no Landlock: it can signal its parent,
    the zygote) kills its zygote once; the grader says so, grades the parts again on a new zygote, and every
    part keeps full marks."""
    marker = tmp_path / "killed"
    kill = ("import os, signal\n"
            f"if not os.path.exists({str(marker)!r}):\n"
            f"    open({str(marker)!r}, 'w').close()\n"
            "    os.kill(os.getppid(), signal.SIGKILL)                 # its parent: the zygote\n")
    sub = make_submission(tmp_path / "sub", at_top_of_forward(kill, "nn/gru_cell.py"))
    out = tmp_path / "r.json"
    proc = run_cli(["1.1", "1.2", "2.1", "2.2", "--submission", sub, "--json", str(out)],
                   env={"MYTORCH_GRADER_PID_NAMESPACE": "0", "MYTORCH_GRADER_LANDLOCK": "0"})
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    assert "the grading worker failed (" in proc.stderr and "a new one is started" in proc.stderr
    assert load_results(out)["score"] == sum(spec.PARTS_BY_NUMBER[n].points for n in ("1.1", "1.2", "2.1", "2.2"))


@pytest.mark.waits
def test_a_stuck_zygote_is_replaced_then_given_up(monkeypatch):
    """A zygote that stops answering is ended and replaced; after RESTARTS more failures the grader starts one
    Python per part, and says so each time. Every part is still graded."""
    monkeypatch.setattr(zygotes, "ANSWER_SECONDS", 1.0)
    notes = []
    reaper.become_subreaper()
    worker = zygotes.Zygote(note=notes.append)
    part = spec.PARTS_BY_NUMBER["1.1"]
    part_data = data.load_part(part.number)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        for attempt in range(zygotes.RESTARTS + 2):
            generation = worker.current
            if generation is not None:
                while not generation.ready and generation.alive:
                    generation.wait(0.1)
                os.kill(generation.proc.pid, signal.SIGSTOP)
            result = grade.grade_part(part, part_data, ChildSpec(root, zygote=worker))
            assert result.score == part.points, result.output
    finally:
        worker.close()
    assert len(notes) == zygotes.RESTARTS + 1
    assert all("did not answer in time" in n for n in notes)
    assert "each part now starts its own Python" in notes[-1]
    assert worker.current is None


def test_batch_gives_every_submission_its_own_zygote(tmp_path, monkeypatch):
    used = {}
    fork = runner._fork

    def recording(child, *args):
        if child.zygote is not None:
            used.setdefault(os.path.dirname(child.root), set()).add(child.zygote)     # kept: no id is reused
        return fork(child, *args)
    monkeypatch.setattr(runner, "_fork", recording)
    monkeypatch.setattr(spec, "PARTS", [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["2.1"]])
    for name in ("alice", "bob", "carol"):
        make_submission(tmp_path / "subs" / name)
    assert batch.main([str(tmp_path / "subs"), "--jobs", "2"]) == 0
    assert len(used) == 3 and all(len(ids) == 1 for ids in used.values())
    assert len(set.union(*used.values())) == 3            # three submissions, three zygotes
    with open(report_of(tmp_path / "subs") / "scores.csv", newline="") as f:
        totals = [float(row["total"]) for row in csv.DictReader(f)]
    full = spec.PARTS_BY_NUMBER["1.1"].points + spec.PARTS_BY_NUMBER["2.1"].points
    assert totals == [full] * 3


def _parent(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rpartition(b")")[2].split()[1])


def test_batch_forks_every_submissions_zygote_from_one_template(tmp_path, monkeypatch):
    """One template per batch; each submission's zygote is a fork of it (its own process, its own session),
    and the template itself forks no part."""
    made = []
    start = zygotes._Generation.__init__

    def recording(self, python, template=None, role="zygote"):
        start(self, python, template, role)
        while self.alive and not self.ready:               # it has made its session by the time it says so
            self.wait(0.05)
        made.append((role, self.proc.pid, _parent(self.proc.pid), os.getsid(self.proc.pid)))
    monkeypatch.setattr(zygotes._Generation, "__init__", recording)
    monkeypatch.setattr(spec, "PARTS", [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["2.1"]])
    for name in ("alice", "bob", "carol"):
        make_submission(tmp_path / "subs" / name)
    assert batch.main([str(tmp_path / "subs"), "--jobs", "2"]) == 0
    templates = [pid for role, pid, _, _ in made if role == "template"]
    assert len(templates) == 1
    forked = [(pid, parent, session) for role, pid, parent, session in made if role == "zygote"]
    assert len(forked) == 3 and len({pid for pid, _, _ in forked}) == 3
    assert all(parent == templates[0] and session == pid for pid, parent, session in forked)
    with open(report_of(tmp_path / "subs") / "scores.csv", newline="") as f:
        assert [float(row["total"]) for row in csv.DictReader(f)] == [
            spec.PARTS_BY_NUMBER["1.1"].points + spec.PARTS_BY_NUMBER["2.1"].points] * 3
    assert not live_zygotes()                                   # the template and every zygote ended with the batch


@pytest.mark.waits
def test_a_template_forks_only_zygotes_and_a_zygote_only_parts(monkeypatch):
    """Each answers only its own request: a part asked of the template, or a zygote asked of a zygote, is never
    made (the grader gives up on that process and starts the next zygote or part as without it)."""
    monkeypatch.setattr(zygotes, "ANSWER_SECONDS", 1.0)
    reaper.become_subreaper()
    template = zygotes.Template()
    worker = zygotes.Zygote(template=template)
    try:
        read, write = os.pipe()
        assert worker.current.fork({}, [read, write], op="zygote") is None
        assert template.generation.fork({"op": "fork"}, [read, write, write]) is None
        os.close(read)
        os.close(write)
        assert not template.generation.alive and not worker.current.alive
    finally:
        worker.close()
        template.close()
    assert not live_zygotes()


def test_without_a_working_template_each_zygote_starts_its_own_python(tmp_path):
    """A template that died: the submission's zygote is started as a Python of its own, and the grade is whole."""
    reaper.become_subreaper()
    template = zygotes.Template()
    os.kill(template.generation.proc.pid, signal.SIGKILL)
    while template.generation.alive:
        template.generation.wait(0.1)
    parts = [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["2.1"]]
    seen = []
    worker = zygotes.Zygote(template=template, note=seen.append)
    assert _parent(worker.current.proc.pid) == os.getpid()          # started here, not forked by the template
    results = grade.grade(ChildSpec(make_submission(tmp_path / "sub"), zygote=worker), parts)
    template.close()
    assert [r.score for r in results] == [p.points for p in parts] and not seen
    assert not live_zygotes()


def test_without_a_zygote_each_part_starts_its_own_python(tmp_path, monkeypatch):
    monkeypatch.setenv("MYTORCH_GRADER_ZYGOTE", "0")
    seen = set()
    monkeypatch.setattr(runner, "_fork", lambda *args: seen.update(live_zygotes()) or None)
    results = grade.grade(make_submission(tmp_path / "sub"), [spec.PARTS_BY_NUMBER["1.1"]])
    assert results[0].score == results[0].part.points
    assert not seen


BYTECODE_PROBE = """
import importlib._bootstrap_external as bootstrap, importlib.util, os, sys
import numpy as np
from autograder.sandbox import frames, zygote, zygotes  # noqa: E402
root, source, compiled, hashed = sys.argv[1:5]
os.makedirs(os.path.join(root, "mytorch"))
with open(os.path.join(root, "mytorch", "__init__.py"), "w") as f:
    f.write(source)
code = compile(compiled, os.path.join(root, "mytorch", "__init__.py"), "exec")
pyc = bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(hashed.encode()), checked=True)
message = frames.encode([], {(0, "mytorch/__init__.py"): np.frombuffer(bytes(pyc), dtype=np.uint8)})
r, w = os.pipe()
os.write(w, message)
os.close(w)
sys.path.insert(0, root)
zygote._worker().source_only(root, zygote._read_bytecode(r, root))
import mytorch
print(mytorch.X)
"""


@pytest.mark.parametrize("hashed, expected", [("X = 'source'", "from the pyc"),
                                              ("X = 'before the edit'", "source")])
def test_a_part_imports_the_submission_from_its_compiled_code_unless_the_source_changed(tmp_path, hashed,
                                                                                        expected):
    """A part's child takes a module's code from the pyc the compile child made while its source still hashes the
    same (this pyc holds other code than the source, so it shows), and compiles the source when it was edited
    since. Nothing is written beside the submission."""
    proc = subprocess.run([sys.executable, "-B", "-c", BYTECODE_PROBE, str(tmp_path / "sub"), "X = 'source'",
                           "X = 'from the pyc'", hashed], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected
    assert not [p for p in (tmp_path / "sub").rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"]


def test_a_plain_grade_starts_its_zygote_before_its_imports_and_uses_that_one(monkeypatch, capsys):
    """``python -m autograder`` starts the zygote first (it imports NumPy while the grader does) and grades with
    it: one zygote for the run, ended with it."""
    from autograder import __main__ as entry
    started = []
    real = zygotes.Zygote

    def counting(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]
    monkeypatch.setattr(zygotes, "Zygote", counting)
    assert entry.main(["1.1"]) == 0
    assert "4.00/4" in capsys.readouterr().out
    assert len(started) == 1 and started[0].current is None          # used, then closed
    assert not live_zygotes()


@pytest.mark.parametrize("argv", [["--python", sys.executable], ["--python=" + sys.executable],
                                  ["--run-as", "nobody"], ["--run-as=nobody", "1.1"], ["-h"]])
def test_no_zygote_starts_early_where_it_must_wait_for_the_checks(argv, monkeypatch):
    """Another Python's zygote runs as root only once that Python is checked; under --run-as, once the user is
    found unable to change the grader modules the zygote loads (``preflight.resolve_python``)."""
    monkeypatch.setattr(zygotes, "Zygote", lambda *a, **k: pytest.fail(f"a zygote started early for {argv}"))
    assert zygotes.early(argv) is None


@pytest.mark.parametrize("argv", [["--run", "nobody", "1.1"], ["--run-a=nobody"], ["--pyth", sys.executable],
                                  ["--sub", "."], ["batch", ".", "--run", "nobody"], ["batch", ".", "--py=python"],
                                  ["handin", "--no"], ["gradescope", "--ro", "/autograder"]],
                         ids=lambda argv: " ".join(argv).replace(sys.executable, "python"))
def test_an_abbreviated_option_is_a_usage_error(argv, capsys):
    """What runs before the options are parsed (the check, as root, of the folders a sandbox user could plant
    a module in; the early zygote) reads --run-as and --python as they are spelled: an abbreviation of
    either, which argparse would take, slipped past it (the grader's imports as root from such a folder, a
    zygote started as root before the checks of what it loads). No command takes an abbreviated option."""
    from autograder import __main__ as entry
    with pytest.raises(SystemExit) as stop:
        entry.main(argv)
    assert stop.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err
    assert not live_zygotes()


def test_a_zygote_started_early_is_never_used_for_a_sandbox_user(monkeypatch):
    """Should a grade under --run-as ever get a zygote started early (``early`` starts none then), that one,
    started as root before the checks of the grader modules it loads, is closed and a new one started once
    they are done."""
    import pwd

    from autograder import cli, preflight
    closed, used = [], []

    class Stub:
        def __init__(self, name):
            self.name = name

        def close(self):
            closed.append(self.name)
    monkeypatch.setattr(preflight, "resolve_user", lambda parser, name: pwd.getpwnam("nobody"))
    monkeypatch.setattr(preflight, "resolve_python", lambda *args, **kwargs: (sys.executable, None))
    monkeypatch.setattr(zygotes, "Zygote", lambda python: Stub("started for the user"))
    monkeypatch.setattr(cli, "_grade_checked", lambda *args, **kwargs: used.append(args[8].name) or 0)  # its worker
    assert cli.main_grade(["--run-as", "nobody", "1.1"], worker=Stub("early")) == 0
    assert used == ["started for the user"] and closed == ["early", "started for the user"]


def test_under_run_as_the_graders_own_python_runs_no_zygote_before_its_checks_end(monkeypatch):
    """Without --python the zygote is the grader's own Python as root: it starts only once that Python's checks
    (still under way when the options are resolved) have passed, and not at all when they refuse."""
    import pwd

    from autograder import cli, preflight
    started = []

    def refused():
        raise SystemExit(2)
    monkeypatch.setattr(preflight, "resolve_user", lambda parser, name: pwd.getpwnam("nobody"))
    monkeypatch.setattr(preflight, "resolve_python", lambda *args, **kwargs: (None, refused))
    monkeypatch.setattr(zygotes, "Zygote", lambda python: started.append(python))
    with pytest.raises(SystemExit):
        cli.main_grade(["--run-as", "nobody", "1.1"])
    assert started == []


@pytest.mark.parametrize("argv", [["99.9"], ["--no-such-option"], ["--help"], ["--python", "/no/such/python"]])
def test_a_usage_error_leaves_no_zygote_behind(argv, capsys):
    from autograder import __main__ as entry
    with pytest.raises(SystemExit) as stop:
        entry.main(argv)
    assert stop.value.code == (0 if argv == ["--help"] else 2)
    assert not live_zygotes()


def test_a_submissions_copies_of_the_solutions_files_run_the_graders_pycs_under_the_submissions_names(tmp_path):
    """The compile child skips a file with the same bytes as the instructor's (the grader has its pyc) and
    compiles the rest; the part's child runs those pycs under the submission's own paths, which is what a
    report names, never the solution's."""
    from autograder.sandbox import frames
    probe = ("nn/gru_cell.py", "from mytorch.nn.init import uniform\n",
             "from mytorch.nn.init import uniform\n"
             "raise RuntimeError('compiled as ' + uniform.__code__.co_filename)\n")
    sub = make_submission(tmp_path / "sub", [probe])
    known = bytecode.known_sources(grade.instructor_checkout())
    assert "mytorch/nn/init.py" in known and "mytorch/nn/gru_cell.py" in known
    reaper.become_subreaper()
    worker = zygotes.Zygote()
    try:
        _, arrays = frames.decode(bytecode.compiled(ChildSpec(sub, zygote=worker), known))
        _, solution = frames.decode(bytecode.compiled(ChildSpec(grade.instructor_checkout(), zygote=worker), known))
        result, = grade.grade(ChildSpec(sub, zygote=worker), [spec.PARTS_BY_NUMBER["2.1"]])
    finally:
        worker.close()
    assert {relative: a.tobytes() for (_, relative), a in solution.items()} == known    # all known: all lent
    pycs = {relative: array.tobytes() for (_, relative), array in arrays.items()}
    assert pycs["mytorch/nn/init.py"] == known["mytorch/nn/init.py"]            # not compiled by the child
    assert pycs["mytorch/nn/gru_cell.py"] != known["mytorch/nn/gru_cell.py"]    # edited: compiled by it
    assert f"compiled as {os.path.join(sub, 'mytorch', 'nn', 'init.py')}" in result.output, result.output


# a submission of one file: it looks in its own process for the bytecode the grader handed its child
BYTECODE_SNOOP = """\
import importlib.machinery
held = []
for cell in importlib.machinery.SourceFileLoader.get_code.__closure__ or ():
    try:
        value = cell.cell_contents
    except ValueError:
        continue
    if isinstance(value, dict):
        held += sorted(str(key).split("/mytorch/")[-1] for key in value)
raise ImportError(f"bytecode held: {held}")
"""


def test_a_submission_is_handed_the_solutions_bytecode_of_no_file_it_lacks_or_changed(tmp_path):
    """The grader sends a part's child the solution's pyc of a file only where the submission's file has the
    same bytes (the student holds that source already). Student code can read what its child holds: the pyc
    of a file the submission lacks, changed or broke would be the solution's code."""
    from autograder.sandbox import frames
    known = bytecode.known_sources(grade.instructor_checkout())
    sub = tmp_path / "sub"
    (sub / "mytorch" / "nn").mkdir(parents=True)
    (sub / "mytorch" / "__init__.py").write_text(BYTECODE_SNOOP)
    (sub / "mytorch" / "nn" / "rnn_cell.py").write_text("def broken(:\n")             # does not compile
    shutil.copy(os.path.join(REPO, "mytorch", "nn", "init.py"), sub / "mytorch" / "nn" / "init.py")
    reaper.become_subreaper()
    worker = zygotes.Zygote()
    try:
        _, arrays = frames.decode(bytecode.compiled(ChildSpec(str(sub), zygote=worker), known))
        result, = grade.grade(ChildSpec(str(sub), zygote=worker), [spec.PARTS_BY_NUMBER["1.1"]])
    finally:
        worker.close()
    lent = {relative: array.tobytes() for (_, relative), array in arrays.items()}
    assert set(lent) == {"mytorch/__init__.py", "mytorch/nn/init.py"}              # its own two that compile
    assert lent["mytorch/nn/init.py"] == known["mytorch/nn/init.py"]               # the same bytes: lent
    assert lent["mytorch/__init__.py"] != known["mytorch/__init__.py"]
    assert "bytecode held: ['nn/init.py']" in result.output, result.output


def _solution_copy(tmp_path):
    """A copy of the solution's mytorch (sources alone) in ``tmp_path / "checkout"``."""
    checkout = tmp_path / "checkout"
    shutil.copytree(os.path.join(grade.instructor_checkout(), "mytorch"), checkout / "mytorch",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return checkout


@pytest.mark.parametrize("kind", ["timestamp", "checked hash", "unchecked hash"])
def test_the_solutions_pycs_are_compiled_from_its_sources_never_taken_from_its_pycache(tmp_path, kind):
    """A pyc in the solution's __pycache__ that Python itself would take for the source (its recorded mtime
    and size, or the source's hash) may hold other code: one copied with its times kept after an edit, or
    one written by whoever could write there. The grader lends only what it compiled from the bytes."""
    import importlib.util
    import marshal
    checkout = _solution_copy(tmp_path)
    source = checkout / "mytorch" / "functional.py"
    info = os.stat(source)
    other = marshal.dumps(compile("FROM_THE_PYC = 1\n", str(source), "exec"))
    flags, stamp = {"timestamp": (0, int(info.st_mtime).to_bytes(4, "little") + info.st_size.to_bytes(4, "little")),
                    "checked hash": (3, importlib.util.source_hash(source.read_bytes())),
                    "unchecked hash": (1, importlib.util.source_hash(source.read_bytes()))}[kind]
    cached = importlib.util.cache_from_source(str(source))
    os.makedirs(os.path.dirname(cached))
    with open(cached, "wb") as f:
        f.write(importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + stamp + other)
    run = subprocess.run([sys.executable, "-c", "import mytorch.functional as f; print(hasattr(f, 'FROM_THE_PYC'))"],
                         cwd=checkout, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    assert run.stdout.strip() == "True", run.stderr                 # Python itself would run the planted code
    bytecode._compiled_here.clear()
    try:
        pyc = bytecode.known_sources(str(checkout))["mytorch/functional.py"]
    finally:
        bytecode._compiled_here.clear()
    expected = compile(source.read_bytes(), str(source), "exec", dont_inherit=True)
    assert pyc[8:16] == importlib.util.source_hash(source.read_bytes())
    assert marshal.loads(pyc[16:]).co_code == expected.co_code != marshal.loads(other).co_code
    assert "FROM_THE_PYC" not in marshal.loads(pyc[16:]).co_names


@pytest.fixture
def known_cache(tmp_path, monkeypatch):
    """The cache of the solution's pycs in a folder of the test's own, and nothing compiled yet in this process."""
    folder = tmp_path / "grader-pycache" / "known"
    monkeypatch.setattr(bytecode, "KNOWN_CACHE", str(folder))
    monkeypatch.setattr(bytecode, "_compiled_here", {})
    return folder


def _compiles(monkeypatch):
    """Counts the files ``known_sources`` compiles from here on."""
    compiled, real = [], bytecode._compiled_pyc
    monkeypatch.setattr(bytecode, "_compiled_pyc", lambda path, source: compiled.append(path) or real(path, source))
    monkeypatch.setattr(bytecode, "_compiled_here", {})
    return compiled


def test_the_solutions_pycs_are_kept_for_the_next_run_which_compiles_nothing(tmp_path, monkeypatch, known_cache):
    """Compiling the solution's files was a tenth of the CPU of a one-part grade: a run keeps their pycs in the
    grader's own bytecode folder (a folder of its user alone), named by the sha256 of each source, and the next
    run reads them instead."""
    import hashlib
    import stat
    checkout = _solution_copy(tmp_path)
    first = bytecode.known_sources(checkout)
    sources = {hashlib.sha256((tmp_path / "checkout" / relative).read_bytes()).hexdigest(): pyc
               for relative, pyc in first.items()}
    assert len(first) > 20 and stat.S_IMODE(os.stat(known_cache).st_mode) == 0o700
    kept = {name.split(".")[0]: (known_cache / name).read_bytes() for name in os.listdir(known_cache)}
    assert kept == sources                                               # each source's pyc, under its digest
    assert all(stat.S_IMODE(os.stat(known_cache / name).st_mode) == 0o600 for name in os.listdir(known_cache))
    compiled = _compiles(monkeypatch)
    assert bytecode.known_sources(checkout) == first and compiled == []


def test_the_cache_and_the_bytecode_folder_it_is_in_are_made_writable_by_the_grader_alone_whatever_the_umask(
        tmp_path, known_cache):
    """With no bytecode written yet (PYTHONDONTWRITEBYTECODE), the grade makes the grader's __pycache__: made
    as Python makes it, under a umask of 0 a sandbox user could plant the grader's own bytecode there (run as
    root by the next grade)."""
    previous = os.umask(0)
    try:
        bytecode.known_sources(_solution_copy(tmp_path))
    finally:
        os.umask(previous)
    assert oct(os.stat(known_cache.parent).st_mode & 0o777) == oct(0o755)
    assert oct(os.stat(known_cache).st_mode & 0o777) == oct(0o700)
    assert all(os.stat(known_cache / name).st_mode & 0o077 == 0 for name in os.listdir(known_cache))


def test_under_run_as_the_graders_bytecode_folder_is_made_before_what_children_see_is_decided(tmp_path, monkeypatch):
    """A folder only this run makes would not be hidden from its children, nor checked: it is made first."""
    from autograder import preflight
    package = tmp_path / "grader" / "autograder"
    package.mkdir(parents=True)
    monkeypatch.setattr(preflight, "HERE", str(package))
    previous = os.umask(0)
    try:
        places = preflight.instructor_places(None, [], sys.executable)
    finally:
        os.umask(previous)
    assert (str(package / "__pycache__"), "the grader's instructor-only modules and bytecode") in places
    assert oct(os.stat(package / "__pycache__").st_mode & 0o777) == oct(0o755)


def test_the_solutions_pycs_keep_their_asserts_and_docstrings_whatever_the_graders_optimisation(tmp_path):
    """A child runs without -O: a grader run with -OO once must not lend, then or later, pycs with less in them."""
    import marshal
    checkout = _solution_copy(tmp_path)
    code = ("import sys; from autograder.sandbox import bytecode\n"
            "bytecode.KNOWN_CACHE = sys.argv[2]\n"
            "sys.stdout.buffer.write(bytecode.known_sources(sys.argv[1])['mytorch/functional.py'])")
    run = subprocess.run([sys.executable, "-OO", "-c", code, checkout, str(tmp_path / "pycache" / "known")],
                         capture_output=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    assert run.returncode == 0, run.stderr
    source = (tmp_path / "checkout" / "mytorch" / "functional.py").read_bytes()
    lent = marshal.loads(run.stdout[16:])
    assert lent.co_consts[0] == compile(source, "f", "exec", optimize=0).co_consts[0]
    assert isinstance(lent.co_consts[0], str)                         # the module's docstring, which -OO drops


def _damaged(pyc):
    import importlib.util
    import marshal
    return {"cut short": pyc[:40], "of other bytes": pyc[:8] + bytes(8) + pyc[16:],
            "for another Python": bytes(4) + pyc[4:], "timestamp-based": pyc[:4] + bytes(4) + pyc[8:],
            "not marshalled code": pyc[:16] + b"\xff not a code object", "empty": b"",
            "marshalled, but not code": pyc[:16] + marshal.dumps([1, 2]),
            "this Python's header alone": importlib.util.MAGIC_NUMBER + pyc[4:16]}


@pytest.mark.parametrize("damage", list(_damaged(b"x" * 64)))
def test_a_kept_pyc_is_taken_only_if_it_is_whole_and_of_those_bytes(tmp_path, monkeypatch, known_cache, damage):
    """Anything else in its place (cut short by a full disk, of an older version of the file, for another
    Python) is compiled again and kept anew."""
    checkout = _solution_copy(tmp_path)
    first = bytecode.known_sources(checkout)
    name = next(n for n in os.listdir(known_cache) if (known_cache / n).read_bytes() == first["mytorch/functional.py"])
    (known_cache / name).write_bytes(_damaged(first["mytorch/functional.py"])[damage])
    compiled = _compiles(monkeypatch)
    assert bytecode.known_sources(checkout) == first
    assert [os.path.basename(p) for p in compiled] == ["functional.py"]
    assert (known_cache / name).read_bytes() == first["mytorch/functional.py"]


FOLDER_FAULTS = {"group-writable": lambda known: os.chmod(known, 0o770),
                 "world-readable": lambda known: os.chmod(known, 0o704),
                 "another user's": lambda known: os.chown(known, 64002, 64002),
                 "in a bytecode folder others may write": lambda known: os.chmod(known.parent, 0o777),
                 "in another user's bytecode folder": lambda known: os.chown(known.parent, 64002, 64002)}


@pytest.mark.parametrize("kind", [*FOLDER_FAULTS, "a link to a private folder"])
def test_a_cache_folder_others_could_write_or_read_is_neither_read_nor_written(tmp_path, monkeypatch, known_cache,
                                                                                kind):
    """Whoever could write the folder (or the bytecode folder that holds it: they could swap it) could lend a
    submission other code under the solution's name, and whoever could read it could read the solution's
    code: such a folder is left alone, every file compiled."""
    checkout = _solution_copy(tmp_path)
    first = bytecode.known_sources(checkout)
    if "another user's" in kind and os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    if kind == "a link to a private folder":
        os.rename(known_cache, tmp_path / "elsewhere")
        os.symlink(tmp_path / "elsewhere", known_cache)
    else:
        FOLDER_FAULTS[kind](known_cache)
    listing = sorted(os.listdir(known_cache))
    name = listing[0]
    os.unlink(known_cache / name)
    compiled = _compiles(monkeypatch)
    assert bytecode.known_sources(checkout) == first
    assert len(compiled) == len(first)                                   # none taken from the folder
    assert sorted(os.listdir(known_cache)) == [n for n in listing if n != name]      # nor one written to it


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other users needs root")
def test_a_solution_the_sandbox_user_could_change_lends_no_pycs(tmp_path):
    import pwd
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    checkout = _solution_copy(tmp_path)
    os.chmod(tmp_path, 0o755)
    assert len(bytecode.known_sources(str(checkout), user)) > 20
    os.chown(checkout / "mytorch" / "nn" / "init.py", user.pw_uid, user.pw_gid)
    assert bytecode.known_sources(str(checkout), user) == {}


@pytest.mark.waits
@pytest.mark.parametrize("forked", [True, False], ids=["zygote", "spawned"])
def test_an_endless_loop_is_located_though_its_child_was_slow_to_start(tmp_path, monkeypatch, forked):
    """Where the loop runs is printed a second before the limit counted from when the grader started the part,
    not from when the child got going: here each child is started 1.5 s late, and an 8 s limit still shows the
    student's line (timed from the child's start, it would have been printed after the kill). The loop sleeps,
    so that the 8 s cost no CPU."""
    name = "_fork" if forked else "_start"
    start = getattr(runner, name)

    def late(*args, **kwargs):
        time.sleep(1.5)
        return start(*args, **kwargs)
    monkeypatch.setattr(runner, name, late)
    monkeypatch.setenv("MYTORCH_GRADER_ZYGOTE", "1" if forked else "0")
    sub = make_submission(tmp_path / "sub", rnn_edit("import time\nwhile True:\n    time.sleep(0.01)"))
    with open(os.path.join(sub, "mytorch", "nn", "rnn_cell.py")) as f:
        line = 1 + next(k for k, text in enumerate(f.read().splitlines()) if "time.sleep(0.01)" in text)
    [result] = grade.grade(ChildSpec(sub, Limits(timeout=8.0)), [spec.PARTS_BY_NUMBER["1.1"]])
    assert "did not finish within 8 s" in result.output, result.output
    assert f"It was running mytorch/nn/rnn_cell.py:{line} in forward" in result.output, result.output


@pytest.mark.parametrize("reported", ["before the wait", "during it"])
def test_the_grader_waiting_for_a_childs_end_wakes_when_its_zygote_reports_it(reported):
    """A part's child closed its pipes: the grader waits for its end, which the zygote's listener records under
    the generation's condition. The wait ends at that report (or at once if it came first), not at its limit."""
    import threading
    from types import SimpleNamespace
    generation = SimpleNamespace(event=threading.Condition(), exits={}, alive=True)
    child = zygotes.Child(generation, 4242)

    def report():
        with generation.event:
            generation.exits[4242] = 0
            generation.event.notify_all()
    start = time.monotonic()
    if reported == "before the wait":
        report()
        child.await_end(30)
    else:
        with generation.event:               # the reporter gets the lock only once the wait has released it
            threading.Thread(target=report).start()
            child.await_end(30)
    assert time.monotonic() - start < 15 and generation.exits == {4242: 0}


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "spawned"])
def test_a_python_in_the_submission_s_own_folder_loads_its_numpy(tmp_path, zygote):
    """A student who made their venv inside their checkout (python3 -m venv .venv) grades with that Python: its
    NumPy's compiled modules lie under the submission's folder, whose code loads from .py sources alone, and
    were refused (No module named 'numpy.random._generator': 0 points, in every child that imported it)."""
    import numpy
    sub = make_submission(tmp_path / "sub")
    venv = os.path.join(sub, ".venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, capture_output=True)
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    here = os.path.dirname(os.path.dirname(numpy.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.isdir(os.path.join(here, name)):
            shutil.copytree(os.path.join(here, name), os.path.join(site, name),
                            ignore=shutil.ignore_patterns("__pycache__", "tests"))
    proc = run_cli(["1.1", "2.1", "--submission", sub, "--python", python, "--json", str(tmp_path / "r.json")],
                   env={"MYTORCH_GRADER_ZYGOTE": zygote}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    tests = {t["number"]: t for t in load_results(tmp_path / "r.json")["tests"]}
    assert all(t["score"] == t["max_score"] for t in tests.values()), [t["output"] for t in tests.values()]
