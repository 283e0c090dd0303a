"""The Pythons of a ``--run-as`` run (the one that runs student code, and the grader's own): refused if a
sandbox user could change what they run.

A Python runs far more than its executable: its standard library and every folder on its ``sys.path``, and at
start-up every ``.pth`` file in its site folders (even under ``-I``). If a sandbox user could write any of
them, one submission could plant code that then runs in the next submission's child, or as root in the
grader or in the solution's child of ``--fresh-seed``. So before any student code runs, ``exposed`` looks
at all of it for every sandbox user.

Where to look comes from two sources, so that an interpreter already tampered with cannot hide a place:
what the files on disk imply (the executable and the folder it is in, a venv's ``pyvenv.cfg`` and the
``home`` it names, ``lib/pythonX.Y`` under each) and what the interpreter itself reports (its prefixes and
``sys.path``), asked as the sandbox user, never as root.
"""
import concurrent.futures
import glob
import json
import os
import subprocess

from autograder import isolation, reaper, tree

REPORT = ("import json, sys; print(json.dumps([sys.prefix, sys.exec_prefix, sys.base_prefix, "
          "sys.base_exec_prefix] + [p for p in sys.path if p]))")


def as_user(user):
    """A preexec_fn that drops to ``user`` (a pwd entry) before the program starts."""
    def become():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return become


def reported_paths(python, user):
    """``lib/pythonX.Y`` under the prefixes ``python`` reports when run as ``user``, and its ``sys.path``
    (untrusted: only absolute paths of existing folders are kept)."""
    try:
        probe = reaper.run([python, "-I", "-c", REPORT], cwd="/", stdin=subprocess.DEVNULL, capture_output=True,
                               preexec_fn=as_user(user), timeout=60)
        paths = json.loads(probe.stdout.decode("utf-8", "replace")[-(1 << 16):] or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    if not isinstance(paths, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in paths[:200]):
        return []
    return [p for p in _libraries(paths[:4]) + paths[4:200] if os.path.isdir(p)]


def _libraries(prefixes):
    return [p for base in prefixes for lib in ("lib", "lib64")
            for p in glob.glob(os.path.join(glob.escape(base), lib, "python3*"))]


def disk_paths(python):
    """The places ``python``'s files say it runs code from."""
    found = {python, os.path.realpath(python)}
    for exe in list(found):
        prefix = os.path.dirname(os.path.dirname(exe))
        prefixes = [prefix]
        config = os.path.join(prefix, "pyvenv.cfg")
        if os.path.isfile(config):
            found.add(prefix)                             # a venv: all of it
            try:
                with open(config, encoding="utf-8", errors="replace") as f:
                    for line in f.read(1 << 16).splitlines():
                        key, _, value = line.partition("=")
                        if key.strip() == "home" and os.path.isabs(value.strip()):
                            prefixes.append(os.path.dirname(value.strip()))
            except OSError:
                pass
        found.update(p for p in _libraries(prefixes) if os.path.isdir(p))
    return found


def exposed(pythons, users):
    """``(user, path)`` for the first thing each user could change among what ``pythons`` run, else []: the
    places the files on disk name are walked while each user's probe runs, then whatever a probe names
    beyond them, each place checked for every user."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(pythons) * len(users))) as pool:
        probes = [pool.submit(reported_paths, python, user) for python in pythons for user in users]
        on_disk = _tops(set().union(*(disk_paths(python) for python in pythons)))
        found = _writable(on_disk, users)
        reported = _tops(set().union(*(probe.result() for probe in probes)))
    beyond = [p for p in reported if not any(_within(p, q) for q in on_disk)]
    if beyond:
        found = [a + b for a, b in zip(found, _writable(beyond, users))]
    return [(user, each[0]) for user, each in zip(users, found) if each]


def _within(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _tops(places):
    """``places`` without those inside another of them (walked with it)."""
    places = sorted({os.path.normpath(p) for p in places})
    return [p for p in places if not any(p != q and _within(p, q) for q in places)]


def _writable(tops, users):
    try:
        return isolation.writable_by_each(tops, users)
    except (OSError, tree.TreeError) as error:
        return [[f"{tops} (could not be checked: {error})"] for _ in users]
