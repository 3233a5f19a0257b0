"""One writer per directory: a lock file naming the process that holds it.

The lock file (`run_dir.LOCK_FILE` in a run directory, `layout.LOCK_FILE` in a dataset) holds
the holder's pid, host, start time and command line, as JSON. It is created with
O_CREAT|O_EXCL where the file system offers no locks, and held with `fcntl.flock` where it does:
the kernel releases that when the process dies, even by kill -9, so that a lock left by a dead
process is found free and taken over (saying whose it was). A lock file of another host is not
taken over unless its holder is known to be gone (the flock is free and the file says its host;
a host cannot tell whether a process of another is alive): the message says how to remove it.
Re-entrant within a process; released (the file removed) at exit, or by `release`.
"""

import atexit
import datetime
import json
import os
import socket
import sys
from typing import Dict, Optional

from electra_tf.errors import UserError

try:
    import fcntl
except ImportError:  # not POSIX: the file's existence is the lock
    fcntl = None

_held: Dict[str, "RunLock"] = {}


def _start_ticks(pid: int) -> Optional[str]:
    """A process's start time in clock ticks after boot (Linux), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(info: dict) -> bool:
    """Whether the process a lock file names runs on this host (same pid and start time)."""
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, someone else's
    ticks = _start_ticks(pid)
    return ticks is None or info.get("start_ticks") in (None, ticks)


def _read(fd: int) -> Optional[dict]:
    """The lock file's JSON (None if empty or unreadable: a holder killed while writing it)."""
    size = os.fstat(fd).st_size
    try:
        info = json.loads(os.pread(fd, size, 0).decode("utf-8")) if size else None
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def _read_path(path: str) -> Optional[dict]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return _read(fd)
    finally:
        os.close(fd)


def _announce(path: str, other: Optional[dict], me: dict, log) -> None:
    if other is not None:
        log(
            f"taking over the lock of {os.path.dirname(path)} left by {_describe(other)}, "
            "which is no longer running"
        )


def _describe(info: dict) -> str:
    command = info.get("command")
    shown = f", {command}" if command else ""
    return f"pid {info.get('pid')} on {info.get('host')} (since {info.get('started')}{shown})"


class RunLock:
    """The lock of one directory, held by this process.

    Args:
        path: the lock file.
        what: what the directory is, for messages ("run directory", "dataset").

    Example:
        lock = RunLock.acquire("runs/demo/models/m/run.lock", "run directory")
        ...
        lock.release()
    """

    def __init__(self, path: str, what: str, fd: Optional[int]):
        self.path, self.what, self._fd, self._count = path, what, fd, 1

    @classmethod
    def acquire(cls, path: str, what: str = "run directory", log=print) -> "RunLock":
        """Takes the lock, or raises a `UserError` naming the live process that holds it."""
        key = os.path.realpath(path)
        if key in _held:
            _held[key]._count += 1
            return _held[key]
        os.makedirs(os.path.dirname(key), exist_ok=True)
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "start_ticks": _start_ticks(os.getpid()),
            "command": " ".join(
                os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)
            ),
        }
        fd = cls._take(key, what, me, log)
        lock = _held[key] = cls(key, what, fd)
        atexit.register(lock._release_all)
        return lock

    @staticmethod
    def _take(path: str, what: str, me: dict, log) -> Optional[int]:
        directory = os.path.dirname(path)
        for _ in range(10):  # retried when the file changes under us
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | (0 if fcntl else os.O_EXCL), 0o644)
            except FileExistsError:  # no flock: the file is the lock; is its holder alive?
                fd = os.open(path, os.O_RDWR)
                if not _alive(_read(fd) or {}):
                    os.close(fd)
                    _announce(path, _read_path(path), me, log)
                    os.remove(path)
                    continue
            locked = fcntl is None
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                except BlockingIOError:
                    pass
                try:  # the holder removed the file after we opened it: open the new one
                    if os.fstat(fd).st_ino != os.stat(path).st_ino:
                        os.close(fd)
                        continue
                except FileNotFoundError:
                    os.close(fd)
                    continue
            other = _read(fd)
            if not locked:
                os.close(fd)
                held = _describe(other) if isinstance(other, dict) else "another process"
                raise UserError(
                    f"{directory}: this {what} is in use by {held}: wait for it to finish or "
                    "stop it (one process writes a directory at a time)"
                )
            if isinstance(other, dict) and (other.get("pid"), other.get("start_ticks")) != (
                me["pid"],
                me["start_ticks"],
            ):
                if other.get("host") != me["host"]:
                    os.close(fd)
                    raise UserError(
                        f"{directory}: this {what} is locked by {_describe(other)}, another "
                        f"host, which cannot be checked from here: if that process is gone, "
                        f"remove {path} and re-run"
                    )
                if _alive(other):
                    os.close(fd)
                    raise UserError(
                        f"{directory}: this {what} is in use by {_describe(other)}: wait for it "
                        "to finish or stop it (one process writes a directory at a time)"
                    )
                _announce(path, other, me, log)
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode("utf-8"), 0)
            os.fsync(fd)
            return fd
        raise UserError(f"{path}: the lock file keeps changing; is another process starting?")

    def release(self) -> None:
        """Gives the lock up (once per `acquire` in this process); the last one removes it."""
        self._count -= 1
        if self._count <= 0:
            self._release_all()

    def _release_all(self) -> None:
        if _held.get(self.path) is not self:
            return
        del _held[self.path]
        try:
            os.remove(self.path)  # while still holding it: a waiter re-opens the new file
        except FileNotFoundError:
            pass
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
