"""The one message format between the grader and a child: a JSON header and raw array bytes, no compression.

    b"MYTORCH1" | header length (8 bytes, big-endian) | header (UTF-8 JSON) | the arrays' bytes, in header order

The header is ``{"meta": <any JSON>, "arrays": [[case, name, dtype, shape], ...]}``. The grader sends a part's
configs and inputs this way, and the child sends back its per-case reports and arrays. Nothing is compressed,
so what is read is what is decoded: ``decode`` checks the header's size, the number of arrays, every dtype
and shape against an allow-list, and that the declared sizes add up to exactly the bytes received, before it
makes a single array. Malformed input raises ``FrameError``, and nothing else.

Stdlib, NumPy and nothing of the grader: the child loads this file by path, the grader imports it.
"""
import json
import struct

import numpy as np

MAGIC = b"MYTORCH1"
HEADER_LIMIT = 1 << 20           # the JSON header: reports, names, shapes
ARRAY_LIMIT = 4096               # arrays in one message
NDIM_LIMIT = 8
# plain numbers only, in one byte order: no objects, strings, structured or complex dtypes
DTYPES = {np.dtype(t).str for t in ("f8", "f4", "f2", "i8", "i4", "i2", "i1", "u8", "u4", "u2", "u1", "?")}


class FrameError(ValueError):
    """The bytes are not a well-formed message within the limits."""


def encode(meta, arrays):
    """Bytes of one message. ``arrays``: ``{(case, name): ndarray}`` of allowed dtypes (others are converted)."""
    entries, blobs = [], []
    for (case, name), value in arrays.items():
        value = np.ascontiguousarray(value)
        if value.dtype.str not in DTYPES:                 # e.g. big-endian: same numbers, our byte order
            value = value.astype(value.dtype.newbyteorder("<"))
        if value.dtype.str not in DTYPES:                 # e.g. float128: the widest allowed type of its kind
            value = value.astype({"f": "<f8", "i": "<i8", "u": "<u8", "b": "?"}[value.dtype.kind])
        entries.append([int(case), str(name), value.dtype.str, list(value.shape)])
        blobs.append(value.tobytes())
    header = json.dumps({"meta": meta, "arrays": entries}).encode("utf-8")
    return b"".join([MAGIC, struct.pack(">Q", len(header)), header] + blobs)


def _shape(shape):
    if not isinstance(shape, list) or len(shape) > NDIM_LIMIT:
        raise FrameError("an array has a malformed shape")
    if not all(type(d) is int and d >= 0 for d in shape):
        raise FrameError("an array has a malformed shape")
    return tuple(shape)


def decode(data, cases=None):
    """``(meta, {(case, name): ndarray})`` from one message's bytes, checked; raises FrameError."""
    data = memoryview(data)
    if len(data) < len(MAGIC) + 8 or bytes(data[:len(MAGIC)]) != MAGIC:
        raise FrameError("it is not a grader message")
    (length,) = struct.unpack(">Q", data[len(MAGIC):len(MAGIC) + 8])
    start = len(MAGIC) + 8
    if length > HEADER_LIMIT or start + length > len(data):
        raise FrameError("its header is too long or cut short")
    try:
        header = json.loads(bytes(data[start:start + length]).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise FrameError(f"its header is not JSON ({type(error).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise FrameError("its header is malformed")
    entries = header["arrays"]
    if len(entries) > ARRAY_LIMIT:
        raise FrameError(f"it holds more than {ARRAY_LIMIT} arrays")
    layout, offset = [], start + length
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 4 and type(entry[0]) is int and isinstance(entry[1], str)
                and isinstance(entry[2], str)):
            raise FrameError("an array entry is malformed")
        case, name, dtype, shape = entry[0], entry[1], entry[2], _shape(entry[3])
        if cases is not None and not 0 <= case < cases:
            raise FrameError("an array names a case that does not exist")
        if dtype not in DTYPES:
            raise FrameError("an array has a dtype that is not a plain number type")
        size = np.dtype(dtype).itemsize
        for d in shape:
            size *= d                                     # Python integers: no overflow
        if size > len(data) - offset:
            raise FrameError("the arrays' declared sizes exceed what was sent")
        layout.append((case, name, dtype, shape, offset, size))
        offset += size
    if offset != len(data):
        raise FrameError("bytes follow the last array")
    arrays = {}
    for case, name, dtype, shape, at, size in layout:
        arrays[(case, name)] = np.frombuffer(data[at:at + size], dtype=dtype).reshape(shape).copy()
    return header.get("meta"), arrays
