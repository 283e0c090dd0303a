"""The command line: ``python -m autograder`` dispatches to the command named first.

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S] [--memory MB]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--jobs N]
                         [--run-as USER] [--python PATH]
    python -m autograder batch DIR [--out REPORT] [--regrade] [--run-as USER[,USER...]|'PREFIX*'] [--jobs N]
                               [--timeout S] [--fresh-seed [SEED]]
    python -m autograder handin [--submission DIR] [--out handin.tar]
    python -m autograder gradescope [--root /autograder]      (Gradescope's run_autograder calls this)
    python -m autograder prairielearn [--root /grade]         (a PrairieLearn question's tests/run.sh calls this)
    python -m autograder autolab [--handin handin.tar]        (an Autolab assessment's Makefile calls this)
    python -m autograder generate [--config FILE] [--check]   (instructors: the reference data)

PART is a part number (2.1) or a section (2). The exit status is 0 whenever grading ran, whatever the score;
2 for a usage error.
"""
import os
import sys

# the checks that run before anything else: importing it imports nothing more (os, sys and this package alone,
# found in this package's own folder, never through sys.path), so a module planted where the grader would look
# for its next import cannot run before them
from autograder import preflight

# the commands that grade other people's code, whose isolation is Linux's (docs/security.md)
LINUX_ONLY = ("batch", "gradescope", "prairielearn", "autolab")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if hasattr(sys.stdout, "reconfigure"):            # a terminal that cannot show a character gets '?'
        sys.stdout.reconfigure(errors="replace")
    preflight.refuse_a_path_the_users_may_write(argv)    # before anything more is imported
    if argv and argv[0] in LINUX_ONLY:
        from autograder.sandbox import system
        if not system.LINUX:                          # their promises rest on the Linux sandbox alone
            import textwrap
            print(textwrap.fill(f"python -m autograder {argv[0]}: error: {system.linux_only(argv[0])}", 80,
                                subsequent_indent="  "), file=sys.stderr)       # as every usage error wraps
            return 2
    if argv and argv[0] == "batch":
        from autograder.instructor import batch
        return batch.main(argv[1:])
    if argv and argv[0] == "handin":
        from autograder.instructor import handin
        return _interruptible(handin.main, argv[1:])
    if argv and argv[0] == "gradescope":
        from autograder.instructor import gradescope
        return gradescope.main(argv[1:])
    if argv and argv[0] == "prairielearn":
        from autograder.instructor import prairielearn
        return prairielearn.main(argv[1:])
    if argv and argv[0] == "autolab":
        from autograder.instructor import autolab
        return autolab.main(argv[1:])
    if argv and argv[0] == "generate":
        if not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "instructor", "generate.py")):
            print("python -m autograder generate: the reference-data generator ships with the instructor's "
                  "checkout only, not with the student handout", file=sys.stderr)
            return 2
        from autograder.instructor import generate
        return generate.main(argv[1:])
    preflight.check_early(argv)
    from autograder.sandbox import zygotes
    worker = zygotes.early(argv)                       # starts importing NumPy while the grader does
    try:
        from autograder import cli
        return _interruptible(cli.main_grade, argv, worker)
    finally:
        if worker is not None:
            worker.close()


def _interruptible(command, *args):
    """``command(*args)``, which Ctrl+C stops within a moment: every running part's child is killed at once and
    no other starts (``reaper.interrupt``), the command's own clean-up runs, and the student reads one line,
    not a traceback. Exit status 130, as a shell gives for Ctrl+C."""
    import signal
    import threading

    def stop(*_):
        from autograder.sandbox import reaper
        reaper.interrupt()
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is \
            signal.default_int_handler:
        signal.signal(signal.SIGINT, stop)
    try:
        return command(*args)
    except KeyboardInterrupt:
        print("\nInterrupted: the parts running were stopped, and the rest were not run.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    import os
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(threads, "1")   # set before NumPy loads: its arrays here are small, a BLAS thread
    sys.exit(main())                          # pool only costs CPU (0.1 s of it to start) that the parts need
