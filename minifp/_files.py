"""Saving atomically: every file minifp writes (checkpoints, safetensors, .weights.h5) goes through here."""
from __future__ import annotations

import contextlib
import os
import re
import socket
import uuid
import zlib

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(path):
    """An open binary file beside `path` that replaces `path` only once the block ends without error (flushed
    and fsynced first); on any error it is removed and `path` stays as it was."""
    folder, name = os.path.split(os.path.abspath(path))
    space = _pid_space()
    _remove_abandoned(folder, name, space)
    temporary = os.path.join(folder, f".{name}.{space}-{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "xb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())           # on disk before it replaces the previous file
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


# A save killed outright (SIGKILL, the OOM killer) cannot remove its temporary, so a later save of the same
# target does. Each temporary is named after its writer, .{name}.{space}-{pid}.{uuid}.tmp: the PID space (this
# machine and, on Linux, its PID namespace: a container's) and the PID in it. A save removes only temporaries
# of its own PID space whose PID no longer exists: a live process's save, from any of its threads, is never
# touched, nor another machine's or container's, whose PIDs mean nothing here. A PID reused since only leaves
# the old temporary for a later save, which finds that PID gone too.


def _pid_space():
    """A short tag for where this process's PID means something: this machine and its PID namespace."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:                        # not Linux: the machine alone
        namespace = 0
    return f"{zlib.crc32(f'{socket.gethostname()}/{namespace}'.encode()):08x}"


def _remove_abandoned(folder, name, space):
    """Remove the temporaries of `name` in `folder` whose writer, a PID in PID space `space`, no longer exists."""
    pattern = re.compile(re.escape(f".{name}.{space}-") + r"(\d{1,9})\.[0-9a-f]{32}\.tmp")     # 9 digits: a pid_t
    with contextlib.suppress(OSError):             # a folder that cannot be listed: the save itself will say
        for entry in os.listdir(folder):
            match = pattern.fullmatch(entry)
            if match and not _alive(int(match[1])):
                with contextlib.suppress(OSError):     # another save removed it first
                    os.remove(os.path.join(folder, entry))


def _alive(pid):
    """Whether process `pid` exists (or may: where it cannot be checked, it counts as alive)."""
    if os.name != "posix":
        return True                        # Windows' os.kill(pid, 0) would send the process a Ctrl-C, not a check
    try:
        os.kill(pid, 0)                    # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:                        # PermissionError: it exists, as another user's
        return True
    return True
