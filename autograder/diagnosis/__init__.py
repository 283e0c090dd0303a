"""What a failing part is told: every comparison, the hunt for the first wrong value, hints, the report.

Imports only ``autograder.parts`` and ``autograder.sandbox``. Everything here runs in the grading process on
plain data a child sent (untrusted and bounded), except ``tracing``, which the child loads by path.

    compare    one returned array against its reference: type, dtype, shape, values, and a hint
    tracing    in the child: the values the submission's own lines assign, recorded with file:line
    traces     a trace as the grading process holds it: the child's records, checked whole
    matching   the student's trace against the reference's: the first wrong quantity
    differences  the kind of difference between a student's value and the reference's, when proved
    calls      a call's arguments as quantities: which call, the student's expression, what it equals
    wording    the diagnosis in words, at the student's line and in their names
    diagnose   running a diagnosis: the traced child, the reference trace, the time it may take
    places     where in a student's sequence layer a recognised BPTT mistake lives
    mistakes   the catalogue of realistic mistakes (instructor only: it holds the solution's lines)
    feedback   a child's outcome turned into a part's score and message
    report     the score table, the console it is printed on, and the results files
"""
