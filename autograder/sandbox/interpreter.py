"""The Pythons of a ``--run-as`` run (the one that runs student code, and the grader's own): what they run, and
what of it a sandbox user could change (``autograder.preflight`` refuses the run then, and decides when each
of these looks runs).

A Python runs far more than its executable: its standard library and every folder on its ``sys.path``, and at
start-up every ``.pth`` file in its site folders (even under ``-I``). If a sandbox user could write any of
them, one submission could plant code that then runs in the next submission's child, or as root in the
grader or in the solution's child of ``--fresh-seed``. So before any student code runs, ``exposed`` looks
at all of it for every sandbox user.

Where to look comes from two sources, so that an interpreter already tampered with cannot hide a place:
what the files on disk imply (the executable and the folder it is in, a venv's ``pyvenv.cfg`` and the
``home`` it names, ``lib/pythonX.Y`` under each) and what the interpreter itself reports (its prefixes and
``sys.path``), asked as the sandbox user, never as root.

The grader's own Python, when student code runs another (``--python``), runs as root alone and only what the
grader loads: ``own_exposed`` looks at that, read from this very process (``own_places``), which is both
exact and a tenth of the walk (a Python's site may hold 100,000 files of packages the grader never imports).
Whatever runs it as root must have imported every package it will use before the check: a grade and a
batch import nothing of it later (batch's histogram is SVG written as text, not drawn by a plotting library).
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import sysconfig

from autograder.sandbox import isolation, reaper, tree

REPORT = ("import json, sys; print(json.dumps([sys.prefix, sys.exec_prefix, sys.base_prefix, "
          "sys.base_exec_prefix] + [p for p in sys.path if p]))")


def as_user(user):
    """A preexec_fn that drops to ``user`` (a pwd entry) before the program starts."""
    def become():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return become


# what the probe of a Python as a sandbox user runs: what a zygote imports as root, then the files that mapped
# (the libraries NumPy and the interpreter load from outside the Python's own tree are checked too)
NUMPY_PROBE = "import numpy, sys; sys.stdout.write(open('/proc/self/maps').read())"
PROBE_BYTES = 1 << 20            # kept of each of its outputs


def numpy_probe(python, user):
    """``python`` run as ``user`` (a pwd entry) importing NumPy: a ``subprocess.CompletedProcess`` whose stdout
    is its ``/proc/self/maps`` (``mapped_files``), or the exception ``reaper.run`` raised."""
    return reaper.run([python, "-I", "-c", NUMPY_PROBE], timeout=60, cwd="/", stdin=subprocess.DEVNULL,
                      capture_output=True, limit=PROBE_BYTES, preexec_fn=as_user(user))


def reported_paths(python, user):
    """``lib/pythonX.Y`` under the prefixes ``python`` reports when run as ``user``, and its ``sys.path``
    (untrusted: only absolute paths are kept)."""
    try:
        probe = reaper.run([python, "-I", "-c", REPORT], cwd="/", stdin=subprocess.DEVNULL, capture_output=True,
                           limit=1 << 20, preexec_fn=as_user(user), timeout=60)
        paths = json.loads(probe.stdout.decode("utf-8", "replace")[-(1 << 16):] or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    if not isinstance(paths, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in paths[:200]):
        return []
    return _libraries(paths[:4]) + paths[4:200]          # one not there yet: the folders above say who may make it


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
        named = set().union(*(disk_paths(python) for python in pythons))
        on_disk = _tops(named)
        found = _writable(on_disk, users)
        reported = set().union(*(probe.result() for probe in probes))
    # the .pth files root reads at start-up, read here as root: one a user cannot read is skipped by its probe
    # silently, and the folders it names would reach the zygote's sys.path unchecked
    sites = reported | {os.path.join(lib, site) for lib in named for site in ("site-packages", "dist-packages")}
    reported = _tops(reported | set(pth_paths(sites)))
    beyond = [p for p in reported if not any(within(p, q) for q in on_disk)]
    if beyond:
        found = [a + b for a, b in zip(found, _writable(beyond, users))]
    return [(user, each[0]) for user, each in zip(users, found) if each]


def pth_paths(folders):
    """The folders the ``.pth`` files directly in ``folders`` (site folders) add to ``sys.path``, as ``site``
    reads them (a line that is not blank, a comment or an ``import``, relative to the file's folder). Their
    ``import`` lines run code of the file's own folder, which is walked with it."""
    found = []
    for folder in folders:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names[:200]:
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    lines = f.read(1 << 16).splitlines()
            except OSError:
                continue
            found += [os.path.normpath(os.path.join(folder, line.rstrip())) for line in lines
                      if line.strip() and not line.startswith(("#", "import ", "import\t"))]
    return found


def within(path, folder):
    """Whether ``path`` is ``folder`` or inside it (both already normalised)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _tops(places):
    """``places`` without those inside another of them (walked with it)."""
    places = {os.path.normpath(p) for p in places}
    return sorted(p for p in places if not any(above in places for above in _above(p)))


def _above(path):
    while path != os.path.dirname(path):
        path = os.path.dirname(path)
        yield path


def _writable(tops, users):
    try:
        return isolation.writable_by_each(tops, users)
    except (OSError, tree.TreeError) as error:
        return [[f"{tops} (could not be checked: {error})"] for _ in users]


def own_places(path=None, modules=None, maps=None):
    """``(deep, shallow)``: what this process (the grader, as root) runs or may still import from its own
    Python. Deep, walked whole: the standard library (imported lazily), the grader's own package, and the
    top-level package of every module imported so far (each folder of it; a module that is no package, its
    file). Shallow, each with what lies directly in it: every folder on ``sys.path`` (its ``.pth`` files run
    at start-up, a module added there would be found before the one meant; one that does not exist yet, its
    folders above). And every executable file mapped into the process (the interpreter, libpython, extension
    modules and the libraries they load), as files; and the ``PYTHONPYCACHEPREFIX`` tree, if any. ``path``, ``modules``: ``sys.path`` and ``sys.modules`` unless given."""
    stdlibs = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}   # imports what it reads first
    path = sys.path if path is None else path
    modules = dict(sys.modules if modules is None else modules)
    shallow = {os.path.abspath(p or os.curdir) for p in path if isinstance(p, str)}   # missing: who may make it
    deep = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}      # the grader's own package, whole
    if sys.pycache_prefix:                                # PYTHONPYCACHEPREFIX: where its imports' pycs are read
        deep.add(os.path.abspath(sys.pycache_prefix))
    for stdlib in stdlibs:
        if os.path.isdir(stdlib):
            shallow.add(stdlib)
            deep.update(os.path.join(stdlib, name) for name in os.listdir(stdlib)
                        if name not in ("site-packages", "dist-packages")
                        and os.path.isdir(os.path.join(stdlib, name)))
    for name in modules:
        deep.update(_module_places(modules.get(name.partition(".")[0], modules[name])))
    return sorted(deep | set(_mapped_code(maps or "/proc/self/maps"))), sorted(shallow)


def _module_places(module):
    """Where ``module`` was loaded from: a package's folders, else its file (none for a built-in one)."""
    search = getattr(module, "__path__", None)
    try:
        places = [p for p in list(search) if isinstance(p, str)] if search is not None else []
    except TypeError:
        places = []
    file = getattr(module, "__file__", None)
    if not places and isinstance(file, str):
        places = [file]
    return [os.path.abspath(p) for p in places if os.path.isabs(p) and os.path.exists(p)]


def _mapped_code(maps):
    """The files mapped executable into this process (``/proc/self/maps``)."""
    try:
        with open(maps, encoding="utf-8", errors="surrogateescape") as f:
            return mapped_files(f.read())
    except OSError:
        return []


def mapped_files(maps):
    """The existing files mapped executable in ``maps`` (the text of a ``/proc/PID/maps``; untrusted: only
    absolute paths of regular files are kept, at most 1000)."""
    found = set()
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/") and os.path.isfile(fields[5]):
            found.add(fields[5])
            if len(found) >= 1000:
                break
    return sorted(found)


def own_exposed(users, path=None, modules=None):
    """``(user, path)`` for the first thing each user could change among what this process runs
    (``own_places``, which takes ``path`` and ``modules``), else []."""
    return places_exposed(own_places(path, modules), users)


def places_exposed(places, users, checked=((), ())):
    """``own_exposed`` of ``places`` (``(deep, shallow)``, as ``own_places`` gives them). ``checked``: the
    places of an earlier call that found nothing, only what lies outside them looked at (the grade checks what
    it runs while a probe starts, then what it loaded since): a file no user could change then, none can now,
    since only its owner or root may change its mode or its folder's."""
    deep, shallow = places
    deep = _tops(p for p in deep if not any(within(p, q) for q in checked[0]))
    shallow = [p for p in shallow if p not in checked[1]
               and not any(within(p, q) for q in deep)]   # nested, each is still looked at
    if not deep and not shallow:
        return []
    try:
        found = isolation.writable_by_each(deep, users, shallow=shallow)
    except (OSError, tree.TreeError) as error:
        found = [[f"{deep + shallow} (could not be checked: {error})"] for _ in users]
    return [(user, each[0]) for user, each in zip(users, found) if each]
