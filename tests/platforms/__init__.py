"""A kit that simulates macOS's and Windows' CPython on this Linux machine, so that the grader can be proved to
start and grade there without those machines.

A *profile* (``macos.py``, ``windows.py``) changes, at the start of a Python, what the standard library shows:
``sys.platform``, the modules that cannot be imported, the names of os, signal, select, socket, subprocess,
ctypes, resource, platform... that the system's CPython lacks or has, and the behaviour of those it has
otherwise (``select`` on a pipe on Windows, a SEQPACKET socket on macOS, a job object on Windows). /proc and
/sys are invisible under both. Each item says in its source what real CPython does there, and each module's
doc lists what cannot be simulated.

``make_venv(profile, folder)`` makes a virtual environment whose ``bin/python`` loads a profile in every
process it runs, the grader's children included: they are started as ``python -I -B script.py``, and -I
still runs ``site``, which imports the venv's ``sitecustomize``. That first adds the site-packages of the
environment running the tests (``site.addsitedir``: their .pth files run, so NumPy and the editable install
of this checkout are there), then applies the profile, whose name is written in it (the grader gives its
children a minimal environment, so nothing can come from there)::

    python = profile_python("windows", tmp_path_factory)    # or the session fixture platform_python
    subprocess.run([python, "-I", "-c", "import sys; print(sys.platform)"])      # win32
    subprocess.run([python, "-m", "autograder", "1.1"], cwd=submission, env=minimal_env(home))
"""
import compileall
import os
import shutil
import site
import subprocess
import sys
import threading

PROFILES = ("macos", "windows")
PLATFORMS = {"macos": "darwin", "windows": "win32"}
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PACKAGE = "_mytorch_platforms"           # the profiles' package, as copied into each venv's site-packages
MODULES = ("common.py", "kernel32.py", "macos.py", "windows.py")

SITECUSTOMIZE = '''"""sitecustomize of a venv of mytorch's platform kit (tests/platforms): every Python of this venv, and each one
it starts (-I too), sees the packages of the environment that made it, then simulates {profile}."""
import site

for _folder in {folders!r}:
    site.addsitedir(_folder)
del _folder

from {package} import {profile} as _profile  # noqa: E402

_profile.apply()
del site, _profile
'''


def base_python():
    """The interpreter the running one is a venv of (or the running one): a venv is made from it."""
    for candidate in (os.path.join(sys.base_exec_prefix, "bin", "python%d.%d" % sys.version_info[:2]),
                      getattr(sys, "_base_executable", None), sys.executable):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def site_folders():
    """The site-packages of the running environment (with its .pth files: NumPy, the editable install)."""
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        folders.append(site.getusersitepackages())
    return [f for f in folders if os.path.isdir(f)]


def make_venv(profile, folder):
    """A venv in ``folder`` whose Python simulates ``profile`` ("macos" or "windows") in every process it runs;
    returns the path of its python. Checks that a ``python -I`` of it says the profile's sys.platform and
    imports NumPy and the grader; if this checkout is not installed in the running environment, a .pth file
    puts it on the venv's path instead (as an editable install would)."""
    if profile not in PROFILES:
        raise ValueError(f"no profile {profile!r}: {PROFILES}")
    subprocess.run([base_python(), "-m", "venv", "--without-pip", folder], check=True, capture_output=True)
    python = os.path.join(folder, "bin", "python")
    packages = os.path.join(folder, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    target = os.path.join(packages, PACKAGE)
    os.makedirs(target)
    with open(os.path.join(target, "__init__.py"), "w") as f:
        f.write('"""The profiles of mytorch\'s platform kit (copied from tests/platforms)."""\n')
    for name in MODULES:
        shutil.copyfile(os.path.join(HERE, name), os.path.join(target, name))
    with open(os.path.join(packages, "sitecustomize.py"), "w") as f:
        f.write(SITECUSTOMIZE.format(profile=profile, folders=site_folders(), package=PACKAGE))
    compileall.compile_dir(packages, quiet=1)       # read under -B too: no process compiles them again
    check = ("import sys, numpy, autograder; print(sys.platform); print(autograder.__file__)")
    probe = subprocess.run([python, "-I", "-B", "-c", check], cwd=folder, capture_output=True, text=True, env={})
    if probe.returncode != 0 and "No module named 'autograder'" in probe.stderr:
        with open(os.path.join(packages, "mytorch-checkout.pth"), "w") as f:
            f.write(REPO + "\n")
        probe = subprocess.run([python, "-I", "-B", "-c", check], cwd=folder, capture_output=True, text=True,
                               env={})
    lines = probe.stdout.split()
    if probe.returncode != 0 or not lines or lines[0] != PLATFORMS[profile]:
        raise RuntimeError(f"the {profile} venv in {folder} does not work:\n{probe.stdout}{probe.stderr}")
    return python


_made, _making = {}, threading.Lock()


def profile_python(profile, tmp_path_factory):
    """The python of a venv simulating ``profile``, made once per test process (a session's tmp_path_factory)."""
    with _making:
        key = (profile, str(tmp_path_factory.getbasetemp()))
        if key not in _made:
            _made[key] = make_venv(profile, str(tmp_path_factory.mktemp(f"python-{profile}")))
        return _made[key]


def minimal_env(home, **extra):
    """The few variables a student's shell would pass: PATH, HOME, LANG, and TMPDIR in ``home`` (so what the
    grader leaves in its temporary folder stays in the test's folder)."""
    temporary = os.path.join(str(home), "tmp")
    os.makedirs(temporary, exist_ok=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": temporary}
    env.update(extra)
    return env
