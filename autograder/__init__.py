"""The autograder: ``python -m autograder`` grades a ``mytorch`` submission against stored reference data.

Its packages, from the bottom up; each imports only from the ones above it in this list (``tests/test_layout.py``
reads every import and fails on one that goes the other way, or on a circle):

    sandbox/     runs, confines and cleans up after student code: the security boundary (its docstring says
                 what it defends against; the repository's docs/security.md, what each mode promises)
    parts/       what is graded: the parts and their cases, the course file, the reference data, and the
                 driver that runs a part's cases inside the child
    diagnosis/   what a failing part is told: comparison, value traces matched against the reference's,
                 hints, the report printed and written
    grade.py     grading one submission (one child per part, every score in the parent),
    preflight.py the checks made before any student code runs (under --run-as, as root: what a sandbox user
                 could change or must read), in the order its docstring gives, and
    cli.py       the grading command's line and flow, and the options every command shares
    instructor/  a class and its platforms: batch and the class report, Gradescope, the student's handin, the
                 reference-data generator
    __main__.py  dispatches ``python -m autograder [COMMAND]`` to the module that does it
"""

# the packages, bottom up (the layering above); the grader's files are this folder's and theirs
PACKAGES = ("sandbox", "parts", "diagnosis", "instructor")

# the grader's modules an instructor's checkout has and a student's handout leaves out: they hold the solution's
# lines (the catalogue of mistakes edits them) and its generator, and no child may read them or their bytecode
INSTRUCTOR_ONLY = ("instructor/generate.py", "diagnosis/mistakes.py")
