"""The reference data: one compressed ``.npz`` per part under ``autograder/data/``, and a manifest of sha256 sums.

The same sums are also compiled into the grader as ``autograder/parts/reference_hashes.py`` (written with the
manifest by ``python -m autograder generate``). A file is used only if its sha256 matches both, so rewriting
the data and the manifest together (which someone able to write ``data/`` could do) is still caught.

A part's file holds, for case k: ``k:in:NAME`` (inputs), ``k:out:NAME`` (expected outputs) and
``k:hint:ID:NAME`` (what known mistake ID produces where it differs), ``k:trace`` (the values of the
solution's reference trace, see ``tracing``), plus ``__configs__``, ``__hints__`` and ``__traces__`` (JSON:
per case the trace's records). Loading uses ``allow_pickle=False`` and checks the file's sha256 against the manifest
first; any problem is a ``ReferenceDataError`` whose message names the file.
"""
import dataclasses
import errno
import functools
import hashlib
import io
import json
import os
import re
import stat
import struct
import zipfile
import zlib

import numpy as np

from autograder.sandbox import system

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
MANIFEST = "manifest.json"
HASHES_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_hashes.py")

try:                                    # imported with the grader, before any student code runs
    from autograder.parts.reference_hashes import FILES as COMPILED_HASHES
except ImportError:
    COMPILED_HASHES = None


class ReferenceDataError(Exception):
    """The reference data is missing, modified or unreadable; the message says which file and what to do."""


@dataclasses.dataclass
class PartData:
    configs: list
    inputs: list                 # per case: {name: array}
    expected: list               # per case: {name: array}
    variants: list               # per case: {name: [(hint text, array), …]}
    traces: object = None        # per case: the solution's trace (meta, values), or None: a list or ``Traces``
    solution: str = None         # with a fresh seed: the solution's folder, which traces a case when asked


def file_name(part_number):
    return f"part_{part_number}.npz"


FILE_LIMIT = 64 << 20


def read_regular(path, limit=FILE_LIMIT):
    """The bytes of the regular file ``path``: never through a link, never blocking on a FIFO (a student running
    as the grader's user could have swapped one in), at most ``limit`` bytes. Raises OSError otherwise."""
    fd = os.open(path, system.READ_ONLY)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        content = f.read(limit + 1)
    if len(content) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit >> 20} MiB", path)
    return content


def sha256(path):
    return hashlib.sha256(read_regular(path)).hexdigest()


def read_manifest(data_dir=DATA_DIR):
    path = os.path.join(data_dir, MANIFEST)
    try:
        manifest = json.loads(read_regular(path, 1 << 20).decode("utf-8"))
        manifest["files"].items()
    except FileNotFoundError:
        raise ReferenceDataError(f"the reference data manifest {path} is missing: restore autograder/data/ "
                                 "from the handout (instructors: python -m autograder generate)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise ReferenceDataError(f"the reference data manifest {path} is damaged: restore it from the handout") from None
    return manifest


def load_part(part_number, data_dir=DATA_DIR, manifest=None):
    """The verified reference data of one part."""
    manifest = manifest if manifest is not None else read_manifest(data_dir)
    name = file_name(part_number)
    path = os.path.join(data_dir, name)
    if name not in manifest["files"]:
        raise ReferenceDataError(f"{path} is not listed in the manifest: the reference data is incomplete")
    if not os.path.lexists(path):
        raise ReferenceDataError(f"the reference data file {path} is missing: restore it from the handout")
    try:
        content = read_regular(path)
    except OSError as error:
        raise ReferenceDataError(f"the reference data file {path} cannot be read ({error.strerror}): restore it "
                                 "from the handout") from None
    digest = hashlib.sha256(content).hexdigest()
    if digest != manifest["files"][name]:
        raise ReferenceDataError(f"the reference data file {path} has been modified (its sha256 does not match "
                                 "the manifest): restore it from the handout")
    if data_dir == DATA_DIR and (COMPILED_HASHES or {}).get(name) != digest:
        raise ReferenceDataError(f"the reference data file {path} does not match the sha256 compiled into the "
                                 "grader (autograder/parts/reference_hashes.py): restore autograder/ from the handout")
    try:
        return _read(content)
    except Exception as error:
        raise ReferenceDataError(f"the reference data file {path} cannot be read ({type(error).__name__}: {error})") from None


def check_against_spec(part, part_data, cases):
    """A ``ReferenceDataError`` unless the stored cases are the spec's: ``cases`` is ``spec.make_cases(part, seed)``
    (a case added to spec.py, or changed, before the data is regenerated would otherwise go ungraded)."""
    configs = [json.loads(json.dumps(config)) for config, _ in cases]
    if len(part_data.configs) != len(configs):
        raise ReferenceDataError(f"the reference data of part {part.number} holds {len(part_data.configs)} cases "
                                 f"but the spec has {len(configs)}: regenerate it (python -m autograder generate)")
    for k, (stored, spec_config) in enumerate(zip(part_data.configs, configs)):
        if stored != spec_config:
            raise ReferenceDataError(f"the reference data of part {part.number}, case {k + 1}, is not the spec's "
                                     "case: regenerate it (python -m autograder generate)")


def check_seed(manifest, seed):
    """A ``ReferenceDataError`` unless the manifest says the data was drawn from ``seed`` (the course's)."""
    if manifest.get("seed") != seed:
        raise ReferenceDataError(f"the reference data was drawn from seed {manifest.get('seed')!r} but the course "
                                 f"says seed {seed}: regenerate it (python -m autograder generate)")


# the header ``np.save`` writes for a plain array; anything else goes through NumPy's own reader
_NPY_HEADER = re.compile(r"\{'descr': '([<>|=][A-Za-z][0-9]*)', 'fortran_order': (False|True), "
                         r"'shape': \(((?:[0-9]+, ?)*[0-9]*)\), \}\s*")


def _array(member):
    """One ``.npy`` member's array. The file's sha256 was checked, so the data is the generator's; this reads
    np.save's plain header without NumPy's general parser (ten times faster on thousands of small arrays)."""
    if member[:6] == b"\x93NUMPY" and member[6] == 1:
        (length,), start = struct.unpack("<H", member[8:10]), 10
        found = _NPY_HEADER.fullmatch(member[start:start + length].decode("latin1"))
        if found:
            descr, fortran, dims = found.groups()
            shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d)
            return np.frombuffer(member, dtype=descr, offset=start + length).reshape(
                shape, order="F" if fortran == "True" else "C").copy()
    return np.lib.format.read_array(io.BytesIO(member), allow_pickle=False)


_CENTRAL = struct.Struct("<4s6xH8xIIHHH8xI")      # a central directory entry: method, sizes, lengths, offset


def _members(content):
    """{name without .npy: a function giving its bytes} of a zip archive as ``np.savez_compressed`` writes it
    (stored or deflated members, no zip64), read from its central directory; anything else goes through
    ``zipfile``. A member is inflated only when asked for: the traces and the hints, most of the bytes, rarely
    are."""
    end = content.rfind(b"PK\x05\x06", max(0, len(content) - (1 << 16) - 22))
    if end >= 0:
        count, size, at = struct.unpack("<HII", content[end + 10:end + 20])
        members = {}
        for _ in range(count):
            signature, method, packed, _, name_length, extra_length, comment_length, offset = \
                _CENTRAL.unpack_from(content, at)
            name = content[at + 46:at + 46 + name_length].decode("utf-8")
            at += 46 + name_length + extra_length + comment_length
            local_name, local_extra = struct.unpack_from("<HH", content, offset + 26)
            start = offset + 30 + local_name + local_extra
            if (signature != b"PK\x01\x02" or method not in (0, 8) or content[offset:offset + 4] != b"PK\x03\x04"
                    or not name.endswith(".npy")):
                break
            members[name[:-4]] = functools.partial(_inflated if method == 8 else _stored, content, start, packed)
        else:
            return members
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {info.filename[:-4]: functools.partial(bytes, archive.read(info)) for info in archive.infolist()}


def _inflated(content, start, size):
    return zlib.decompress(content[start:start + size], -15)


def _stored(content, start, size):
    return content[start:start + size]


class Traces:
    """Per case, the solution's stored trace ``(meta, values)`` or None; read from the file when a case is
    first asked for (only a failing case is diagnosed, and the traces are most of a part's bytes)."""

    def __init__(self, count, metas, values):
        self._count, self._metas, self._values, self._read = count, metas, values, None

    def _all(self):
        if self._read is None:
            metas = json.loads(str(_array(self._metas()))) if self._metas is not None else {}
            self._read = [(metas[str(k)], _array(self._values[k]())) if str(k) in metas and k in self._values
                          else None for k in range(self._count)]
        return self._read

    def __len__(self):
        return self._count

    def __getitem__(self, k):
        return self._all()[k]


# the known mistake `grads[name] = …` for `+=`, stored for every parameter at once: each parameter's gradient is
# its own mistake (a cell may assign one and add the others)
ASSIGNED = "grads-assigned"


class Variants:
    """The ``(hint text, array)`` pairs of one output's known mistakes, read from the file when first iterated:
    only a case that fails is compared with them, and they are most of a part's arrays."""

    def __init__(self):
        self._members, self._pairs, self._ids = [], None, []

    def add(self, text, member, mistake=None):
        self._members.append((text, member))
        self._ids.append(mistake if mistake is not None else text)

    def __iter__(self):
        if self._pairs is None:
            self._pairs = [(text, _array(member())) for text, member in self._members]
        return iter(self._pairs)

    def __len__(self):
        return len(self._members)

    def texts(self):
        """The hint texts, without reading an array."""
        return [text for text, _ in self._members]

    def by_mistake(self):
        """``(mistake id, hint text, array)`` of each known mistake: two mistakes may share a hint's text."""
        return [(mistake, text, array) for mistake, (text, array) in zip(self._ids, self)]


def _read(content):
    members = _members(content)
    configs = json.loads(str(_array(members["__configs__"]())))
    hints = json.loads(str(_array(members["__hints__"]())))
    inputs, expected, variants = ([{} for _ in configs] for _ in range(3))
    trace_values = {}
    for key, member in members.items():
        if key.startswith("__"):
            continue
        k, kind, rest = (key.split(":", 2) + [""])[:3]          # k:trace has no name
        k = int(k)
        if kind == "trace":
            trace_values[k] = member
        elif kind == "hint":
            hint_id, name = rest.split(":", 1)
            variants[k].setdefault(name, Variants()).add(hints[hint_id], member, hint_id)
        elif kind == "in":
            inputs[k][rest] = _array(member())
        elif kind == "out":
            expected[k][rest] = _array(member())
    traces = Traces(len(configs), members.get("__traces__"), trace_values)
    return PartData(configs, inputs, expected, variants, traces)


def write_part(part_number, configs, inputs, expected, variants, hints, data_dir=DATA_DIR, traces=None):
    """Write one part's file. ``variants``: per case {hint id: {name: array}}; ``hints``: {hint id: text};
    ``traces``: per case (meta, values) or None."""
    traces = traces or [None] * len(configs)
    metas = {str(k): t[0] for k, t in enumerate(traces) if t is not None}
    arrays = {"__configs__": np.array(json.dumps(configs)), "__hints__": np.array(json.dumps(hints)),
              "__traces__": np.array(json.dumps(metas))}
    for k in range(len(configs)):
        if traces[k] is not None:
            arrays[f"{k}:trace"] = traces[k][1]
        arrays.update({f"{k}:in:{n}": v for n, v in inputs[k].items()})
        arrays.update({f"{k}:out:{n}": v for n, v in expected[k].items()})
        for hint_id, outputs in variants[k].items():
            arrays.update({f"{k}:hint:{hint_id}:{n}": v for n, v in outputs.items()})
    path = os.path.join(data_dir, file_name(part_number))
    np.savez_compressed(path, **arrays)
    return path


def seed_dir(seed):
    """Where this checkout keeps the reference data of a course drawn from ``seed`` other than the grader's own
    (``python -m autograder generate --config FILE``); a handout built for that course carries it as its
    ``data/``."""
    return os.path.join(DATA_DIR, f"seed-{seed}")


def hashes_module(files):
    """The text of ``reference_hashes.py`` for ``files`` ({file name: sha256})."""
    lines = [f"    {name!r}: {digest!r},\n" for name, digest in sorted(files.items())]
    return ('"""The sha256 of every reference data file, written by python -m autograder generate with '
            'data/manifest.json.\n\nThe grader checks the data against these too, so the data and its '
            'manifest cannot be rewritten together unnoticed."""\nFILES = {\n' + "".join(lines) + "}\n")


def write_manifest(seed, part_numbers, data_dir=DATA_DIR, generator="python -m autograder generate"):
    """The manifest and, for the grader's own data, the same sums as ``reference_hashes.py``."""
    files = {file_name(n): sha256(os.path.join(data_dir, file_name(n))) for n in part_numbers}
    with open(os.path.join(data_dir, MANIFEST), "w") as f:
        json.dump({"seed": seed, "generator": generator, "files": files}, f, indent=1)
        f.write("\n")
    if data_dir == DATA_DIR:
        with open(HASHES_MODULE, "w") as f:
            f.write(hashes_module(files))
