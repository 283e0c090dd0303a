"""What a part's child is started with: one value, passed whole from the grade down to the launch.

    Limits(timeout=20.0, memory_mb=1024)       a part's wall-clock seconds and memory in MiB
    ChildSpec(root, limits, user=None, python=None, zygote=None, bytecode=None)

``root`` holds the ``mytorch`` the child imports; ``user`` is a pwd entry to run it as (Linux, as root);
``python`` the interpreter that runs it (None: the grader's own); ``zygote`` the submission's
``zygotes.Zygote`` to fork it from (Linux; None: a fresh Python), and ``bytecode`` what its compile child made
of the submission (``bytecode.compiled``), handed on to each part's child.

The limits every child has, whatever the part (``confinement`` applies them):
"""
import dataclasses

OUTPUT_LIMIT = 1 << 20          # what a child may print, and the size of any file it writes: 1 MiB
RESPONSE_LIMIT = 16 << 20       # the most the parent will read back
PROCESS_LIMIT = 128             # processes a child may start as the sandbox user (under --run-as; a job's, on Windows)
OPEN_FILES = 256                # files each of its processes may hold open: a memfd or a pipe holds memory
                                # that no address-space limit counts (each memfd at most OUTPUT_LIMIT)


@dataclasses.dataclass(frozen=True)
class Limits:
    timeout: float = 20.0       # seconds of wall-clock time for one part (and a second more of CPU time)
    memory_mb: int = 1024

    @property
    def cpu_seconds(self):
        """The child's soft limit on CPU seconds (RLIMIT_CPU; the hard one is a second more)."""
        return int(self.timeout) + 1


DEFAULT = Limits()


@dataclasses.dataclass(frozen=True)
class ChildSpec:
    root: str
    limits: Limits = DEFAULT
    user: object = None
    python: str = None
    zygote: object = None
    bytecode: bytes = None

    def spawned(self):
        """The same child, started as a fresh Python (no zygote, so none of its bytecode either)."""
        return dataclasses.replace(self, zygote=None, bytecode=None)

    def at(self, root, bytecode=None):
        """The same child on another folder's ``mytorch`` (with that folder's bytecode, if any)."""
        return dataclasses.replace(self, root=root, bytecode=bytecode)
