"""Build the course website: ``python -m handout site --out DIR [--config FILE] [--solutions]``.

The site is made FROM a handout build, never from a second stripping pipeline:

1. ``build_handout`` writes the student version (or, with ``--solutions``, the instructor's) to a work folder
   beside ``DIR``; its leak check runs there as always.
2. Every notebook of that build is shown as the student receives it (the TODO cells, no solution code), with
   the outputs it gives once solved: the instructor's notebook of the same name is executed with the
   solution ``mytorch`` (cached by jupyter-cache, keyed by the notebooks' code and by the library's
   sources), and its outputs are attached to the build's cells of the same cell id. A cell the build
   replaced by an exercise gets no outputs. Marker comments are dropped from what is shown.
3. Sphinx with myst-nb renders the build's assignment (one page per section), the notebooks, the API
   reference (autodoc, importing the build's own ``mytorch``), the grader's guide and a landing page, with
   the Furo theme (readable on a phone, search included) and MathJax 3 copied from the ``django-static-mathjax``
   package into the site: nothing is fetched from another host when a page is viewed, and the site works
   from a plain folder (``file://``).
4. The leak check of ``handout.leaks`` runs again on the generated site, on the text of every page (code
   highlighting split into spans is joined back first): any solution line in it fails the build.
"""
import atexit
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from handout import sections as sections_of
from handout.build import (
    REPO,
    BuildError,
    build_handout,
    check_no_leaks,
    check_no_markers,
    load,
    notebook_title,
    staged,
)
from handout.markers import BEGIN, END

PAGES = os.path.join(REPO, "handout", "site_pages")
MATHJAX = "tex-svg-full.js"        # SVG output: glyphs are paths, so no web font has to load over file://
EXECUTION_TIMEOUT = 300            # seconds per cell; the slowest cell here takes a few seconds
# A kernel's BLAS gets one thread unless the environment says otherwise: the notebooks' matrices are small and
# two kernels run at once, so a thread pool only spins (07_training: 8.0 s and 7.1 s of CPU with one thread,
# 9.8 s and 14.1 s with a pool, on two cores)
KERNEL_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
KERNEL_STARTS = 3                  # tries to start a notebook's kernel before the build fails
NEEDS_CALL = re.compile(r"^needs\(", re.MULTILINE)


def _default_cache():
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "mytorch", "site")


def _library_hash(root):
    """A digest of what executed outputs depend on besides each notebook itself (which the cache hashes): every
    .py file of ``root``'s mytorch and autograder, and every file beside the notebooks (needs.py, diagrams.py,
    the texts in data/)."""
    digest = hashlib.sha256()
    for package, wanted in (("mytorch", ".py"), ("autograder", ".py"), ("notebooks", "")):
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints"))
            for name in sorted(f for f in files if f.endswith(wanted) and not f.endswith(".ipynb")):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:16]


def mathjax_script():
    """The path of MathJax 3's single-file TeX-to-SVG bundle, from the ``django-static-mathjax`` package."""
    try:
        import mathjax  # django-static-mathjax: MathJax's distribution, as is
    except ImportError:
        raise BuildError("MathJax is missing: pip install -e '.[site]'") from None
    path = os.path.join(os.path.dirname(mathjax.__file__), "static", "mathjax", "es5", MATHJAX)
    if not os.path.isfile(path):
        raise BuildError(f"the installed mathjax package has no es5/{MATHJAX}")
    return path


# ---------------------------------------------------------------------------------------------------- notebooks

def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def execute_notebook(path, library_root):
    """``path`` executed top to bottom in a fresh kernel that imports ``library_root``'s mytorch; a cell that
    raises fails the build."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    env = {**KERNEL_THREADS, **os.environ,
           "PYTHONPATH": os.pathsep.join([library_root, os.environ.get("PYTHONPATH", "")]),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    said = ""
    for _ in range(KERNEL_STARTS):
        notebook = nbformat.read(path, as_version=4)
        # a busy machine may deliver a cell's last outputs (a figure) seconds after the cell ended: wait for
        # them rather than drop them (nbclient's default: 4 s, then silently without them)
        with tempfile.TemporaryDirectory(prefix="kernel-") as sockets, \
                tempfile.TemporaryFile() as stderr:  # the kernel's own chatter, shown only if it fails to start
            client = NotebookClient(notebook, timeout=EXECUTION_TIMEOUT, km=_kernel_manager(sockets),
                                    record_timing=False, iopub_timeout=60, raise_on_iopub_timeout=True,
                                    resources={"metadata": {"path": os.path.dirname(path)}})
            try:
                client.execute(env=env, stderr=stderr)
            except CellExecutionError as error:
                raise BuildError(f"{os.path.basename(path)} does not execute with the solution:\n{error}") from None
            except RuntimeError as error:
                if not _kernel_failed_to_start(error):
                    raise
                atexit.unregister(client._cleanup_kernel)   # nbclient cleaned up already; its hook would fail
                stderr.seek(0)
                said = f"{error}\n{stderr.read()[-2000:].decode(errors='replace')}"
                continue
        return notebook
    raise BuildError(f"{os.path.basename(path)}: a kernel failed to start {KERNEL_STARTS} times; the last said:\n"
                     f"{said}")


def _kernel_manager(sockets):
    """A manager for a python3 kernel that talks over Unix sockets in the fresh folder ``sockets``.

    Over TCP, each kernel's five ports are chosen free and then bound by the kernel later, so two kernels
    starting at once (two builds, or the tests' workers) can pick the same port: one dies, or its client
    waits on the other's. Socket files in a folder of its own cannot be taken by another kernel."""
    from jupyter_client.manager import AsyncKernelManager
    return AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))


def _kernel_failed_to_start(error):
    """Whether nbclient's ``RuntimeError`` says the kernel died or went silent before its first reply: a
    start-up failure, not the notebook's."""
    return any(words in str(error) for words in ("before replying to kernel_info", "respond to heartbeats",
                                                 "respond in"))


def _cache(cache_dir, library_root):
    """The jupyter-cache of notebooks executed with ``library_root``'s library (a folder per library digest)."""
    from jupyter_cache import get_cache
    return get_cache(os.path.join(cache_dir, _library_hash(library_root)))


def cache_executed(path, notebook, library_root, cache_dir):
    """Keep ``notebook`` (what ``execute_notebook(path, library_root)`` gave) where ``execute_notebooks`` looks
    first, so that a build with the same ``cache_dir`` does not execute it again."""
    from jupyter_cache.base import CacheBundleIn
    _cache(cache_dir, library_root).cache_notebook_bundle(CacheBundleIn(notebook, path), check_validity=False,
                                                          overwrite=True)


def execute_notebooks(paths, library_root, cache_dir, workers=None):
    """{path: the notebook executed}, each in a fresh kernel importing ``library_root``'s mytorch.

    Executed notebooks are cached by jupyter-cache in ``cache_dir``/<digest of the library>: a rebuild with
    unchanged notebooks and library executes nothing. Notebooks not cached yet run ``workers`` at a time
    (default: two, or one on a single core)."""
    import concurrent.futures

    import nbformat

    cache = _cache(cache_dir, library_root)
    done, missing = {}, []
    for path in paths:
        try:
            done[path] = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))[1]
        except KeyError:                                # not cached yet
            missing.append(path)
    workers = workers or min(2, os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for path, notebook in zip(missing, pool.map(lambda p: execute_notebook(p, library_root), missing)):
            cache_executed(path, notebook, library_root, cache_dir)
            done[path] = notebook
    return done


NEEDS_SAID = re.compile(r"^(this notebook|this section)? ?runs parts .*\n?", re.MULTILINE)


def _without_needs(output):
    """A stream output without the lines needs(...) printed."""
    text = "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
    output["text"] = NEEDS_SAID.sub("", text)
    return output


def shown_notebook(build_path, executed, target, solutions=False):
    """The build's notebook ``build_path`` with the outputs of ``executed`` attached by cell id, written to
    ``target`` for myst-nb to render as is (execution off). With ``solutions`` each code cell shows the
    executed (instructor's) source. Marker comment lines are never shown."""
    with open(build_path, encoding="utf-8") as f:
        notebook = json.load(f)
    outputs = {cell.get("id"): cell for cell in executed.cells if cell.cell_type == "code"}
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        ran = outputs.get(cell.get("id"))
        lines = (ran.source if solutions and ran is not None else _source(cell)).split("\n")
        cell["source"] = "\n".join(line for line in lines if not (BEGIN.match(line) or END.match(line)))
        if ran is not None:
            # what needs(...) prints lists every part the instructor's run had, not the course's: not shown (a
            # section's other printed lines are)
            says_needs = NEEDS_CALL.search(cell["source"]) is not None
            cell["outputs"] = [_without_needs(dict(o)) if says_needs and o.get("output_type") == "stream" else dict(o)
                               for o in ran.outputs]
            cell["outputs"] = [o for o in cell["outputs"] if not (o.get("output_type") == "stream" and not o["text"])]
            cell["execution_count"] = ran.execution_count
    notebook.setdefault("metadata", {})["mystnb"] = {"execution_mode": "off"}
    with open(target, "w", encoding="utf-8") as f:
        json.dump(notebook, f, indent=1, ensure_ascii=False)
    return notebook


# -------------------------------------------------------------------------------------------------------- pages

def _title(markdown_path):
    with open(markdown_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# "):
                return line[2:].strip()
    return os.path.basename(markdown_path)


def grader_examples(build, section):
    """Real grader output for the guide, made at build time: the build's grader run on the build's untouched
    section ``section``, and two messages of the grader's own comparison."""
    import numpy as np

    from autograder.diagnosis import compare
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((4, 3))
    examples = {}
    for key, actual in (("transposed", weight.T.copy()), ("values", weight * (1 + (np.arange(3) == 1)))):
        verdict = compare.compare("grads['weight_ih']", actual, weight, "numpy.ndarray of dtype float64")
        hints = "".join(f"\n  hint: {text}" for _, text in verdict.hints)
        examples[key] = verdict.message + hints
    env = dict(os.environ, NO_COLOR="1", COLUMNS="80", PYTHONPATH=build)
    run = subprocess.run([sys.executable, "-m", "autograder", section], cwd=build, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=300)
    if "Total" not in run.stdout:
        raise BuildError(f"the handout's grader gave no report for section {section}:\n{run.stdout[-2000:]}")
    examples["untouched"] = run.stdout.rstrip()
    return examples


def _fill(template, values):
    return re.sub(r"\{\{ (\w+) \}\}", lambda m: values[m.group(1)], template)


def write_sources(build, src, solutions, executed_by_name, notebooks, course):
    """The Sphinx source folder ``src``: conf.py, pages, the build's assignment and notebooks, MathJax."""
    os.makedirs(os.path.join(src, "_static", "mathjax"))
    shutil.copy(mathjax_script(), os.path.join(src, "_static", "mathjax", MATHJAX))
    for name in ("conf.py", "api.md", "custom.css"):
        target = os.path.join(src, "_static" if name.endswith(".css") else "", name)
        shutil.copy(os.path.join(PAGES, name), target)

    assignment = os.path.join(build, "assignment")
    shutil.copytree(assignment, os.path.join(src, "assignment"))
    sections = sorted(n for n in os.listdir(assignment) if n.endswith(".md") and n != "README.md")
    notebook_names = sorted(notebooks)

    section_rows = "\n".join(f"- [{_title(os.path.join(assignment, n))}](assignment/{n})" for n in sections)
    notebook_rows = "\n".join(f"- [{notebooks[n]}](notebooks/{n})" for n in notebook_names)
    backward = [p.number for p in course.parts() if p.kind == "backward"] or [p.number for p in course.parts()]
    values = {
        "title": course.title,
        "what": sections_of.course_work(course),
        "example_part": backward[0],
        "example_section": backward[0].split(".")[0],
        "edition": "the instructor's edition, with the solutions" if solutions else "the student edition",
        "sections": section_rows or "- (no section chosen)",
        "notebooks": notebook_rows or "- (no notebook)",
        "section_toc": "\n".join(f"assignment/{n[:-3]}" for n in sections),
        "notebook_toc": "\n".join(f"notebooks/{n[:-6]}" for n in notebook_names),
    }
    values.update(grader_examples(build, sections[0].split("-")[0] if sections else "1"))
    for name in ("index.md", "grader.md"):
        with open(os.path.join(PAGES, name), encoding="utf-8") as f:
            text = _fill(sections_of.conditionals(f.read(), course), values)
        with open(os.path.join(src, name), "w", encoding="utf-8") as f:
            f.write(text)

    os.makedirs(os.path.join(src, "notebooks"))
    for name in notebook_names:
        shown_notebook(os.path.join(build, "notebooks", name), executed_by_name[name],
                       os.path.join(src, "notebooks", name), solutions)


# ---------------------------------------------------------------------------------------------------- the build

def _html_text(path):
    """The visible text of an HTML page, one source line per line (code highlighting spans joined back)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def check_site_leaks(sources, site):
    """The leak check of ``handout.leaks`` on the site: the raw files and the text of every page."""
    check_no_leaks(sources, site)
    with tempfile.TemporaryDirectory() as text_root:
        for folder, _, files in os.walk(site):
            for name in files:
                if name.endswith(".html"):
                    rel = os.path.relpath(os.path.join(folder, name), site)
                    target = os.path.join(text_root, rel + ".txt")
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "w", encoding="utf-8") as f:
                        f.write(_html_text(os.path.join(folder, name)))
        check_no_leaks(sources, text_root)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _solution_sources(build):
    """The instructor's files whose solution regions the handout build ``build`` hid: every .py file of
    mytorch the build changed, and every notebook it holds. (A course that leaves a section out hands its
    code out working, unchanged: its lines are the course's choice, not a leak.)"""
    found = []
    for folder, dirs, files in os.walk(os.path.join(REPO, "mytorch")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(n for n in files if n.endswith(".py")):
            path = os.path.join(folder, name)
            shipped = os.path.join(build, os.path.relpath(path, REPO))
            if not os.path.isfile(shipped) or _read(shipped) != _read(path):
                found.append(path)
    notebooks = os.path.join(build, "notebooks")
    found += [os.path.join(REPO, "notebooks", n) for n in sorted(os.listdir(notebooks))
              if n.endswith(".ipynb") and os.path.isfile(os.path.join(REPO, "notebooks", n))]
    return found


def build_site(out, config=None, solutions=False, cache_dir=None, keep_work=False, force=False):
    """The course site in ``out`` (``out/index.html``); returns (out, seconds spent executing notebooks).

    ``out`` is replaced only if it is empty or an earlier site (``force``: whatever it holds), and only once the
    site is whole (``staged``): a failed build leaves ``out`` as it was. The handout build and the Sphinx
    sources are made beside it, and kept as ``out + '.work'`` with ``keep_work``."""
    course = load(config)
    out = os.path.abspath(out)
    with staged(out, "site", force) as target:
        work = target + ".work"
        os.makedirs(work)
        execution_seconds = _build_site(target, work, course, config, solutions, cache_dir)
        if keep_work:
            if os.path.lexists(out + ".work"):
                shutil.rmtree(out + ".work")
            os.rename(work, out + ".work")
    return out, execution_seconds


def _build_site(out, work, course, config, solutions, cache_dir):
    import time
    build = build_handout(os.path.join(work, "handout"), config, solutions=solutions)[0]

    started = time.monotonic()
    notebooks, solved = {}, {}
    for name in sorted(os.listdir(os.path.join(build, "notebooks"))):
        if not name.endswith(".ipynb"):
            continue
        solved[name] = os.path.join(REPO, "notebooks", name)      # the instructor's notebook of that name
        if not os.path.isfile(solved[name]):                     # one only the build has: run it as it is
            solved[name] = os.path.join(build, "notebooks", name)
        with open(os.path.join(build, "notebooks", name), encoding="utf-8") as f:
            notebooks[name] = notebook_title(json.load(f))
    ran = execute_notebooks(list(solved.values()), REPO, cache_dir or _default_cache())
    executed = {name: ran[path] for name, path in solved.items()}
    execution_seconds = time.monotonic() - started

    src = os.path.join(work, "src")
    write_sources(build, src, solutions, executed, notebooks, course)
    env = dict(os.environ, PYTHONPATH=build, MYTORCH_SITE_SOLUTIONS="1" if solutions else "0",
               MYTORCH_SITE_TITLE=course.title)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-j", "1",
               "-d", os.path.join(work, "doctrees"), src, out]
    result = subprocess.run(command, cwd=build, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"Sphinx failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    for leftover in (".buildinfo", ".buildinfo.bak"):
        if os.path.exists(os.path.join(out, leftover)):
            os.remove(os.path.join(out, leftover))
    sources_folder = os.path.join(out, "_sources")      # left empty: pages' sources are not published
    if os.path.isdir(sources_folder) and not os.listdir(sources_folder):
        os.rmdir(sources_folder)

    check_no_markers(out)                              # in either edition: markers are never shown
    if not solutions:
        check_site_leaks(_solution_sources(build), out)
    return execution_seconds
