"""Unpacking a handed-in archive (``handin.tar``, a zip) without trusting it.

The archive is read once into memory (at most ARCHIVE_BYTES), so nothing can change it between the checks
and the unpacking. Its format comes from its own first bytes alone: a zip's local header ``PK\\3\\4``, the
gzip, bzip2 or xz magic of a compressed tar, or a plain tar's first header with a valid checksum; never from
its name, and never from a signature searched for inside it (a tar whose last member is a ``.npz``, itself a
zip, is a tar).

Before ``tarfile`` or ``zipfile`` parse anything, a reader of our own checks the structure, holding at most
one header in memory:

* a tar, decompressed as a stream: at most MEMBERS members; each pax or GNU long-name header at most
  HEADER_BYTES and all of them HEADERS_TOTAL (``tarfile`` reads such a header whole, so a pax header declaring
  gigabytes is refused after its first 512 bytes); at most EXTENSIONS of them in a row (``tarfile`` recurses
  through them); no pax ``size`` (a header's own size field suffices below BYTES) and no sparse members; the
  data of all members at most BYTES. It skips data exactly where ``tarfile`` does.
* a zip: its end record, read directly: at most MEMBERS entries, a central directory of at most
  DIRECTORY_BYTES, no zip64.

Then unpacking is bounded as before: MEMBERS entries, BYTES bytes written (counted while decompressing,
whatever the archive declares) and SECONDS of work in all, checks included. Refused, with the member named:
absolute paths, '..', links, devices and anything else that is neither a regular file nor a folder, and a
name given twice. Files are created fresh (``O_EXCL | O_NOFOLLOW``) in a folder the caller made for this
alone; the caller removes it. Memory: the archive, one header, one CHUNK, and what ``tarfile``/``zipfile``
keep per member (bounded by the limits above).
"""
import bz2
import gzip
import io
import lzma
import os
import stat
import struct
import tarfile
import time
import zipfile

from autograder.sandbox import system

MEMBERS = 2000                   # files and folders, those a member's path makes included
DEPTH = 16                       # folders a member may lie in (a handin: mytorch/nn/x.py, in a few more)
BYTES = 64 << 20
ARCHIVE_BYTES = BYTES            # the archive file itself
HEADER_BYTES = 16 << 10          # one pax or GNU long-name header
HEADERS_TOTAL = 1 << 20          # all of them
EXTENSIONS = 8                   # extension headers in a row before a member
DIRECTORY_BYTES = 4 << 20        # a zip's central directory
SECONDS = 30.0
CHUNK = 1 << 16

_MAGIC = {b"\x1f\x8b": "gz", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz"}
_OPEN = {"gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"), "bz2": bz2.BZ2File, "xz": lzma.LZMAFile,
         "tar": lambda f: f}
_EXTENSION = {b"x", b"g", b"X", b"L", b"K"}            # pax (local, global, Solaris), GNU long name and link
_NO_DATA = {b"1", b"2", b"3", b"4", b"5", b"6"}        # link, symlink, devices, folder, FIFO: tarfile skips nothing


class UnpackError(Exception):
    """The archive breaks a rule or a limit; the message says which."""


class _Budget:
    def __init__(self):
        self.members, self.bytes, self.deadline = 0, 0, time.monotonic() + SECONDS
        self.folders = set()

    def member(self):
        self.members += 1
        if self.members > MEMBERS:
            raise UnpackError(f"it holds more than {MEMBERS} files and folders")
        self.tick()

    def place(self, destination, name):
        """Where member ``name`` goes, each folder its path makes counted as a member (an archive of empty
        folders, thousands deep, would otherwise fill the disk within the byte budget)."""
        target = _target(destination, name)
        relative = os.path.relpath(target, destination).split(os.sep)
        if len(relative) > DEPTH:
            raise UnpackError(f"the member {name[:100]!r} lies more than {DEPTH} folders deep")
        for k in range(1, len(relative)):
            folder = os.sep.join(relative[:k])
            if folder not in self.folders:
                self.folders.add(folder)
                self.member()
        return target

    def tick(self, written=0):
        self.bytes += written
        if self.bytes > BYTES:
            raise UnpackError(f"it unpacks to more than {BYTES >> 20} MiB")
        if time.monotonic() > self.deadline:
            raise UnpackError(f"unpacking it took more than {SECONDS:g} s")


def _target(destination, name):
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or "\x00" in name or (len(name) > 1 and name[1] == ":"):
        raise UnpackError(f"the member {name!r} points outside the submission")
    parts = [p for p in parts if p not in ("", ".")]
    return os.path.join(destination, *parts) if parts else destination


def _write(path, source, budget):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = os.open(path, system.CREATE_NEW, 0o644)
    except FileExistsError:
        raise UnpackError(f"the member {os.path.basename(path)!r} is given twice") from None
    with os.fdopen(fd, "wb") as out:
        while True:
            block = source.read(CHUNK)
            if not block:
                return
            budget.tick(len(block))
            out.write(block)


def _read_archive(path):
    fd = os.open(path, system.READ_ONLY)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnpackError("it is not a regular file")
        data = f.read(ARCHIVE_BYTES + 1)
    if len(data) > ARCHIVE_BYTES:
        raise UnpackError(f"the archive is larger than {ARCHIVE_BYTES >> 20} MiB")
    return data


def _is_tar_header(block):
    """A 512-byte block whose checksum field matches its bytes (as tarfile computes it)."""
    if len(block) < 512:
        return False
    try:
        declared = int(block[148:156].replace(b"\x00", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    plain = 256 + sum(block[:148]) + sum(block[156:512])
    signed = 256 + sum(struct.unpack("148b", block[:148])) + sum(struct.unpack("356b", block[156:512]))
    return declared in (plain, signed)


def kind(data):
    """'zip', 'tar', 'gz', 'bz2' or 'xz', from the first bytes of ``data`` alone."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    for magic, name in _MAGIC.items():
        if data.startswith(magic):
            return name
    if _is_tar_header(data[:512]):
        return "tar"
    raise UnpackError("it is neither a tar (plain, gzip, bzip2 or xz) nor a zip archive")


def _size(field):
    """A tar numeric field: octal text, or base-256 when its first byte has the high bit set."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return -((1 << (8 * len(field) - 8)) - value) if field[:1] == b"\xff" else value
    text = field.replace(b"\x00", b" ").strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise UnpackError("a tar header is damaged (its size is not a number)") from None


def _read(stream, size, budget):
    """Exactly ``size`` bytes of ``stream`` (fewer at its end), read CHUNK at a time."""
    parts, left = [], size
    while left > 0:
        block = stream.read(min(CHUNK, left))
        if not block:
            break
        parts.append(block)
        left -= len(block)
        budget.tick()
    return b"".join(parts)


def _skip(stream, size, budget):
    left = size
    while left > 0:
        block = stream.read(min(CHUNK, left))
        if not block:
            return
        left -= len(block)
        budget.tick()


def check_tar(stream, budget):
    """Walk the tar headers of ``stream`` as ``tarfile`` will, refusing what breaks a limit (see above)."""
    members = extensions = headers_total = data_total = 0
    while True:
        block = _read(stream, 512, budget)
        if len(block) < 512 or block == bytes(512):
            return
        if not _is_tar_header(block):
            raise UnpackError("a tar header is damaged (bad checksum)")
        size, kind_ = _size(block[124:136]), block[156:157]
        if size < 0:
            raise UnpackError("a tar header is damaged (a negative size)")
        padded = -(-size // 512) * 512
        if kind_ in _EXTENSION:
            extensions += 1
            headers_total += size
            if size > HEADER_BYTES or headers_total > HEADERS_TOTAL:
                raise UnpackError(f"a tar extended header holds {size} bytes (at most {HEADER_BYTES >> 10} KiB "
                                  f"each, {HEADERS_TOTAL >> 20} MiB in all)")
            if extensions > EXTENSIONS:
                raise UnpackError(f"more than {EXTENSIONS} tar extended headers in a row")
            content = _read(stream, padded, budget)[:size]
            if kind_ in (b"x", b"g", b"X") and (b" size=" in content or b"GNU.sparse" in content):
                raise UnpackError("a tar extended header sets a size or a sparse file (not accepted)")
            continue
        extensions = 0
        members += 1
        if members > MEMBERS:
            raise UnpackError(f"it holds more than {MEMBERS} files and folders")
        if kind_ == b"S":
            raise UnpackError("a sparse tar member (not accepted)")
        name = block[:100].split(b"\x00", 1)[0]
        if kind_ in _NO_DATA or (kind_ in (b"\x00", b"") and name.endswith(b"/")):
            continue                                      # tarfile reads no data after these
        data_total += size
        if data_total > BYTES:
            raise UnpackError(f"it unpacks to more than {BYTES >> 20} MiB")
        _skip(stream, padded, budget)


def check_zip(data):
    """The end record of the zip ``data``: entries, central directory size, no zip64."""
    tail = data[-(22 + 65535):]
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise UnpackError("it is not a complete zip archive (no end record)")
    if at >= 20 and tail[at - 20:at - 16] == b"PK\x06\x07":
        raise UnpackError("it is a zip64 archive (not accepted)")
    _, _, _, entries, directory, offset, _ = struct.unpack("<HHHHIIH", tail[at + 4:at + 22])
    if entries > MEMBERS:
        raise UnpackError(f"it holds more than {MEMBERS} files and folders")
    if directory > DIRECTORY_BYTES:
        raise UnpackError(f"its list of files is larger than {DIRECTORY_BYTES >> 20} MiB")


def unpack(path, destination):
    """Unpack the tar (plain or compressed) or zip at ``path`` into the folder ``destination``."""
    budget = _Budget()
    data = _read_archive(path)
    what = kind(data)
    if what == "zip":
        check_zip(data)
        _unpack_zip(io.BytesIO(data), destination, budget)
        return
    with _OPEN[what](io.BytesIO(data)) as stream:
        if not _is_tar_header(_read(stream, 512, budget)):
            raise UnpackError(f"it is a {what}-compressed file but not a tar archive")
    with _OPEN[what](io.BytesIO(data)) as stream:
        check_tar(stream, budget)
    _unpack_tar(io.BytesIO(data), "r:" if what == "tar" else f"r:{what}", destination, budget)


def _unpack_zip(fileobj, destination, budget):
    with zipfile.ZipFile(fileobj) as archive:
        members = archive.infolist()
        if len(members) > MEMBERS:
            raise UnpackError(f"it holds more than {MEMBERS} files and folders")
        for info in members:
            budget.member()
            target = budget.place(destination, info.filename)
            kind_ = stat.S_IFMT(info.external_attr >> 16)          # 0 when the zip does not say
            if info.is_dir():
                os.makedirs(target, exist_ok=True)
            elif kind_ and kind_ != stat.S_IFREG:
                raise UnpackError(f"the member {info.filename!r} is a link or a special file")
            else:
                with archive.open(info) as source:
                    _write(target, source, budget)


def _unpack_tar(fileobj, mode, destination, budget):
    with tarfile.open(fileobj=fileobj, mode=mode) as archive:
        while True:
            member = archive.next()
            if member is None:
                return
            budget.member()
            target = budget.place(destination, member.name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.isfile():
                _write(target, archive.extractfile(member), budget)
            else:
                raise UnpackError(f"the member {member.name!r} is a link or a special file")
