"""The child process: import the ``mytorch`` found in ROOT, run one part's cases, write plain arrays back.

    python -I worker.py ROOT REQUEST.npz RESPONSE.npz

Started by the grading process with resource limits; nothing here is trusted by it. ``driver.py`` is loaded
from beside this file by path, so the only directory added to ``sys.path`` is ROOT.
"""
import importlib.util
import json
import os
import sys


def main(root, request_path, response_path):
    import faulthandler

    import numpy as np

    # shortly before the parent's time limit, print where every thread is, so an endless loop is located
    dump_after = float(os.environ.get("MYTORCH_GRADER_DUMP_AFTER", "0") or 0)
    if dump_after > 0:
        faulthandler.dump_traceback_later(dump_after, exit=False)

    spec = importlib.util.spec_from_file_location("_autograder_driver",
                                                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver.py"))
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)

    with np.load(request_path, allow_pickle=False) as request:
        configs = json.loads(str(request["__configs__"]))
        inputs = [{} for _ in configs]
        for key in request.files:
            if key != "__configs__":
                k, name = key.split(":", 1)
                inputs[int(k)][name] = request[key]

    sys.path.insert(0, root)
    try:
        import mytorch
        location = os.path.realpath(os.path.dirname(mytorch.__file__))
        if not location.startswith(os.path.realpath(root) + os.sep):
            raise ImportError(f"mytorch was imported from {location}, not from the submission in {root}")
    except BaseException as error:                      # SyntaxError, ImportError, SystemExit at import …
        where = driver.where_in(error, root)
        message = f"importing mytorch failed: {type(error).__name__}: {error}"[:2000]
        report = json.dumps([{"status": "import_error", "error": message, "where": where, "types": {}, "mutated": []}
                             for _ in configs])
        arrays = {}
    else:
        arrays, report = driver.run(mytorch, root, configs, inputs)

    partial = response_path + ".partial"
    with open(partial, "wb") as f:
        np.savez(f, __report__=np.array(report), **arrays)
    os.replace(partial, response_path)


if __name__ == "__main__":
    main(*sys.argv[1:4])
