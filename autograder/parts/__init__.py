"""What is graded: the parts and their cases, the course, the reference data, and the driver of a part.

Imports only ``autograder.sandbox``.

    spec              the parts (numbered like the handout), their points, their cases drawn from a seed
    course            course.toml: which sections, points per part, the seed, Gradescope's visibility
    data              the reference data (``autograder/data/``), verified against two sets of sums
    reference_hashes  the second set: the data's sha256 sums compiled into the grader
    driver            runs one part's cases against a submission, inside the child (loaded there by path)
"""
