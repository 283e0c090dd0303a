"""The course site (``python -m handout site``), built once per session and read in a real headless browser.

Debian's ``chromium`` is driven by playwright (``executable_path``; playwright never downloads a browser
here). Every page of the site is opened from the plain folder (``file://``) and must load with no console
error, typeset every formula, load every image, resolve every internal link and request nothing from any
other host. Screenshots of the landing page, a section and a notebook at phone and desktop widths are saved
beside the site, in ``screenshots/``.

Without a browser or the site extra these tests skip, saying what is missing; under ``CI=true`` they fail
instead, so a CI run cannot pass without them.
"""
import html
import importlib.util
import os
import re
import shutil
import time
import urllib.parse

import pytest

from handout.build import BuildError

pytestmark = pytest.mark.slow                  # builds the course site and drives it in a headless browser

ON_CI = os.environ.get("CI") == "true"
SITE_PACKAGES = ("sphinx", "myst_nb", "furo", "mathjax", "jupyter_cache", "nbclient", "ipykernel")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
SHOTS = [("index.html", "landing"), ("assignment/2-gru-cell.html", "section"),
         ("notebooks/02_gru_cell.html", "notebook")]


def find_chromium():
    """Debian's chromium (or another Chromium named by MYTORCH_CHROMIUM), or None."""
    for candidate in (os.environ.get("MYTORCH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        path = candidate and shutil.which(candidate)
        if path:
            return path
    return None


def missing():
    """What this machine lacks for the browser tests, as a sentence; None when nothing is missing."""
    absent = [name for name in SITE_PACKAGES + ("playwright",) if importlib.util.find_spec(name) is None]
    if absent:
        return f"the site extra is not installed ({', '.join(absent)} missing): pip install -e '.[test,site]'"
    if find_chromium() is None:
        return "no Chromium on this machine: apt-get install chromium (as root) or set MYTORCH_CHROMIUM"
    return None


def test_ci_runs_the_browser_tests():
    """Under CI=true the browser tests must run, not skip."""
    if not ON_CI:
        pytest.skip("CI is not set: the browser tests may skip here when no browser can be had")
    assert missing() is None, missing()


@pytest.fixture(scope="session")
def execution_cache(notebook_cache):
    """Where the session's site builds keep their executed notebooks: those test_notebooks.py executed in this
    process are there already (see ``notebook_cache``)."""
    reason = missing()
    if reason:
        (pytest.fail if ON_CI else pytest.skip)(reason)
    return notebook_cache


@pytest.fixture(scope="session")
def site(tmp_path_factory, execution_cache):
    """One student site for the whole session: (site folder, build seconds)."""
    from handout.site import build_site
    root = tmp_path_factory.mktemp("course-site")
    started = time.monotonic()
    out, _ = build_site(str(root / "site"), cache_dir=execution_cache)
    return out, time.monotonic() - started


def _url(site_dir, rel):
    return "file://" + urllib.parse.quote(os.path.join(site_dir, rel))


def _pages(site_dir):
    return sorted(os.path.relpath(os.path.join(folder, name), site_dir)
                  for folder, _, names in os.walk(site_dir) for name in names if name.endswith(".html"))


# In the page: MathJax done, then what the checks need, read from the DOM.
READ_PAGE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const text = (root) => {
    const copy = root.cloneNode(true);
    copy.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
    return copy.innerText;
  };
  return {
    math: [...document.querySelectorAll('.math')].map(e => ({
      typeset: e.querySelector('mjx-container') !== null, source: e.textContent.slice(0, 80)})),
    errors: [...document.querySelectorAll('mjx-merror, merror')].map(e => e.textContent.slice(0, 80)),
    text: text(document.querySelector('article') || document.body),
    code: [...document.querySelectorAll('pre')].map(e => e.textContent).join(String.fromCharCode(10)),
    images: [...document.images].map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  };
}"""


@pytest.fixture(scope="session")
def crawl(site):
    """Every page of the site opened in Chromium: {page: what it showed}, plus the screenshots."""
    from playwright.sync_api import sync_playwright
    site_dir, _ = site
    root = "file://" + urllib.parse.quote(site_dir) + "/"
    shots = os.path.join(os.path.dirname(site_dir), "screenshots")
    os.makedirs(shots, exist_ok=True)
    seen = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), headless=True, args=BROWSER_FLAGS)
        try:
            # one tab goes from page to page, as a reader does (a new tab per page costs a new renderer): what
            # the tab reports is the current page's, each page read once MathJax is done with it
            page = browser.new_context(viewport=DESKTOP).new_page()
            record = {}
            page.on("console", lambda m: m.type == "error" and record["console"].append(m.text))
            page.on("pageerror", lambda e: record["console"].append(str(e)))
            page.on("requestfailed", lambda q: record["console"].append(f"failed: {q.url}"))
            page.on("request", lambda q: record["requests"].append(q.url))
            for rel in _pages(site_dir):
                record = seen[rel] = {"console": [], "requests": []}
                page.goto(_url(site_dir, rel), wait_until="load")
                record.update(page.evaluate(READ_PAGE))
            page.close()
            for width, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
                context = browser.new_context(viewport=viewport, is_mobile=width == "phone",
                                              has_touch=width == "phone", device_scale_factor=1)
                page = context.new_page()
                for rel, name in SHOTS:
                    page.goto(_url(site_dir, rel), wait_until="load")
                    page.evaluate("async () => { if (window.MathJax) await MathJax.startup.promise; }")
                    page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"))
                # a table of formulas (section 2's variables) on a phone: each formula on one line
                page.goto(_url(site_dir, "assignment/2-gru-cell.html"), wait_until="load")
                seen[f"table-{width}"] = _table_heights(page, os.path.join(shots, f"table-{width}.png"))
                context.close()
            # search: the index ships with the site and answers from the plain folder
            page = browser.new_page()
            page.goto(_url(site_dir, "search.html") + "?q=gradient", wait_until="load")
            page.wait_for_selector("#search-results li", timeout=30000)
            seen["search-hits"] = page.locator("#search-results li").count()
        finally:
            browser.close()
    return {"root": root, "pages": seen, "shots": shots, "site": site_dir}


def _table_heights(page, screenshot):
    """The heights of the formulas in the page's first table that holds any (after MathJax), and its picture."""
    page.evaluate("async () => { await MathJax.startup.promise; }")
    table = page.locator("table:has(mjx-container)").first
    table.scroll_into_view_if_needed()
    table.screenshot(path=screenshot)
    return table.evaluate("t => [...t.querySelectorAll('td mjx-container')].map(m => m.getBoundingClientRect().height)")


def _content_pages(crawl):
    return {rel: r for rel, r in crawl["pages"].items() if rel.endswith(".html")}


def test_site_holds_every_page(site):
    site_dir, seconds = site
    pages = _pages(site_dir)
    print(f"site built in {seconds:.0f} s, {len(pages)} pages")
    for rel in ("index.html", "api.html", "grader.html", "search.html", "assignment/README.html",
                "assignment/2-gru-cell.html", "assignment/8-ctc.html", "notebooks/02_gru_cell.html",
                "notebooks/10_making_it_fast.html", "notebooks/11_character_model.html"):
        assert rel in pages
    with open(os.path.join(site_dir, "index.html"), encoding="utf-8") as f:
        landing = f.read()
    assert "autograder" in landing and "GRUCell" in landing and "handout.zip" in landing


def test_every_page_loads_without_console_errors(crawl):
    problems = {rel: r["console"] for rel, r in _content_pages(crawl).items() if r["console"]}
    assert not problems


def test_every_formula_is_typeset(crawl):
    pages = _content_pages(crawl)
    untypeset = {rel: [m["source"] for m in r["math"] if not m["typeset"]] for rel, r in pages.items()}
    assert not {rel: m for rel, m in untypeset.items() if m}
    assert not {rel: r["errors"] for rel, r in pages.items() if r["errors"]}
    literal = {rel: re.findall(r".{0,30}(?:\$\$|\\begin\{|\\end\{|\$\\).{0,30}", r["text"])
               for rel, r in pages.items()}
    assert not {rel: found for rel, found in literal.items() if found}
    # the pages that carry math really have it
    for rel in ("index.html", "assignment/2-gru-cell.html", "notebooks/02_gru_cell.html", "grader.html"):
        assert len(pages[rel]["math"]) >= 1, rel
    assert len(pages["notebooks/02_gru_cell.html"]["math"]) > 20


def test_every_image_loads_and_notebooks_show_their_figures(crawl):
    pages = _content_pages(crawl)
    broken = {rel: [i["src"] for i in r["images"] if not i["ok"]] for rel, r in pages.items()}
    assert not {rel: b for rel, b in broken.items() if b}
    for rel in pages:
        if rel.startswith("notebooks/"):
            assert any("_images/" in i["src"] for i in pages[rel]["images"]), f"{rel} shows no figure"


def test_every_internal_link_resolves(crawl):
    site_dir, root = crawl["site"], crawl["root"]
    ids = {}
    broken = []
    for rel, record in _content_pages(crawl).items():
        for href in record["links"]:
            if not href.startswith("file://"):
                continue
            assert href.startswith(root), f"{rel} links outside the site: {href}"
            path, _, fragment = urllib.parse.unquote(href[len(root):]).partition("#")
            target = os.path.join(site_dir, path)
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not os.path.isfile(target):
                broken.append(f"{rel} -> {path}")
                continue
            if fragment and target.endswith(".html"):
                if target not in ids:
                    with open(target, encoding="utf-8") as f:
                        ids[target] = set(re.findall(r'\bid="([^"]+)"', f.read()))
                if fragment not in ids[target]:
                    broken.append(f"{rel} -> {path}#{fragment}")
    assert not broken


def test_no_page_requests_anything_off_the_site(crawl):
    root = crawl["root"]
    outside = {rel: [u for u in r["requests"] if not u.startswith((root, "data:", "blob:", "about:"))]
               for rel, r in _content_pages(crawl).items()}
    assert not {rel: urls for rel, urls in outside.items() if urls}
    mathjax = [u for r in _content_pages(crawl).values() for u in r["requests"] if "mathjax" in u]
    assert mathjax and all(u.startswith(root + "_static/mathjax/") for u in mathjax)


def test_search_finds_pages(crawl):
    assert crawl["pages"]["search-hits"] >= 3


def test_tables_keep_each_formula_on_one_line(crawl):
    for width in ("phone", "desktop"):
        heights = crawl["pages"][f"table-{width}"]
        assert len(heights) >= 10
        assert max(heights) < 40, f"a formula in section 2's table wraps at {width} width: {max(heights)} px"


def test_screenshots_saved(crawl):
    for _, name in SHOTS:
        for width in ("phone", "desktop"):
            path = os.path.join(crawl["shots"], f"{name}-{width}.png")
            assert os.path.getsize(path) > 5000, path


def test_notebooks_show_the_todo_with_the_outputs_of_the_solution(crawl):
    page = _content_pages(crawl)["notebooks/02_gru_cell.html"]
    assert "raise todo(" in page["code"] and "# TODO" in page["code"]
    assert "yours against your GRUCell.backward" in page["code"]        # printed by the exercise's check
    assert "dA_x @ W_ih" not in page["code"]                            # the solution's return line
    shown = page["text"] + page["code"]
    assert "BEGIN SOLUTION" not in shown and "END SOLUTION" not in shown


def test_the_leak_check_reads_highlighted_code(tmp_path):
    """A solution line split into highlighting spans in a page is still found, and fails the build."""
    from handout.build import REPO
    from handout.leaks import solution_lines
    from handout.site import check_site_leaks
    source = os.path.join(REPO, "mytorch", "nn", "rnn_cell.py")
    where, line = solution_lines([source])[0]
    spans = "".join(f'<span class="n">{html.escape(token)}</span>' for token in re.findall(r"\w+|\S", line))
    page = tmp_path / "page.html"
    page.write_text(f'<html><body><pre>x = 1\n{spans}\n</pre></body></html>', encoding="utf-8")
    with pytest.raises(BuildError, match="solution line"):
        check_site_leaks([source], str(tmp_path))
    page.write_text("<html><body><pre>x = 1</pre></body></html>", encoding="utf-8")
    check_site_leaks([source], str(tmp_path))


def test_instructor_site_shows_the_solutions_without_markers(site, execution_cache, tmp_path):
    """--solutions: the notebooks' solution code is shown (from the notebooks executed for the student site,
    so nothing runs twice), and no marker line is."""
    from handout.site import _html_text, build_site
    out, _ = build_site(str(tmp_path / "site"), solutions=True, cache_dir=execution_cache)
    page = _html_text(os.path.join(out, "notebooks", "02_gru_cell.html"))
    assert "return dA_x @ W_ih, dA_h @ W_hh + delta * z" in page
    assert "yours against your GRUCell.backward" in page
    assert "SOLUTION" not in page
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        assert "instructor" in f.read()
    student = _html_text(os.path.join(site[0], "notebooks", "02_gru_cell.html"))
    assert "dA_x @ W_ih" not in student and "raise todo(" in student
    # notebook 02's table of derivatives (a derivation: the instructor's edition shows it) on a phone
    from playwright.sync_api import sync_playwright
    shots = os.path.join(os.path.dirname(site[0]), "screenshots")
    os.makedirs(shots, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), headless=True, args=BROWSER_FLAGS)
        try:
            page = browser.new_page(viewport=PHONE, is_mobile=True)
            page.goto(_url(out, "notebooks/02_gru_cell.html"), wait_until="load")
            heights = _table_heights(page, os.path.join(shots, "derivative-table-phone.png"))
        finally:
            browser.close()
    assert len(heights) >= 10 and max(heights) < 40, heights


def test_the_execution_cache_is_keyed_on_the_files_beside_the_notebooks_too(tmp_path):
    """Executed outputs depend on the library and on what the notebooks import or read beside them (needs.py,
    diagrams.py, data/): a change to any of them is a new cache key; a notebook's own change is the cache's."""
    from handout import site
    for folder in ("mytorch", "autograder", "notebooks/data"):
        (tmp_path / folder).mkdir(parents=True)
    files = {"mytorch/a.py": "x = 1", "autograder/b.py": "y = 2", "notebooks/needs.py": "n = 1",
             "notebooks/diagrams.py": "d = 1", "notebooks/data/text.txt": "words", "notebooks/01.ipynb": "{}"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    keys = {site._library_hash(str(tmp_path))}
    for name in files:
        (tmp_path / name).write_text(files[name] + " changed")
        keys.add(site._library_hash(str(tmp_path)))
    assert len(keys) == len(files)            # every file but the notebook gave a new key
    (tmp_path / "notebooks" / "01.ipynb").write_text("{} again")
    assert site._library_hash(str(tmp_path)) in keys
