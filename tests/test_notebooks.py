"""The notebooks: stored without outputs, each executes top to bottom in a fresh kernel, asserts its own
numerical checks, and draws at least one figure."""
import glob
import os

import pytest

pytestmark = pytest.mark.slow                  # runs every notebook top to bottom in a fresh kernel

nbformat = pytest.importorskip("nbformat", reason="the test extras (pip install -e '.[test]') run the notebooks")
nbclient = pytest.importorskip("nbclient")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))
EXPECTED = ["01_rnn_cell", "02_gru_cell", "03_gru_block_cell", "04_gmu_cell", "05_tgru_cell", "06_bptt_vanishing",
            "07_training", "08_lstm_cell", "09_ctc"]


EXPECTED += ["10_making_it_fast"]                           # notebooks added later, one line each
EXPECTED += ["11_character_model"]


def test_every_notebook_is_there():
    assert [os.path.basename(p)[:-6] for p in NOTEBOOKS] == sorted(EXPECTED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_stored_without_outputs_and_complete(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), "clear the outputs before committing"
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    source = "\n".join(c.source for c in code)
    assert "$" in markdown                                   # derivations in LaTeX
    assert "import mytorch" in source or "from mytorch" in source
    assert "check(" in source or "expect(" in source         # its numerical checks stop the run when wrong
    assert "plt." in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_executes_in_a_fresh_kernel(path, notebook_cache):
    """Executed as the course site executes it (so the site built later in this process reuses it, never the
    other way round: this test always executes)."""
    from handout import site
    nb = site.execute_notebook(path, REPO)                   # a BuildError names the failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any(o.output_type == "display_data" and "image/png" in o.data for o in outputs), "no figure was drawn"
    assert not any(o.output_type == "error" for o in outputs)
    if notebook_cache is not None:
        site.cache_executed(path, nb, REPO, notebook_cache)


def test_a_kernel_gets_one_blas_thread_unless_the_environment_names_more(tmp_path, monkeypatch):
    """Two kernels run at once on the notebooks' small matrices, where a BLAS thread pool only spins; an
    instructor's own setting still wins."""
    from handout import site
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    cell = nbformat.v4.new_code_cell("import os\n"
                                     "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'))")
    path = str(tmp_path / "threads.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    ran = site.execute_notebook(path, REPO)
    assert ran.cells[0].outputs[0].text.split() == ["1", "3"]


def test_a_kernel_talks_over_sockets_in_a_folder_of_its_own(tmp_path):
    """No TCP ports, which two kernels starting at once could both pick: Unix sockets in a fresh folder."""
    from handout import site
    cell = nbformat.v4.new_code_cell("import json, os\nfrom ipykernel.connect import get_connection_info\n"
                                     "info = json.loads(get_connection_info())\n"
                                     "print(info['transport'], os.path.dirname(info['ip']))")
    path = str(tmp_path / "transport.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    folders = set()
    for _ in range(2):
        transport, folder = site.execute_notebook(path, REPO).cells[0].outputs[0].text.split()
        assert transport == "ipc" and os.path.basename(folder).startswith("kernel-")
        assert not os.path.exists(folder)                    # removed with its sockets once the kernel ended
        folders.add(folder)
    assert len(folders) == 2


def test_a_kernel_that_dies_at_start_is_retried_then_named_with_what_it_said(tmp_path):
    """A kernel that dies before its first reply (two kernels starting at once can pick the same free port) is
    started again; one that never starts fails the build with its own last words, not nbclient's traceback."""
    from handout import site
    from handout.build import BuildError
    (tmp_path / "sitecustomize.py").write_text(
        "import os, sys\n"
        "marks = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'starts')\n"
        "open(marks, 'a').write('x')\n"
        "sys.stderr.write('refusing to start for the test\\n'); sys.stderr.flush(); os._exit(3)\n")
    with pytest.raises(BuildError) as raised:
        site.execute_notebook(NOTEBOOKS[0], str(tmp_path))
    message = str(raised.value)
    assert message.startswith(f"{os.path.basename(NOTEBOOKS[0])}: a kernel failed to start {site.KERNEL_STARTS} times")
    assert "Kernel died before replying to kernel_info" in message
    assert "refusing to start for the test" in message
    assert (tmp_path / "starts").read_text() == "x" * site.KERNEL_STARTS
