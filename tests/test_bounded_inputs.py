"""Trees and archives of any shape: walks are bounded and iterative, removal cannot be defeated, archives are
checked before tarfile or zipfile parse them, and Gradescope mode writes a results file whatever happens."""
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile

import numpy as np
import pytest

from autograder.instructor import gradescope, submissions
from autograder.sandbox import archive, tree
from tests.graderkit import REPO, TWO_SECTIONS, check_gradescope, load_results, make_grader_copy, make_submission


def _chain(top, depth, every=0):
    """A chain of ``depth`` folders named 'd' under ``top`` (a file in every ``every``-th), made by descriptor."""
    fd = os.open(top, os.O_RDONLY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
        if every and level % every == 0:
            os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


# ── walking and removing ───────────────────────────────────────────────────────────────────────────────────────

def test_a_chain_deeper_than_any_recursion_limit_is_removed(tmp_path):
    top = tmp_path / "deep"
    top.mkdir()
    _chain(str(top), 3 * sys.getrecursionlimit(), every=100)
    with pytest.raises(tree.TreeError, match=f"more than {tree.DEPTH} levels"):
        list(tree.walk(str(top)))
    assert tree.remove(str(top)) and not top.exists()
    assert os.listdir(tmp_path) == []


def test_removal_never_follows_links_and_opens_locked_folders(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    top = tmp_path / "t"
    (top / "locked" / "inner").mkdir(parents=True)
    (top / "locked" / "inner" / "f").write_text("x")
    os.symlink(outside, top / "link-to-folder")
    os.symlink(outside / "keep.txt", top / "locked" / "link-to-file")
    os.mkfifo(top / "fifo")
    os.chmod(top / "locked" / "inner", 0)
    os.chmod(top / "locked", 0o500)
    assert tree.remove(str(top)) and not top.exists()
    assert (outside / "keep.txt").read_text() == "kept"


def test_walk_is_bounded_and_lists_regular_files_only(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "z.py").write_text("")
    (tmp_path / "a" / "b" / "f.py").write_text("")
    os.symlink("/etc/passwd", tmp_path / "a" / "passwd.py")
    os.mkfifo(tmp_path / "a" / "pipe")
    seen = [(rel, dirs, files) for rel, _, dirs, files in tree.walk(str(tmp_path))]
    assert seen == [(".", ["a"], []), ("a", ["b"], ["z.py"]), (os.path.join("a", "b"), [], ["f.py"])]
    with pytest.raises(tree.TreeError, match="more than 3 files and folders"):
        list(tree.walk(str(tmp_path), entries=3))
    with pytest.raises(tree.TreeError, match="more than 1 levels"):
        list(tree.walk(str(tmp_path), depth=1))


# ── archives ────────────────────────────────────────────────────────────────────────────────────────────────────

def _header(name, size, kind):
    """One ustar header declaring ``size`` bytes of type ``kind``, checksum fixed."""
    info = tarfile.TarInfo(name)
    info.type = kind
    block = bytearray(info.tobuf(format=tarfile.USTAR_FORMAT)[:512])
    block[124:136] = b"%011o\x00" % size
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


def _gzip_bomb(kind, zeros_mib=1024):
    """A gzip stream: one extended header declaring 4 GiB, then ``zeros_mib`` MiB of zeros (as repeated gzip
    members, so it is made at once): about 1 MB on disk."""
    return gzip.compress(_header("././@LongHeader", 4 << 30, kind)) + gzip.compress(bytes(1 << 20)) * zeros_mib


def _handin(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


BOUNDED = {
    # name: (the archive's bytes, what the refusal says)
    "pax header declaring 4 GiB": (lambda: _gzip_bomb(tarfile.XHDTYPE), "extended header holds 4294967296 bytes"),
    "GNU long name declaring 4 GiB": (lambda: _gzip_bomb(tarfile.GNUTYPE_LONGNAME),
                                      "extended header holds 4294967296 bytes"),
    "pax size record": (lambda: _header("x", 12, tarfile.XHDTYPE) + b"12 size=999\n".ljust(512, b"\0") +
                        _header("a.py", 0, tarfile.REGTYPE) + bytes(1024), "sets a size"),
    "a chain of extended headers": (lambda: b"".join(_header("n", 8, tarfile.GNUTYPE_LONGNAME) +
                                                     b"long.py\0".ljust(512, b"\0") for _ in range(500)),
                                    "extended headers in a row"),
    "zip declaring 60000 entries": (lambda: b"PK\x03\x04" + bytes(100) + b"PK\x05\x06" +
                                    (0).to_bytes(4, "little") + (60000).to_bytes(2, "little") * 2 + bytes(10),
                                    f"more than {archive.MEMBERS} files"),
    "not an archive": (lambda: b"#!/bin/sh\n" * 100, "neither a tar"),
}


@pytest.mark.parametrize("name", BOUNDED)
def test_archives_are_bounded_before_they_are_parsed(name, tmp_path):
    make, reason = BOUNDED[name]
    path = tmp_path / "handin.tar.gz"
    path.write_bytes(make())
    (tmp_path / "out").mkdir()
    start = time.monotonic()
    with pytest.raises(archive.UnpackError, match=reason):
        archive.unpack(str(path), str(tmp_path / "out"))
    assert time.monotonic() - start < 5
    assert os.listdir(tmp_path / "out") == []


def test_a_tar_ending_in_an_npz_is_a_tar(tmp_path):
    """Its last member is a zip (an .npz), whose end record a signature search finds: the format comes from
    the first bytes only, so it unpacks as the tar it is."""
    npz = io.BytesIO()
    np.savez(npz, a=np.ones(3))
    path = tmp_path / "handin.tar"
    path.write_bytes(_handin([("mytorch/__init__.py", b"x = 1\n"), ("notebooks/saved.npz", npz.getvalue())]))
    assert zipfile.is_zipfile(path)                       # what fooled the grader before
    archive.unpack(str(path), str(tmp_path / "out"))
    assert (tmp_path / "out" / "mytorch" / "__init__.py").read_text() == "x = 1\n"
    assert (tmp_path / "out" / "notebooks" / "saved.npz").read_bytes() == npz.getvalue()


# ── Gradescope mode, as a separate process ──────────────────────────────────────────────────────────────────────

class Finished:
    """A finished grader process: exit code, what it printed, and its peak RSS in MiB (from wait4)."""

    def __init__(self, command, cwd, env, folder):
        with open(folder / "log.txt", "w+") as log:
            proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            log.seek(0)
            self.returncode, self.log, self.rss = proc.returncode, log.read(), usage.ru_maxrss / 1024


def _gradescope(tmp_path, upload, grader=REPO):
    """Run Gradescope mode (of the grader in ``grader``) on ``upload(submission folder)``; returns (the finished
    process, its results, the temporary folder's contents afterwards)."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    upload(root / "submission")
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = Finished([sys.executable, "-m", "autograder", "gradescope", "--root", str(root)], grader,
                    dict(os.environ, PYTHONPATH="", TMPDIR=str(temp)), tmp_path)
    return proc, load_results(root / "results" / "results.json"), os.listdir(temp)


def test_gradescope_pax_bomb_is_refused_in_bounded_memory_and_time(tmp_path):
    tiny = _handin([("mytorch/__init__.py", b"raise ImportError('nothing here')\n")])
    honest, _, _ = _gradescope(tmp_path / "honest", lambda sub: (sub / "handin.tar").write_bytes(tiny))
    start = time.monotonic()
    bomb = _gzip_bomb(tarfile.XHDTYPE)
    proc, results, left = _gradescope(tmp_path / "bomb", lambda sub: (sub / "handin.tar.gz").write_bytes(bomb))
    seconds = time.monotonic() - start
    assert proc.returncode == 0 and "Traceback" not in proc.log, proc.log
    tests = check_gradescope(results)
    assert all(t["score"] == 0 and "extended header holds 4294967296 bytes" in t["output"] for t in tests.values())
    assert left == []
    # the same as a tiny honest upload's grader, within what one unpack may hold (the archive, one header)
    assert proc.rss < honest.rss + (archive.ARCHIVE_BYTES >> 20), (proc.rss, honest.rss)
    assert seconds < 60
    print(f"peak RSS: pax bomb {proc.rss:.0f} MiB, a tiny upload graded in full {honest.rss:.0f} MiB; the bomb "
          f"refused in {seconds:.1f} s")


def test_gradescope_grades_a_handin_whose_last_member_is_an_npz(tmp_path):
    sub = make_submission(tmp_path / "solution")
    npz = io.BytesIO()
    np.savez(npz, a=np.ones(3))
    members = [(os.path.relpath(os.path.join(folder, f), sub), open(os.path.join(folder, f), "rb").read())
               for folder, _, files in os.walk(os.path.join(sub, "mytorch")) for f in sorted(files)]
    handin = _handin(members + [("notebooks/saved.npz", npz.getvalue())])
    proc, results, left = _gradescope(tmp_path, lambda s: (s / "handin.tar").write_bytes(handin),
                                      make_grader_copy(tmp_path / "grader", TWO_SECTIONS))
    assert proc.returncode == 0, proc.log
    assert results["score"] == 100 and left == []


def test_gradescope_upload_deeper_than_the_walk_still_writes_results(tmp_path):
    def deep(sub):
        make_submission(sub)
        _chain(str(sub), 1100)
    try:
        proc, results, left = _gradescope(tmp_path, deep)
    finally:
        tree.remove(str(tmp_path / "autograder" / "submission"))       # pytest's own cleanup would recurse
    assert proc.returncode == 0 and "Traceback" not in proc.log, proc.log
    tests = check_gradescope(results)
    assert all(t["score"] == 0 and f"more than {submissions.WALK_DEPTH} levels" in t["output"]
               for t in tests.values())
    assert left == []


def test_gradescope_writes_results_when_the_grader_itself_fails(tmp_path, monkeypatch, capsys):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)

    def broken(*args):
        raise RuntimeError("a fault of the grader")
    monkeypatch.setattr(submissions, "locate_path", broken)
    assert gradescope.main(["--root", str(root)]) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    tests = check_gradescope(results)
    assert all(t["score"] == 0 and "the autograder failed (RuntimeError)" in t["output"] for t in tests.values())
    assert "a fault of the grader" in capsys.readouterr().err
