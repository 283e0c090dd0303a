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
    _check_early(argv)
    from autograder import zygote
    worker = zygote.early(argv)                       # starts importing NumPy while the grader does
    try:
        from autograder import cli
        return cli.main_grade(argv, worker)
    finally:
        if worker is not None:
            worker.close()


def _check_early(argv):
    """Under ``--run-as USER --python PATH`` (as root), start the checks of PATH for USER now (the probe of it
    as USER importing NumPy, the walk of its files: ``interpreter.check_early``), while this process imports
    NumPy and the grader. The probe runs as USER alone, as the checks would run it anyway; anything odd
    (another spelling, no such user) leaves it all to them."""
    import os
    options = {}
    for k, arg in enumerate(argv):
        for name in ("--run-as", "--python"):
            if arg == name and k + 1 < len(argv):
                options[name] = argv[k + 1]
            elif arg.startswith(name + "="):
                options[name] = arg[len(name) + 1:]
    if set(options) != {"--run-as", "--python"} or os.geteuid() != 0:
        return
    import pwd
    try:
        user = pwd.getpwnam(options["--run-as"])
    except (KeyError, ValueError):
        return
    python = os.path.abspath(options["--python"])
    if user.pw_uid != 0 and os.path.isfile(python) and os.access(python, os.X_OK):
        from autograder import interpreter
        interpreter.check_early(python, user)


if __name__ == "__main__":
    import os
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(threads, "1")   # set before NumPy loads: its arrays here are small, a BLAS thread
    sys.exit(main())                          # pool only costs CPU (0.1 s of it to start) that the parts need
