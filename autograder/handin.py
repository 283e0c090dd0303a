"""Students: pack what you hand in.

    python -m autograder handin [--submission DIR] [--out handin.tar]

The tar holds the ``mytorch`` package's Python files and the notebooks (``notebooks/*.ipynb``), with paths
relative to the submission folder; caches and anything else are left out.
"""
import argparse
import os
import sys
import tarfile

from autograder.cli import default_submission


def files_to_hand_in(root):
    chosen = []
    for top, pattern in (("mytorch", ".py"), ("notebooks", ".ipynb")):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            chosen += [os.path.relpath(os.path.join(folder, f), root) for f in sorted(files) if f.endswith(pattern)]
    return chosen


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder handin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--submission", default=None, metavar="DIR")
    parser.add_argument("--out", default="handin.tar", metavar="PATH")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.submission or default_submission())
    files = files_to_hand_in(root)
    if not any(f.startswith("mytorch" + os.sep) for f in files):
        parser.error(f"no mytorch package in {root}")
    with tarfile.open(args.out, "w") as tar:
        for name in files:
            tar.add(os.path.join(root, name), arcname=name, recursive=False)
    print(f"Wrote {args.out} with {len(files)} files from {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
