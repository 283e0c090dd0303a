"""The autograder: ``python -m autograder`` (see ``cli``)."""

# the grader's modules an instructor's checkout has and a student's handout leaves out: they hold the solution's
# lines (the catalogue of mistakes edits them) and its generator, and no child may read them or their bytecode
INSTRUCTOR_ONLY = ("generate.py", "mistakes.py")
