"""A student's notebook run as far as it goes, with some parts written: the handout's mytorch with the solution
put back in the functions of the written parts only, then the notebook executed cell by cell until its first
stop. Used by tests/test_notebook_steps.py."""
import json
import os
import re
import shutil
import tempfile

from handout import markers

# the graded part each solved function of mytorch/ belongs to ("6": every BPTT part; "fast …": optional)
FUNCTION_PARTS = {
    "RNNCell.forward": "1.1", "RNNCell.backward": "1.2", "GRUCell.forward": "2.1", "GRUCell.backward": "2.2",
    "gru_block_cell": "3.1", "gru_block_cell_grad": "3.2", "GRUBlockCell.backward": "3.2",
    "GMUCell.forward": "4.1", "GMUCell.backward": "4.2", "TGRUCell.forward": "5.1", "TGRUCell.backward": "5.2",
    "LSTMCell.forward": "7.1", "LSTMCell.backward": "7.2",
    "Recurrent.forward": "6", "Recurrent.backward": "6", "Recurrent._run_direction": "6",
    "Recurrent._backward_direction": "6",
    "extend_target": "8.1", "log_alpha": "8.2", "log_beta": "8.3", "log_posterior": "8.4",
    "CTCLoss.forward": "8.5", "CTCLoss.backward": "8.6", "collapse": "8.7", "_prune": "8.8", "_extend": "8.8",
    "_losses_and_grads": "8.9",
}
TODO = re.compile(r"^(?P<indent>[ \t]*)# TODO: .*\n(?P=indent)raise (NotImplementedError|todo)\(.*\)\n", re.M)


def _part(function):
    if function.endswith((".sequence_forward", ".sequence_backward")):
        return function.split(".")[0] + " fast path"
    return FUNCTION_PARTS[function]


def _written(part, written):
    return part in written or (part == "6" and any(p.startswith("6.") for p in written))


def _put_back(stripped, source, where, keep):
    """``stripped`` with the solution of each region ``keep(function)`` keeps put back, in order."""
    import ast
    lines, tree = source.split("\n"), ast.parse(source)
    bodies = []
    todos = [m.group(0) for m in TODO.finditer(stripped)]
    regions = markers.find_regions(lines, where)
    assert len(todos) == len(regions), where
    for todo, region in zip(todos, regions):
        inside = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.lineno <= region.begin + 1 <= f.end_lineno]
        function = max(inside, key=lambda f: f.lineno)
        owner = next((c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and function in c.body), None)
        name = f"{owner}.{function.name}" if owner else function.name
        bodies.append("\n".join(region.body(lines)) + "\n" if keep(name) else todo)
    it = iter(bodies)
    return TODO.sub(lambda m: next(it), stripped)


def student_copy(handout, repo, folder, written, notebooks_written=False):
    """A copy of the built ``handout`` in ``folder`` whose mytorch has the parts ``written`` solved (the
    optional fast paths too, with every part written), and its notebooks' exercises too with
    ``notebooks_written``."""
    shutil.copytree(handout, folder)
    everything = written == "all"
    for root, _, files in os.walk(os.path.join(repo, "mytorch")):
        for name in files:
            path = os.path.join(root, name)
            if not name.endswith(".py") or "BEGIN SOLUTION" not in open(path, encoding="utf-8").read():
                continue
            target = os.path.join(folder, os.path.relpath(path, repo))
            with open(target, encoding="utf-8") as f:
                stripped = f.read()
            with open(path, encoding="utf-8") as f:
                source = f.read()
            keep = (lambda function: True) if everything else (lambda function: _written(_part(function), written))
            with open(target, "w", encoding="utf-8") as f:
                f.write(_put_back(stripped, source, path, keep))
    if notebooks_written:
        for name in os.listdir(os.path.join(folder, "notebooks")):
            if not name.endswith(".ipynb"):
                continue
            with open(os.path.join(repo, "notebooks", name), encoding="utf-8") as f:
                solved = {c.get("id"): c for c in json.load(f)["cells"]}
            path = os.path.join(folder, "notebooks", name)
            with open(path, encoding="utf-8") as f:
                notebook = json.load(f)
            for cell in notebook["cells"]:
                if cell["cell_type"] == "code" and "raise todo(" in "".join(cell["source"]):
                    lines = "".join(solved[cell["id"]]["source"]).split("\n")
                    cell["source"] = "\n".join(l for l in lines if not markers.BEGIN.match(l) and not markers.END.match(l))
            with open(path, "w", encoding="utf-8") as f:
                json.dump(notebook, f, indent=1)
    return folder


def run_until_stop(path, timeout=300):
    """Execute the notebook at ``path`` in a fresh kernel (its folder the working directory, no PYTHONPATH)
    until a cell raises: (code cells that ran, the code cells, the first error output or None)."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(path, as_version=4)
    env = {**os.environ, "PYTHONPATH": "", "MPLBACKEND": "agg", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
        client = NotebookClient(notebook, timeout=timeout, km=km, record_timing=False,
                                resources={"metadata": {"path": os.path.dirname(path)}})
        try:
            client.execute(env=env)
        except CellExecutionError:
            pass
    code = [c for c in notebook.cells if c.cell_type == "code"]
    error = next((o for c in code for o in c.outputs if o.output_type == "error"), None)
    ran = sum(1 for c in code if c.execution_count is not None and not any(o.output_type == "error" for o in c.outputs))
    return ran, len(code), error


def run_all(path, timeout=300):
    """Execute every cell of the notebook at ``path``, on past errors: [(cell index, error name, its source)]."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    env = {**os.environ, "PYTHONPATH": "", "MPLBACKEND": "agg", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
        km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
        NotebookClient(notebook, timeout=timeout, km=km, record_timing=False, allow_errors=True,
                       resources={"metadata": {"path": os.path.dirname(path)}}).execute(env=env)
    return [(i, o.ename, c.source) for i, c in enumerate(notebook.cells) if c.cell_type == "code"
            for o in c.outputs if o.output_type == "error"]
