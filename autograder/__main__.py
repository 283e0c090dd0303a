"""The command line: ``python -m autograder`` dispatches to the command named first.

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S] [--memory MB]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--jobs N]
                         [--run-as USER] [--python PATH]
    python -m autograder batch DIR [--out REPORT] [--regrade] [--run-as USER[,USER...]|'PREFIX*'] [--jobs N]
                               [--timeout S] [--fresh-seed [SEED]]
    python -m autograder handin [--submission DIR] [--out handin.tar]
    python -m autograder gradescope [--root /autograder]      (Gradescope's run_autograder calls this)

PART is a part number (2.1) or a section (2). The exit status is 0 whenever grading ran, whatever the score;
2 for a usage error.
"""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if hasattr(sys.stdout, "reconfigure"):            # a terminal that cannot show a character gets '?'
        sys.stdout.reconfigure(errors="replace")
    if argv and argv[0] == "batch":
        from autograder import batch
        return batch.main(argv[1:])
    if argv and argv[0] == "handin":
        from autograder import handin
        return handin.main(argv[1:])
    if argv and argv[0] == "gradescope":
        from autograder import gradescope
        return gradescope.main(argv[1:])
    from autograder import zygote
    worker = zygote.early(argv)                       # starts importing NumPy while the grader does
    try:
        from autograder import cli
        return cli.main_grade(argv, worker)
    finally:
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    import os
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(threads, "1")   # set before NumPy loads: its arrays here are small, a BLAS thread
    sys.exit(main())                          # pool only costs CPU (0.1 s of it to start) that the parts need
