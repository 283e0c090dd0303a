"""Unpacking a handed-in archive (``handin.tar``, a zip) without trusting it.

Bounded: at most MEMBERS entries, BYTES bytes actually written (counted while decompressing, whatever the
archive declares) and SECONDS of work. Refused, with the member named: absolute paths, '..', links, devices
and anything else that is neither a regular file nor a folder, and a name given twice. Files are created
fresh (``O_EXCL | O_NOFOLLOW``) in a folder the caller made for this alone; the caller removes it.
"""
import os
import stat
import tarfile
import time
import zipfile

MEMBERS = 2000
BYTES = 64 << 20
SECONDS = 30.0
CHUNK = 1 << 16


class UnpackError(Exception):
    """The archive breaks a rule or a limit; the message says which."""


class _Budget:
    def __init__(self):
        self.members, self.bytes, self.deadline = 0, 0, time.monotonic() + SECONDS

    def member(self):
        self.members += 1
        if self.members > MEMBERS:
            raise UnpackError(f"it holds more than {MEMBERS} files")
        self.tick()

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
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise UnpackError(f"the member {os.path.basename(path)!r} is given twice") from None
    with os.fdopen(fd, "wb") as out:
        while True:
            block = source.read(CHUNK)
            if not block:
                return
            budget.tick(len(block))
            out.write(block)


def unpack(path, destination):
    """Unpack the tar (plain or compressed) or zip at ``path`` into the folder ``destination``."""
    budget = _Budget()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > MEMBERS:
                raise UnpackError(f"it holds more than {MEMBERS} files")
            for info in members:
                budget.member()
                target = _target(destination, info.filename)
                kind = stat.S_IFMT(info.external_attr >> 16)          # 0 when the zip does not say
                if info.is_dir():
                    os.makedirs(target, exist_ok=True)
                elif kind and kind != stat.S_IFREG:
                    raise UnpackError(f"the member {info.filename!r} is a link or a special file")
                else:
                    with archive.open(info) as source:
                        _write(target, source, budget)
        return
    with tarfile.open(path, "r:*") as archive:
        while True:
            member = archive.next()
            if member is None:
                return
            budget.member()
            target = _target(destination, member.name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.isfile():
                _write(target, archive.extractfile(member), budget)
            else:
                raise UnpackError(f"the member {member.name!r} is a link or a special file")
