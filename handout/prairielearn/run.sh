#!/bin/sh
# PrairieLearn runs this (the question's externalGradingOptions.entrypoint) for every submission: grade
# /grade/student with the mytorch autograder and write /grade/results/results.json. MYTORCH_PL_ROOT moves the
# layout (for testing). -E -s: no PYTHONPATH and no user site, so the grader imported is this one in tests/.
set -e
ROOT="${MYTORCH_PL_ROOT:-/grade}"
# student code runs as this unprivileged user where the grader runs as root; MYTORCH_GRADER_USER names another
if [ -z "${MYTORCH_GRADER_USER:-}" ] && [ "$(id -u)" = 0 ] && ! id -u student >/dev/null 2>&1 \
        && command -v useradd >/dev/null 2>&1; then
    useradd --no-create-home --shell /usr/sbin/nologin student
fi
cd "$ROOT/tests"
# MYTORCH_GRADER_PYTHON: the Python student code runs with, when this one is out of that user's reach
status=0
python3 -E -s -m autograder prairielearn --root "$ROOT" ${MYTORCH_GRADER_PYTHON:+--python "$MYTORCH_GRADER_PYTHON"} \
    || status=$?
if [ ! -s "$ROOT/results/results.json" ]; then     # Python could not run the grader at all (no NumPy?)
    mkdir -p "$ROOT/results"
    printf '%s\n' '{"gradable": false, "score": 0, "message": "The autograder could not run: please tell the course staff.", "output": "", "tests": []}' \
        > "$ROOT/results/results.json"
fi
exit "$status"
