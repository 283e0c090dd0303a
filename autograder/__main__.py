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
    _refuse_a_path_the_users_may_write(argv)
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


def _options(argv, names):
    """``{name: value}`` of the options ``names`` in ``argv`` (the last of each, as argparse takes it), read as
    text before anything is imported."""
    options = {}
    for k, arg in enumerate(argv):
        for name in names:
            if arg == name and k + 1 < len(argv):
                options[name] = argv[k + 1]
            elif arg.startswith(name + "="):
                options[name] = arg[len(name) + 1:]
    return options


def _refuse_a_path_the_users_may_write(argv):
    """Under ``--run-as`` (as root): every module the grader imports before its own checks run (argparse, json,
    ...) is looked for in each folder of ``sys.path`` in turn, the current one first under ``python -m`` (and
    those of PYTHONPATH), and one a sandbox user planted there would run as root. So, before any of them is
    imported (``os`` is loaded, ``pwd`` built in), a usage error if a sandbox user (each of a list; for batch's
    ``PREFIX*``, users not made yet: anyone) owns such a folder (or, for one not there yet, the nearest above),
    or could write it or rename it (through a folder above it). The grader's checks look at them again later,
    whole (ACLs too)."""
    import os
    names = _options(argv, ["--run-as"]).get("--run-as")
    if names is None or os.geteuid() != 0:
        return
    import pwd
    users = []
    for name in names.split(","):
        try:
            users.append(pwd.getpwnam(name))
        except (KeyError, ValueError):
            pass                                      # PREFIX*, or no such user (refused later): anyone counts
    who = [(f"user {u.pw_name}", u.pw_uid, u.pw_gid) for u in users] or [("a sandbox user", -1, -1)]
    for entry in [p for p in sys.path if isinstance(p, str)]:
        folder = above = os.path.abspath(entry or os.curdir)
        while not os.path.exists(above):
            above = os.path.dirname(above)
        first = above
        while True:
            info = os.stat(above)
            lasting = above == first or not info.st_mode & 0o1000    # sticky above: no one renames another's
            for name, uid, gid in who:
                if info.st_uid == uid or (lasting and (info.st_mode & 0o002 or (
                        info.st_mode & 0o020 and info.st_gid == gid))):
                    sys.stderr.write(f"python -m autograder: error: {name} could change {folder}, which the "
                                     "grader runs or may import as root: student code could plant code there; "
                                     "start it from a folder only root may write, with no such folder on "
                                     "PYTHONPATH (or run python -P -m autograder)\n")
                    sys.exit(2)
            if above == os.path.dirname(above):
                break
            above = os.path.dirname(above)


def _check_early(argv):
    """Under ``--run-as USER --python PATH`` (as root), start the checks of PATH for USER now (the probe of it
    as USER importing NumPy, the walk of its files: ``interpreter.check_early``), while this process imports
    NumPy and the grader. The probe runs as USER alone, as the checks would run it anyway; anything odd
    (another spelling, no such user) leaves it all to them."""
    import os
    options = _options(argv, ["--run-as", "--python"])
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
