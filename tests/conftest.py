"""Shared helpers: the cells under test, random data, and the optional PyTorch oracle."""
import atexit
import compileall
import gc
import importlib.util
import os
import shutil
import sys
import tempfile

# One BLAS and one OpenMP thread in every process of the run, set before NumPy (or PyTorch) first loads: the
# xdist workers and every process a test starts inherit it. Left to themselves, OpenBLAS and OpenMP start a
# thread per core in each of the workers (two more than the cores) and spin them after every call, on arrays a
# thread cannot speed up: a fifth of the CPU of the numerical tests, taken from the other workers. A variable
# already set is kept.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
# Gradescope mode switches to the user `student` where the machine has one (a teaching server, Gradescope's own
# image), and then makes the grader's folders root's alone: in a test grading from this checkout, with a Python
# under a folder that user cannot enter, that would grade 0 and lock the checkout for the tests after it. So the
# tests name a user no machine has; test_run_as grades Gradescope mode as a sandbox user it makes, with a Python
# that user can run.
os.environ.setdefault("MYTORCH_GRADER_USER", "mytorch-tests-no-such-user")

import numpy as np  # noqa: E402  (after the threads are set)
import pytest  # noqa: E402

from mytorch.nn import CELLS  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0)"
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason=NO_TORCH)


def lazy_torch():
    """PyTorch, imported when first used (``importlib.util.LazyLoader``). Every worker imports every test module
    to collect it, and PyTorch's import costs 3 s of CPU here: with the tests that use it in one xdist group
    (``pytest_collection_modifyitems``), one worker pays it instead of each. What a test module holds is a
    ``_LazyTorch``, not the lazy module itself: collection asks every name of a test module whether it is a
    unittest class (``issubclass`` reads its ``__bases__``), and a lazy module imports PyTorch to answer."""
    if "torch" not in sys.modules:
        spec = importlib.util.find_spec("torch")
        spec.loader = importlib.util.LazyLoader(spec.loader)
        torch = importlib.util.module_from_spec(spec)
        sys.modules["torch"] = torch
        spec.loader.exec_module(torch)
    return _LazyTorch()


class _LazyTorch:
    """PyTorch's names (``torch.tensor``, ``torch.nn``...), each looked up in PyTorch when used; what is asked of
    any object (its dunder names) is not PyTorch's, so asking imports nothing."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(sys.modules["torch"], name)


def uses_torch(item):
    """True for a test marked ``needs_torch``."""
    return any(mark.kwargs.get("reason") == NO_TORCH for mark in item.iter_markers("skipif"))


# float64 centred differences on a correct backward reach ~1e-8 at worst; the bar the project promises
GRADCHECK_TOL = 1e-6

# (N or None for unbatched, I, H): unbatched, N=1, N>1, I != H both ways, I == H
SHAPES = [(None, 3, 5), (1, 3, 5), (4, 3, 5), (2, 6, 2), (3, 4, 4)]


def shape_id(shape):
    n, i, h = shape
    return f"{'unbatched' if n is None else f'N{n}'}-I{i}-H{h}"


def random_x(rng, n, width):
    return rng.standard_normal(width if n is None else (n, width))


def random_state(cell, rng, n):
    """A random state of the right structure for ``cell`` (array, or tuple for two-state cells)."""
    parts = tuple(random_x(rng, n, w) for w in cell.state_widths)
    return parts[0] if len(parts) == 1 else parts


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(params=CELLS, ids=[c.__name__ for c in CELLS])
def cell_class(request):
    return request.param


@pytest.fixture(scope="session")
def built_handout(tmp_path_factory):
    """The student handout built once per test process, shared by the tests that only read it:
    ``(folder, handin archive, regions)`` as ``handout.build.build_handout`` returns them."""
    from handout import build
    return build.build_handout(str(tmp_path_factory.mktemp("handout") / "handout"))


@pytest.fixture(scope="session")
def notebook_cache(tmp_path_factory):
    """Where this test process keeps the notebooks it executed (``handout.site.cache_executed``), so that the
    course site built later in the same process shows them without executing them again; None without
    jupyter-cache (the site extra). MYTORCH_SITE_CACHE names one to keep between sessions."""
    if importlib.util.find_spec("jupyter_cache") is None:
        return None
    return os.environ.get("MYTORCH_SITE_CACHE") or str(tmp_path_factory.mktemp("execution-cache"))


# fixtures worth building once: a campaign of attacks run at once, a built handout, the course site (and the
# pages a browser read from it), a class graded in batch
SHARED_FIXTURES = {"campaign", "built", "site", "crawl", "graded_class", "hostile_class"}


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILED_PACKAGES = ("autograder", "mytorch", "handout")


def pytest_configure(config):
    """Compile the project's packages to bytecode once, before any test starts a grader. The suite starts
    hundreds of Pythons that import them; where PYTHONDONTWRITEBYTECODE is set (as in many containers, this
    project's machine included), none of them writes the bytecode it compiled, and each compiled the grader's
    thirty modules again: 0.2 s of CPU a grade, a fifth of the CPU of test_autograder.py. Python reads bytecode it finds
    even when told not to write it; an instructor's first run of the grader leaves the same files."""
    if "MYTORCH_TESTS_CONFIG" not in os.environ:                 # batch's secret: in the suite's folder, not ~
        os.environ["MYTORCH_TESTS_CONFIG"] = os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="mytorch-config-")
        atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], True)
    if not hasattr(config, "workerinput"):                        # the controller alone, before the workers
        for package in COMPILED_PACKAGES:
            compileall.compile_dir(os.path.join(REPO, package), quiet=1)
        _rewrite_test_modules(config)


def _rewrite_test_modules(config):
    """pytest's own bytecode of the test modules (their asserts rewritten), written once before the workers
    start. pytest keeps it only where bytecode may be written, and reads it wherever it is: without it every
    worker rewrote every test module as it collected them, 2 s of CPU each. A pyc pytest would take as it is
    (its source's time and size unchanged) is left alone: rewriting them all took the controller 2 s before
    any worker could start. A pytest without these internals (or run with --assert=plain) is left to do as it does."""
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    import pathlib
    tests = pathlib.Path(REPO, "tests")
    for source in sorted(tests.glob("test_*.py")) + [tests / "conftest.py"]:
        try:
            cache = get_cache_dir(source)
            cache.mkdir(exist_ok=True)
            pyc = cache / (source.name[:-3] + PYC_TAIL)
            if _read_pyc(source, pyc) is None:                     # None: missing, stale or unreadable
                _write_pyc(state, *_rewrite_test(source, config)[::-1], pyc)
        except (OSError, SyntaxError, TypeError, ValueError):     # a test module's own error shows when it is collected
            return


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers more than the cores this process may use. Many tests wait (for a part to time
    out, a browser, a grace period after an attack), which would leave a core idle with one worker per core:
    on two cores, a third worker took the whole run from 5 min 56 s to 4 min 44 s (CPU busy 90% instead of
    77%). Since the suite's CPU shrank, a fourth gains as much again: three alternating pairs of runs on two
    cores, 3:59, 4:13, 4:09 with four workers against 4:30, 4:41, 4:24 with three."""
    return len(os.sched_getaffinity(0)) + 2


@pytest.hookimpl(tryfirst=True)                   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``), the tests of a module that share one of SHARED_FIXTURES run in
    one worker, so it is built once, and so do all that use ``notebook_cache`` (the notebooks executed, then
    the site that shows them: collection order runs them in that order); every other test goes to whichever
    worker is free. The long units of work are handed out first, so that the many short tests fill in around
    them instead of one long unit running alone at the end (a test that waits 10 s for a timeout, handed out
    last, left both cores idle for those 10 s): pytest-xdist hands out the groups first, those of the most
    tests first (its --loadscope-reorder), then the tests of no group in the order sorted here, the mutation
    test first. The tests that wait (and the class batch, which waits out timeouts) run in one worker, one
    after another, while the two others keep both cores busy."""
    rank = {}                                                     # nodeid -> 0, 1, 2: before every other test
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "notebook_cache" in fixtures:
            item.add_marker(pytest.mark.xdist_group("executed-notebooks"))
            rank[item.nodeid] = 0
        elif item.get_closest_marker("mutants") is not None:
            rank[item.nodeid] = 1
        elif item.get_closest_marker("waits") is not None:          # one after another: the others use the cores
            item.add_marker(pytest.mark.xdist_group("waits"))
            rank[item.nodeid] = 1
        elif SHARED_FIXTURES & fixtures:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
            rank[item.nodeid] = 2
        elif uses_torch(item):
            item.add_marker(pytest.mark.xdist_group("torch"))
            rank[item.nodeid] = 2
    items.sort(key=lambda item: rank.get(item.nodeid, 3))        # stable: each group keeps its order


def pytest_collection_finish(session):
    """What collection imported (NumPy, PyTorch, every test module) lives as long as the worker: frozen out of
    the garbage collector's view, so that each full collection during the run does not walk it again."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", params=["macos", "windows"])
def platform_python(request, tmp_path_factory):
    """The python of a venv that simulates macOS or Windows in every process it runs (tests/platforms), made
    once per test process; ``request.param`` names the profile."""
    from tests.platforms import profile_python
    return profile_python(request.param, tmp_path_factory)
