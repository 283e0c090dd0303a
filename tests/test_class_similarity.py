"""The class report sees copying: ten copies of the solution (variables renamed, spacing and comments changed) are
named identical to it, the untouched handout is named, a pair sharing one student's code is found with its share,
and independently written solutions pair with nothing; the provided code makes nobody similar. And mistakes.csv
says which student made which mistake."""
import csv
import os
import re

import pytest

from autograder.diagnosis import mistakes
from autograder.instructor import similarity
from handout import markers, sections
from tests.graderkit import REPO, make_grader_copy, make_submission, report_of, run_cli

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
RNN = os.path.join(REPO, "mytorch", "nn", "rnn_cell.py")

# independently written forward and backward bodies of the RNN cell (the optional fast path left as handed out)
INDEPENDENT = {
    "ines": ('''        pre = x @ p["weight_ih"].T + h @ p["weight_hh"].T
        if self.bias:
            pre = pre + p["bias_ih"] + p["bias_hh"]
        h_t = np.tanh(pre) if self.nonlinearity == "tanh" else np.maximum(pre, 0)
''', '''        if self.nonlinearity == "tanh":
            grad_pre = dh_t * (1 - cache.h_t ** 2)
        else:
            grad_pre = dh_t * (cache.h_t > 0)
        for name, inp in (("weight_ih", cache.x), ("weight_hh", cache.hidden)):
            g[name] += grad_pre.T @ inp
        if self.bias:
            col = grad_pre.sum(axis=0)
            for name in ("bias_ih", "bias_hh"):
                g[name] += col
        dx = grad_pre @ p["weight_ih"]
        dh = grad_pre @ p["weight_hh"]
'''),
    "bruno": ('''        lin = np.einsum("ni,hi->nh", x, p["weight_ih"]) + np.einsum("nk,hk->nh", h, p["weight_hh"])
        lin += self._bias("bias_ih") + self._bias("bias_hh")
        h_t = F.relu(lin) if self.nonlinearity != "tanh" else np.tanh(lin)
''', '''        deriv = (1.0 - np.square(cache.h_t)) if self.nonlinearity == "tanh" else (cache.h_t > 0).astype(dh_t.dtype)
        delta = np.multiply(dh_t, deriv)
        dx = np.einsum("nh,hi->ni", delta, p["weight_ih"])
        dh = np.einsum("nh,hk->nk", delta, p["weight_hh"])
        g["weight_ih"] += np.einsum("nh,ni->hi", delta, cache.x)
        g["weight_hh"] += np.einsum("nh,nk->hk", delta, cache.hidden)
        if self.bias:
            for key in ("bias_ih", "bias_hh"):
                g[key] += np.sum(delta, axis=0)
'''),
    "chen": ('''        W1, W2 = p["weight_ih"], p["weight_hh"]
        z = np.dot(x, W1.T) + np.dot(h, W2.T)
        if self.bias:
            z += p["bias_ih"]
            z += p["bias_hh"]
        h_t = np.where(z > 0, z, 0.0) if self.nonlinearity == "relu" else np.tanh(z)
''', '''        out = cache.h_t
        local = 1 - out * out if self.nonlinearity == "tanh" else np.where(out > 0, 1.0, 0.0)
        s = dh_t * local
        W1, W2 = p["weight_ih"], p["weight_hh"]
        dx, dh = np.dot(s, W1), np.dot(s, W2)
        g["weight_ih"] += np.dot(s.T, cache.x)
        g["weight_hh"] += np.dot(s.T, cache.hidden)
        if self.bias:
            total = s.sum(0)
            g["bias_ih"] += total
            g["bias_hh"] += total
'''),
}


def _handout_file(bodies):
    """rnn_cell.py as the handout ships it, with ``bodies`` (None: left as the TODO) in its regions, in order."""
    with open(RNN) as f:
        stripped, _ = markers.strip_source(f.read(), RNN)
    given = iter(bodies)
    return markers.TODO_BLOCK.sub(lambda m: next(given, None) or m.group(0), stripped)


def _disguised(body, k):
    """``body`` with its assigned names renamed, its spacing changed and comments added."""
    for name in sorted(set(re.findall(r"^\s*(\w+) = ", body, re.M)) | {"da", "a"}, key=len, reverse=True):
        body = re.sub(rf"(?<![.\w\"']){name}\b", f"{name}_v{k}", body)
    return "".join(line.replace(" = ", "=").rstrip() + (f"   # step {k}\n" if line.strip() else "\n")
                   for line in body.splitlines())


def _student(folder, text):
    make_submission(folder)
    with open(os.path.join(folder, "mytorch", "nn", "rnn_cell.py"), "w") as f:
        f.write(text)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("similar")
    grader = make_grader_copy(root / "grader", COURSE)
    subs = root / "subs"
    with open(RNN) as f:
        solution_bodies = markers.region_texts(f.read(), RNN)
    for k in range(10):
        _student(subs / f"copy{k}", _handout_file([_disguised(b, k) for b in solution_bodies]))
    for name, (forward, backward) in INDEPENDENT.items():
        _student(subs / name, _handout_file([forward, backward]))
    forward, backward = INDEPENDENT["ines"]
    _student(subs / "dora", _handout_file([_disguised(forward, 42), _disguised(backward, 42)]))   # ines's code
    _student(subs / "blank", _handout_file([]))
    near = list(solution_bodies)
    near[1] = near[1].replace("da = dh_t * act_grad", "da = act_grad * dh_t + 0.0")
    _student(subs / "nearly", _handout_file(near))
    sigmoid = next(m for m in mistakes.HINTED if m.id == "rnn-sigmoid-for-tanh")
    make_submission(subs / "wrong", [(sigmoid.path, sigmoid.old, sigmoid.new)])     # a whole copy: near the solution
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--solution", REPO], cwd=grader, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = (report_of(subs) / "report.md").read_text()
    return report.split("## Similarity")[1], report_of(subs)


def test_copies_of_the_solution_and_the_untouched_handout_are_named(compared):
    section, _ = compared
    line = next(x for x in section.splitlines() if x.startswith("- Identical to the solution"))
    assert sorted(re.findall(r"copy\d", line)) == [f"copy{k}" for k in range(10)] and "ines" not in line
    assert "- The untouched handout (no code of their own): blank." in section
    near = next(x for x in section.splitlines() if x.startswith("- Near-identical to the solution"))
    assert "nearly" in near and "wrong" in near and not any(n in near for n in ("ines", "bruno", "chen", "dora",
                                                                                "copy"))


def test_a_shared_pair_is_found_and_independent_work_pairs_with_nothing(compared):
    section, _ = compared
    pairs = section.split("### Near-identical pairs")[1].split("###")[0]
    found = re.findall(r"^- (\w+) and (\w+): (\d+)%$", pairs, re.M)
    assert [(a, b) for a, b, _ in found] == [("dora", "ines")], pairs
    assert int(found[0][2]) >= 90


def test_the_winnowed_fingerprints_ignore_names_spacing_and_comments():
    one = "a = x @ w.T + b  # pre\nh = np.tanh(a)\n" * 4
    two = "pre=inp@weights.T+bias\nout = np.tanh( pre )   \n" * 4
    assert similarity.tokens(one) == similarity.tokens(two)
    assert similarity.fingerprints(similarity.tokens(one)) == similarity.fingerprints(similarity.tokens(two))
    assert similarity.tokens("x.weight_ih") != similarity.tokens("x.weight_hh")          # attributes are kept


def test_the_grader_knows_which_file_is_which_section_as_the_handout_does():
    assert similarity.FILE_SECTIONS == sections.FILE_SECTIONS


def test_mistakes_csv_has_a_column_per_mistake_and_a_row_per_student(compared):
    _, report = compared
    with open(report / "mistakes.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0][:2] == ["submission", "total"] and len(table) == 1 + 17
    columns = table[0][2:]
    assert columns and all(re.match(r"1\.\d ", c) for c in columns)
    rows = {r[0]: r for r in table[1:]}
    wrong = {c for c, cell in zip(columns, rows["wrong"][2:]) if cell == "1"}
    assert "1.1 first wrong: h_t" in wrong, columns
    assert any(c.startswith("1.1 ") and "σ and tanh swapped" in c for c in wrong), wrong
    assert all(cell == "" for cell in rows["copy0"][2:])                  # the solution made no mistake
    blank_marks = [c for c, cell in zip(columns, rows["blank"][2:]) if cell == "1"]
    assert blank_marks == []                                              # not implemented is not a mistake
