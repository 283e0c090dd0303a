"""The grader against attacks, one per class (see tests/securitykit.py): every run exits 0 in time, writes a
valid results file under 1 MB scoring exactly what an honest broken submission scores, leaves no process
behind, is not changed afterwards, and neither leaks a secret into the results nor writes outside its sandbox."""
import errno
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from autograder import cli
from autograder.diagnosis import report
from autograder.parts import spec
from autograder.sandbox import frames, untrusted
from tests import securitykit as kit
from tests.graderkit import check_gradescope, make_grader_copy

pytestmark = pytest.mark.slow                  # a campaign of hostile submissions, each graded whole

SECRET_TEXT = "TOP-SECRET-7f3a9c"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """Every attack of ``kit.ATTACKS`` (and the disk-full one where a tmpfs can be mounted), run at once."""
    root = str(tmp_path_factory.mktemp("campaign"))
    grader = make_grader_copy(os.path.join(root, "grader"))
    before = kit.tree_digest(grader)
    secret = os.path.join(root, "secret.txt")
    with open(secret, "w") as f:
        f.write(SECRET_TEXT)
    os.chmod(secret, 0o600)
    # without the PID namespace (the run-as tests use it where it exists): the grader's own reaping is tested
    runs = {name: kit.launch(root, name, code, grader, secret, pid_namespace=False)
            for name, (code, _) in kit.ATTACKS.items()}
    if _can_mount_tmpfs():
        runs["disk kept full"] = kit.launch(root, "disk kept full", DISK_FILLER, grader, secret, wrap=_in_small_tmpfs,
                                            pid_namespace=False)
    kit.wait_all(runs.values())
    with open(secret) as f:
        secret_after = f.read()
    return {"runs": runs, "grader_changed": kit.tree_digest(grader) != before, "secret_after": secret_after}


def _check(run, honest):
    results = kit.verdicts(run)
    tests = check_gradescope(results)
    assert results["score"] == honest, json.dumps(results, indent=1)[:3000]
    assert run.later == run.at_exit, "the results changed after the grader exited"
    assert not kit.processes_mentioning(run.base), "a process of the submission is still alive"
    assert SECRET_TEXT not in run.at_exit.decode() + run.stdout + run.stderr
    return tests


@pytest.mark.parametrize("name", [n for n in kit.ATTACKS if n != "honest broken"])
def test_attack(campaign, name):
    runs = campaign["runs"]
    honest = kit.verdicts(runs["honest broken"])["score"]
    tests = _check(runs[name], honest)
    assert tests["1.1"]["score"] == tests["1.1"]["max_score"]             # the other part is graded in full
    assert tests["2.1"]["score"] == 0
    assert kit.ATTACKS[name][1] in tests["2.1"]["output"], tests["2.1"]["output"]
    assert not campaign["grader_changed"] and campaign["secret_after"] == SECRET_TEXT


def test_honest_broken_submission_scores_only_the_other_part(campaign):
    tests = _check(campaign["runs"]["honest broken"], spec.PARTS_BY_NUMBER["1.1"].points)
    assert tests["2.1"]["score"] == 0 and "ValueError: broken" in tests["2.1"]["output"]


# ── a full disk ────────────────────────────────────────────────────────────────────────────────────────────────

DISK_FILLER = '''
def fill():
    for k in range(64):
        try:
            with open(os.path.join(os.getcwd(), f"fill{k}"), "ab") as f:
                f.write(bytes(1 << 20))
        except OSError:
            pass
if not hasattr(builtins, "attacked"):
    builtins.attacked = 1
    fill()
    daemon(fill, 60)
raise ValueError("broken")'''


def _can_mount_tmpfs():
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


def _in_small_tmpfs(command, base):
    """The grader in its own mount namespace where TMPDIR and the results live on an 8 MB tmpfs; the results
    are copied out when it exits and again 5 s later (the tmpfs goes away with the namespace)."""
    inner = " ".join(f"'{c}'" for c in command)
    disk = os.path.join(base, "disk")
    os.makedirs(disk)
    script = (f"mount -t tmpfs -o size=8m tmpfs {base}/tmp && mount -t tmpfs -o size=8m tmpfs {base}/results && "
              f"{inner}; rc=$?; cp {base}/results/results.json {disk}/at_exit.json; sleep 5; "
              f"cp {base}/results/results.json {disk}/later.json; exit $rc")
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]


def test_disk_kept_full(campaign):
    run = campaign["runs"].get("disk kept full")
    if run is None:
        pytest.skip("needs root and unshare to mount a small tmpfs")
    disk = os.path.join(run.base, "disk")
    with open(os.path.join(disk, "at_exit.json"), "rb") as f:
        run.at_exit = f.read()
    with open(os.path.join(disk, "later.json"), "rb") as f:
        run.later = f.read()
    tests = _check(run, kit.verdicts(campaign["runs"]["honest broken"])["score"])
    assert "ValueError: broken" in tests["2.1"]["output"]


def test_results_that_cannot_be_written_end_with_a_message(tmp_path, monkeypatch, capsys):
    calls = []

    def full(path, payload):
        calls.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report, "write_json", full)
    assert cli.main_grade(["1.1", "--json", str(tmp_path / "r.json")]) == 0
    assert len(calls) == 4                                # placeholder and final, each retried once
    assert "Could not write the results" in capsys.readouterr().err


# ── the decoders, directly ─────────────────────────────────────────────────────────────────────────────────────

def test_frames_round_trip_and_refuse_lies():
    arrays = {(0, "h_t"): np.arange(6.0).reshape(2, 3), (1, "flag"): np.array([True, False]),
              (1, "empty"): np.zeros((0, 4), np.float32)}
    meta, back = frames.decode(frames.encode([{"a": 1}, {"b": "x"}], arrays), cases=2)
    assert meta == [{"a": 1}, {"b": "x"}]
    assert all(np.array_equal(back[k], v) and back[k].dtype == v.dtype for k, v in arrays.items())
    _, wide = frames.decode(frames.encode([], {(0, "w"): np.ones(2, np.longdouble), (0, "b"): np.ones(2, ">i2")}))
    assert wide[(0, "w")].dtype == np.float64 and wide[(0, "b")].dtype == np.int16      # sent as allowed dtypes
    good = frames.encode([], {(0, "x"): np.ones(3)})
    lies = {
        "not a message": b"PK\x03\x04" + bytes(100),
        "cut short": good[:-1],
        "extra bytes": good + b"\x00",
        "object dtype": good.replace(b'"<f8"', b'"|O8"'),
        "case out of range": frames.encode([], {(7, "x"): np.ones(3)}),
        "huge declared shape": good.replace(b"[3]", b"[99999999999]"),
        "negative shape": good.replace(b"[3]", b"[-3]"),
        "huge header length": frames.MAGIC + (1 << 62).to_bytes(8, "big"),
    }
    for what, data in lies.items():
        with pytest.raises(frames.FrameError):
            frames.decode(data, cases=2)
        assert what


def test_text_is_bounded_printable_utf8():
    cleaned = untrusted.text("a\ud800b\x1b[2J\u202ec\nd\te" + "x" * 5000)
    cleaned.encode("utf-8")                                # no lone surrogate left
    assert cleaned.startswith("a?b?[2J?c\nd\te") and cleaned.endswith("(3013 more characters)")
    assert untrusted.text(b"\xff ok") == "\ufffd ok" and untrusted.text(12) == "<int>"
    with pytest.raises(ValueError):
        untrusted.reports([{"status": ["not", "text"]}], 1)
    assert untrusted.reports([{"status": "ok", "types": {"h": "\ud800"}, "extra": [[["deep"]]]}], 1)[0]["types"] == \
        {"h": "?"}
