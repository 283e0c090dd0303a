"""The instructor's side: a class, the platforms it is graded on, and the data the grader checks against.

Imports the grading core (``autograder.grade``, ``autograder.cli``) and every package below it.

    batch         python -m autograder batch: a class folder graded in parallel, feedback and a class report
    submissions   what a class folder holds, one submission each, and where its ``mytorch`` is (every mode's locator)
    roster        a Canvas or Gradescope roster, and which submission is whose (batch --roster)
    class_report  what a batch leaves for the instructor: feedback files, report.md, gradebook.csv, mistakes.csv
    similarity    which submissions look copied: winnowed fingerprints of the code students wrote
    upload        an upload located, unpacked within limits, copied and graded: what every platform's entry does
    gradescope    Gradescope's entry: /autograder/submission graded into results.json
    prairielearn  PrairieLearn's external grader: /grade/student graded into /grade/results/results.json
    autolab       Autolab's autograder: handin.tar graded, the scores printed on the last line
    handin        python -m autograder handin: the student's tar, graded locally first
    generate      python -m autograder generate: the reference data from the solution (instructor only)
"""
