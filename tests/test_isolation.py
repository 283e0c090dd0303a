"""Unpacking what is handed in (bounded, no links or escapes, cleaned up), the grader's own code and data (never a
submission's, not rewritable together with its manifest), and private copies of submissions."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from autograder.sandbox import archive, interpreter, isolation, reaper
from tests.graderkit import (
    REPO,
    TWO_SECTIONS,
    check_gradescope,
    load_results,
    make_grader_copy,
    make_submission,
    report_of,
)


def _zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in members:
            z.writestr(name, content)
    return path


def _tar(path, members):
    with tarfile.open(path, "w") as tar:
        for info, content in members:
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return path


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _file(name, content=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info, content


HOSTILE = {
    # name: (write the archive to a path, what the refusal says)
    "deflate bomb": (lambda p: _zip(p, [("mytorch/big.py", bytes(archive.BYTES + (1 << 20)))]), "more than 64 MiB"),
    "too many members": (lambda p: _zip(p, [(f"m/{k}.py", b"") for k in range(archive.MEMBERS + 1)]),
                         f"more than {archive.MEMBERS} files and folders"),
    "parent folder": (lambda p: _tar(p, [_file("../../evil.py")]), "points outside"),
    "absolute path": (lambda p: _zip(p, [("/tmp/evil.py", b"x")]), "points outside"),
    "symbolic link": (lambda p: _tar(p, [_link("mytorch/secret", "/etc/shadow")]), "a link or a special file"),
    "hard link": (lambda p: _tar(p, [_link("mytorch/secret", "/etc/shadow", tarfile.LNKTYPE)]),
                  "a link or a special file"),
    "a FIFO": (lambda p: _tar(p, [_link("mytorch/fifo", "", tarfile.FIFOTYPE)]), "a link or a special file"),
    "a name given twice": (lambda p: _tar(p, [_file("mytorch/a.py"), _file("mytorch/a.py")]), "given twice"),
    # empty folders cost no bytes: each folder a path makes counts as a member, and a path is at most DEPTH deep
    "a folder bomb": (lambda p: _zip(p, [(f"{k}/" + "a/" * (archive.DEPTH - 2), b"") for k in range(200)]),
                      f"more than {archive.MEMBERS} files and folders"),
    "a path too deep": (lambda p: _zip(p, [("a/" * 1800 + "x.py", b"")]), f"more than {archive.DEPTH} folders deep"),
}
# the archive's format is found from its bytes, not its name


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_archives_are_refused(name, tmp_path):
    make, reason = HOSTILE[name]
    path = make(str(tmp_path / "handin"))
    os.makedirs(tmp_path / "out")
    with pytest.raises(archive.UnpackError) as error:
        archive.unpack(path, str(tmp_path / "out"))
    assert reason in str(error.value)
    assert not os.path.exists(tmp_path / "evil.py") and not os.path.exists("/tmp/evil.py")
    written = sum(os.path.getsize(os.path.join(f, n)) for f, _, names in os.walk(tmp_path / "out") for n in names)
    assert written <= archive.BYTES


def test_gradescope_refuses_a_bomb_writes_results_and_cleans_up(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    _zip(str(root / "submission" / "handin.zip"), [("mytorch/__init__.py", bytes(archive.BYTES + 1))])
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--root", str(root)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH="", TMPDIR=str(temp)), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    tests = check_gradescope(load_results(root / "results" / "results.json"))
    assert all(t["score"] == 0 and "more than 64 MiB" in t["output"] for t in tests.values())
    assert os.listdir(temp) == []                                   # the unpack folders are gone


def test_an_autograder_shipped_in_a_submission_is_never_imported(tmp_path):
    """Batch and Gradescope grade the submission's mytorch with the grader's own code; the shipped
    autograder package would leave a mark if anything imported it."""
    mark = tmp_path / "imported"
    subs = tmp_path / "subs"
    for where in (subs / "eve", tmp_path / "autograder" / "submission"):
        make_submission(where)
        os.makedirs(where / "autograder")
        for name in ("__init__.py", "__main__.py", "preflight.py", "grade.py", "cli.py"):
            (where / "autograder" / name).write_text(f"open({str(mark)!r}, 'w').write('imported')\n")
    env = dict(os.environ, PYTHONPATH="")
    grader = make_grader_copy(tmp_path / "grader", TWO_SECTIONS)
    batch = subprocess.run([sys.executable, "-m", "autograder", "batch", str(subs), "--jobs", "2"], cwd=grader,
                           env=env, capture_output=True, text=True, timeout=300)
    assert batch.returncode == 0, batch.stderr
    assert (report_of(subs) / "scores.csv").read_text().splitlines()[1].endswith(",100,,")
    scope = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--root", str(tmp_path / "autograder")],
                           cwd=grader, env=env, capture_output=True, text=True, timeout=300)
    assert scope.returncode == 0, scope.stderr
    assert load_results(tmp_path / "autograder" / "results" / "results.json")["score"] == 100
    assert not mark.exists()


def test_batch_refuses_a_grader_inside_the_submissions(tmp_path):
    subs = tmp_path / "subs"
    make_submission(subs / "eve")
    grader = make_grader_copy(subs / "eve")
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(subs)], cwd=grader,
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "imported from inside" in proc.stderr


def test_reference_data_and_manifest_rewritten_together_are_caught(tmp_path):
    grader = make_grader_copy(tmp_path / "grader")
    data = os.path.join(grader, "autograder", "data")
    shutil.copy(os.path.join(data, "part_2.1.npz"), os.path.join(data, "part_1.1.npz"))   # a consistent forgery
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(data, "part_1.1.npz"), "rb") as f:
        manifest["files"]["part_1.1.npz"] = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(data, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "2.1", "--json", str(tmp_path / "r.json"),
                           "--submission", REPO],
                          cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    assert tests["1.1"]["score"] == 0 and "compiled into the grader" in tests["1.1"]["output"]
    assert tests["2.1"]["score"] == tests["2.1"]["max_score"]


def test_private_copy_leaves_out_links_and_special_files(tmp_path):
    package = tmp_path / "sub" / "mytorch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    os.symlink("/etc/passwd", package / "passwd.py")
    os.symlink("/etc", package / "etc")
    os.mkfifo(package / "pipe")
    copy = isolation.private_copy(str(package), str(tmp_path / "copy" / "mytorch"))
    assert sorted(os.listdir(copy)) == ["__init__.py"]
    assert oct(os.stat(copy).st_mode & 0o777) == "0o755" and oct(os.stat(copy + "/__init__.py").st_mode & 0o777) == "0o644"


def test_reference_files_swapped_for_a_fifo_or_a_link_do_not_hang_the_next_run(tmp_path):
    """Local mode: student code runs as the grader's user and may replace the data for the next run."""
    grader = make_grader_copy(tmp_path / "grader")
    data = os.path.join(grader, "autograder", "data")
    os.remove(os.path.join(data, "part_1.1.npz"))
    os.mkfifo(os.path.join(data, "part_1.1.npz"))
    os.remove(os.path.join(data, "part_2.1.npz"))
    os.symlink(os.path.join(REPO, "autograder", "data", "part_2.1.npz"), os.path.join(data, "part_2.1.npz"))
    run = [sys.executable, "-m", "autograder", "1.1", "2.1", "--submission", REPO, "--json", str(tmp_path / "r.json")]
    proc = subprocess.run(run, cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    assert all(t["score"] == 0 and "cannot be read" in t["output"] for t in tests.values())
    os.remove(os.path.join(data, "manifest.json"))
    os.mkfifo(os.path.join(data, "manifest.json"))
    proc = subprocess.run(run, cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "manifest" in load_results(tmp_path / "r.json")["tests"][0]["output"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other users needs root")
@pytest.mark.parametrize("lister", ["find", "python", "failing find"])
def test_one_walk_tells_each_user_what_it_could_change(tmp_path, monkeypatch, lister):
    """Two users who own nothing and share no group: a file one of them owns, a folder group-writable for
    the other's group, a world-writable file and a sticky world-writable folder inside (where anyone may add
    a module), a link to a file one of them owns outside the tree, each found for exactly the users who
    could change it; a dangling link, a FIFO and a root-owned file for neither. The same with find(1) listing
    the tree and with the walk in Python that stands in where find is missing or fails."""
    import pwd
    if lister != "find":
        monkeypatch.setattr(isolation, "FIND", None if lister == "python" else shutil.which("false"))
    elif isolation.FIND is None:
        pytest.skip("no find(1) here")
    calls = []
    real_walked = isolation._walked
    monkeypatch.setattr(isolation, "_walked", lambda top, *deep: calls.append(top) or real_walked(top, *deep))
    a, b = (pwd.struct_passwd((name, "x", uid, uid, "", "/", "/bin/false"))
            for name, uid in (("mytorch-nobody-a", 64001), ("mytorch-nobody-b", 64002)))
    top = tmp_path / "site"
    (top / "pkg").mkdir(parents=True)
    (top / "shared").mkdir()
    for name in ("mine.py", "open.py", "root.py"):
        (top / "pkg" / name).write_text("x = 1\n")
    os.chown(top / "pkg" / "mine.py", a.pw_uid, 0)
    os.chmod(top / "pkg" / "open.py", 0o666)
    os.chown(top / "pkg", 0, b.pw_gid)
    os.chmod(top / "pkg", 0o775)
    os.chmod(top / "shared", 0o1777)
    (top / "shared" / "inside.py").write_text("")
    outside = tmp_path / "theirs.py"
    outside.write_text("")
    os.chown(outside, a.pw_uid, 0)
    os.symlink(outside, top / "pkg" / "linked.py")
    os.symlink(tmp_path / "nothing", top / "pkg" / "dangling.py")
    os.mkfifo(top / "pkg" / "fifo")
    found = isolation.writable_by_each([str(top)], [a, b])
    assert sorted(found[0]) == sorted([str(top / "pkg" / "mine.py"), str(top / "pkg" / "open.py"),
                                       str(top / "pkg" / "linked.py"), str(top / "shared")])
    assert sorted(found[1]) == sorted([str(top / "pkg"), str(top / "pkg" / "open.py"), str(top / "shared")])
    assert sorted(isolation.writable_by([str(top)], b)) == sorted(found[1])
    assert bool(calls) == (lister != "find")              # find listed it, or the walk did, never both


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other users needs root")
@pytest.mark.parametrize("lister", ["find", "python"])
def test_the_graders_own_python_is_checked_for_what_it_loaded_and_what_it_may_import(tmp_path, monkeypatch,
                                                                                    lister):
    """The grader's own Python, when student code runs another: a site folder on its sys.path holds a package
    it imported and one it did not. A file of the user's deep in the imported one, a .pth or a module directly
    in the site folder, or the folder itself writable, is refused; deep in the package it never imports, not
    (that is a tenth of the walk of a site like this machine's). A package found off sys.path is walked
    whole too, and the grader's own package always is."""
    import pwd
    import types
    if lister == "python":
        monkeypatch.setattr(isolation, "FIND", None)
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    site = tmp_path / "site"
    for package in ("used", "unused"):
        (site / package / "sub").mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
        (site / package / "sub" / "deep.py").write_text("")
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)  # a package an import hook found off sys.path
    (tmp_path / "elsewhere" / "sub" / "later.py").write_text("")
    loaded = {"used": types.SimpleNamespace(__file__=str(site / "used" / "__init__.py"),
                                            __path__=[str(site / "used")]),
              "used.sub.deep": types.SimpleNamespace(__file__=str(site / "used" / "sub" / "deep.py")),
              "elsewhere": types.SimpleNamespace(__path__=[str(tmp_path / "elsewhere")])}

    def refused():
        return [path for _, path in interpreter.own_exposed([user], path=[str(site)], modules=loaded)]

    assert refused() == []
    for planted in (site / "unused" / "sub" / "deep.py", site / "unused" / "sub"):
        os.chown(planted, user.pw_uid, user.pw_gid)
        assert refused() == []                            # never imported: not the grader's to run
        os.chown(planted, 0, 0)
    for planted in (site / "used" / "sub" / "deep.py", site / "used" / "sub", site / "used", site,
                    tmp_path / "elsewhere" / "sub" / "later.py"):
        os.chown(planted, user.pw_uid, user.pw_gid)
        assert refused() == [str(planted)]
        os.chown(planted, 0, 0)
    for name in ("planted.pth", "json.py"):               # runs at start-up; found before the one meant
        (site / name).write_text("")
        os.chown(site / name, user.pw_uid, user.pw_gid)
        assert refused() == [str(site / name)]
        os.remove(site / name)
    os.chmod(site, 0o1777)                                # anyone may add a module to a folder on sys.path
    assert refused() == [str(site)]
    assert os.path.dirname(os.path.dirname(interpreter.__file__)) in interpreter.own_places(path=[], modules={})[0]
    os.chmod(site, 0o755)
    later = tmp_path / "later"                            # a sys.path entry not there yet (python311.zip)
    later.mkdir()
    os.chown(later, user.pw_uid, user.pw_gid)
    assert [p for _, p in interpreter.own_exposed([user], path=[str(later / "python311.zip")], modules={})] \
        == [str(later)]
    monkeypatch.setattr(sys, "pycache_prefix", str(later / "pycache"))       # PYTHONPYCACHEPREFIX
    assert [p for _, p in interpreter.own_exposed([user], path=[], modules={})] == [str(later)]


def test_what_the_grader_loads_after_its_first_check_is_looked_at_when_the_checks_finish(tmp_path, monkeypatch):
    """The grade checks what its own Python runs while the probes start, and what it has loaded since when its
    checks finish (``places_exposed(..., checked=)``): a package first imported in between, of the user's, is
    refused; the places the first check found clean are not walked again."""
    import pwd
    if os.geteuid() != 0:
        pytest.skip("giving files to other users needs root")
    import types
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    site = tmp_path / "site"
    for package in ("first", "later"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    modules = {"first": types.SimpleNamespace(__path__=[str(site / "first")])}
    early = interpreter.own_places(path=[str(site)], modules=modules)
    assert interpreter.places_exposed(early, [user]) == []
    modules["later"] = types.SimpleNamespace(__path__=[str(site / "later")])
    os.chown(site / "later" / "__init__.py", user.pw_uid, user.pw_gid)
    walked = []
    real = isolation.writable_by_each
    monkeypatch.setattr(isolation, "writable_by_each",
                        lambda paths, users, shallow=(): walked.append((list(paths), list(shallow))) or
                        real(paths, users, shallow))
    late = interpreter.own_places(path=[str(site)], modules=modules)
    assert [p for _, p in interpreter.places_exposed(late, [user], checked=early)] == \
        [str(site / "later" / "__init__.py")]
    (deep, shallow), = walked                             # the standard library, the site: looked at before
    assert str(site / "later") in deep and shallow == []
    assert not [p for p in deep if any(interpreter.within(p, q) for q in early[0])]   # (but libraries mapped since)
    os.chown(site / "later" / "__init__.py", 0, 0)
    assert interpreter.places_exposed(late, [user], checked=late) == []

def test_clearing_what_one_user_left_never_holds_back_another_users_children(monkeypatch):
    """A user's leftovers are cleared while no child of theirs can start, and of theirs alone: another user's
    children start and end meanwhile (a flood of files in /tmp took one user 44 s to clear)."""
    import pwd
    import threading

    from autograder.sandbox import cleanup, runner
    slow, fast = (pwd.struct_passwd((n, "x", uid, uid, "", "/", "/bin/false"))
                  for n, uid in (("mytorch-nobody-a", 64011), ("mytorch-nobody-b", 64012)))
    clearing, release, cleared = threading.Event(), threading.Event(), []

    def clear_user(user):
        if user is slow:
            clearing.set()
            release.wait(10)
        cleared.append(user.pw_name)
    monkeypatch.setattr(cleanup, "clear_user", clear_user)
    runner._starting(slow)
    ender = threading.Thread(target=runner._ended, args=(slow,))
    ender.start()
    assert clearing.wait(5)
    other = threading.Thread(target=lambda: (runner._starting(fast), runner._ended(fast)))
    other.start()
    other.join(5)
    assert not other.is_alive() and cleared == ["mytorch-nobody-b"]     # while the slow one still clears
    again = threading.Thread(target=runner._starting, args=(slow,))
    again.start()
    again.join(0.2)
    assert again.is_alive()                                                 # its own next child waits
    release.set()
    for t in (ender, again):
        t.join(5)
    assert cleared == ["mytorch-nobody-b", "mytorch-nobody-a"] and runner._users[slow.pw_uid] == 1
    runner._users[slow.pw_uid] = 0


def _as_user(user, action):
    """Whether ``action()`` succeeds in a child running as ``user``: the kernel's own answer to what the user
    may do, the oracle ``writable_by`` is checked against."""
    return reaper.as_user(user, action) is not None


def _acl(entries):
    """The bytes of a POSIX access ACL (the kernel's xattr format): version 2, then (tag, permissions, id)."""
    import struct
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other users needs root")
@pytest.mark.parametrize("lister", ["find", "python"])
def test_what_a_user_could_change_is_what_the_kernel_lets_it_change(tmp_path, monkeypatch, lister):
    """Each case is asked of the kernel too, in a child running as the user: a file whose POSIX ACL names the
    user or its group with write (and one whose mask takes that away), a sticky world-writable folder above
    that is the user's own (it may rename what is in it) and one that is root's (it may not), a link above
    leading into a folder of the user's and one leading into root's, a path not there yet under a folder of
    the user's and under root's. ``writable_by`` finds what the kernel lets the user change and nothing
    else."""
    import pwd
    if lister == "python":
        monkeypatch.setattr(isolation, "FIND", None)
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="mytorch-kernel-"))     # one the user may reach (not tmp_path)
    os.chmod(base, 0o755)
    try:
        _compare_with_the_kernel(base, user)
    finally:
        shutil.rmtree(base)


def _compare_with_the_kernel(base, user):

    def folder(name, owner=0, mode=0o755):
        path = base / name
        path.mkdir(parents=True)
        os.chown(path, owner, owner)
        os.chmod(path, mode)
        return path

    def module(path):
        path.write_text("x = 1\n")
        os.chmod(path, 0o644)
        return path

    try:
        os.setxattr(module(base / "probe.py"), isolation.ACL_ACCESS, _acl([(1, 6, 0), (4, 4, 0), (0x20, 4, 0)]))
    except OSError:
        pytest.skip("no POSIX ACLs on this file system")
    acls = folder("acls")
    user_entry, group_entry, masked = (module(acls / f"{name}.py") for name in ("user", "group", "masked"))
    os.setxattr(user_entry, isolation.ACL_ACCESS,      # user::rw- user:64001:rw- group::r-- mask::rw- other::r--
                _acl([(1, 6, 0), (2, 6, 64001), (4, 4, 0), (0x10, 6, 0), (0x20, 4, 0)]))
    os.setxattr(group_entry, isolation.ACL_ACCESS,     # ... group:64001:rw- ...
                _acl([(1, 6, 0), (4, 4, 0), (8, 6, 64001), (0x10, 6, 0), (0x20, 4, 0)]))
    os.setxattr(masked, isolation.ACL_ACCESS,          # user:64001:rw- but mask::r--
                _acl([(1, 6, 0), (2, 6, 64001), (4, 4, 0), (0x10, 4, 0), (0x20, 4, 0)]))
    theirs_sticky = folder("theirs-sticky", user.pw_uid, 0o1777)
    root_sticky = folder("root-sticky", 0, 0o1777)
    for sticky in (theirs_sticky, root_sticky):
        module(folder(f"{sticky.name}/pkg") / "m.py")
    theirs = folder("theirs", user.pw_uid)
    roots = folder("roots")
    module(folder("theirs/pkg") / "m.py")
    module(folder("roots/pkg") / "m.py")
    os.symlink(theirs, base / "to-theirs")
    os.symlink(roots, base / "to-roots")

    def rename_in(parent, name):
        return lambda: os.rename(parent / name, parent / (name + ".moved"))

    def undo(parent, name):
        if (parent / (name + ".moved")).exists():
            os.rename(parent / (name + ".moved"), parent / name)

    kernel = {}
    for path in (user_entry, group_entry, masked):
        kernel[str(path)] = _as_user(user, lambda: open(path, "r+").close())
    for parent in (theirs_sticky, root_sticky, theirs, roots):
        kernel[str(parent)] = _as_user(user, rename_in(parent, "pkg"))
        undo(parent, "pkg")
    kernel[str(theirs / "not-yet")] = _as_user(user, lambda: os.mkdir(theirs / "not-yet"))
    kernel[str(roots / "not-yet")] = _as_user(user, lambda: os.mkdir(roots / "not-yet"))
    for made in (theirs / "not-yet", roots / "not-yet"):
        if made.exists():
            os.rmdir(made)
    assert kernel == {str(user_entry): True, str(group_entry): True, str(masked): False,
                      str(theirs_sticky): True, str(root_sticky): False, str(theirs): True, str(roots): False,
                      str(theirs / "not-yet"): True, str(roots / "not-yet"): False}

    assert sorted(isolation.writable_by([str(acls)], user)) == sorted(
        str(p) for p in (user_entry, group_entry) if kernel[str(p)])
    assert isolation.writable_by([str(theirs_sticky / "pkg")], user) == [str(theirs_sticky)]
    assert isolation.writable_by([str(root_sticky / "pkg")], user) == []
    assert isolation.writable_by([str(base / "to-theirs" / "pkg")], user) == [str(theirs)]
    assert isolation.writable_by([str(base / "to-roots" / "pkg")], user) == []
    assert isolation.writable_by_each([], [user], shallow=[str(theirs / "not-yet"), str(roots / "not-yet")]) \
        == [[str(theirs)]]


def test_a_file_removed_while_a_tree_is_looked_at_is_passed_over(tmp_path, monkeypatch):
    """What a walk listed may be gone when it is looked at (another grade's test, an instructor's pip): nothing
    runs it then, so it is passed over rather than making the whole check fail ('could not be checked')."""
    import pwd
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    top = tmp_path / "site"
    top.mkdir()
    (top / "open.py").write_text("")
    os.chmod(top / "open.py", 0o666)
    walked = isolation._walked
    monkeypatch.setattr(isolation, "_walked", lambda folder, **deep: [*walked(folder, **deep), str(top / "gone.pth")])
    assert isolation.writable_by_each([], [user], shallow=[str(top)]) == [[str(top / "open.py")]]
    assert isolation.writable_by_each([str(top)], [user]) == [[str(top / "open.py")]]
