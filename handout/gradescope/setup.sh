#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-pip
python3 -m pip install numpy matplotlib || python3 -m pip install --break-system-packages numpy matplotlib
# student code runs as this unprivileged user; it cannot read the solution or write the results
id -u student >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin student
