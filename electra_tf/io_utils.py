"""Small file helpers: JSON read with one-line errors, and writes that a crash never leaves
half-done (write a temporary file beside the target, then rename it over the target)."""

import json
import os
import shutil
from typing import Any, Callable, Dict, Optional, Tuple

from electra_tf.errors import UserError, disk_full_error, is_disk_full

CACHE_DIR_ENV = "ELECTRA_TF_CACHE_DIR"


def cache_dir() -> Optional[str]:
    """Where this project caches what is slow to compute and depends only on the machine and the
    code (tokenizer tables, a CPU's measured peak FLOP/s): $ELECTRA_TF_CACHE_DIR (set but empty:
    no disk cache), else $XDG_CACHE_HOME/electra_tf, else ~/.cache/electra_tf."""
    path = os.environ.get(CACHE_DIR_ENV)
    if path is not None:
        return path or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "electra_tf")


def read_cache_table(name: str) -> Tuple[Optional[str], Dict[str, Any]]:
    """(the path of `cache_dir()/name`, None without a disk cache; the JSON table in it, {} when
    missing or damaged: a damaged cache is measured again, never an error)."""
    directory = cache_dir()
    path = os.path.join(directory, name) if directory else None
    if not path or not os.path.exists(path):
        return path, {}
    try:
        return path, read_json(path)
    except Exception:
        return path, {}


def write_cache_table(path: Optional[str], table: Dict[str, Any]) -> None:
    """Writes a cache table back (nothing without a disk cache; a write error loses only the
    cache)."""
    if path:
        try:
            write_json(path, table)
        except OSError:
            pass


def parse_json(text: str, source: str) -> Any:
    """json.loads, with a syntax error as one line naming `source`, the line and the column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(
            f"{source}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None


def read_json(path: str) -> Any:
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    with open(path, encoding="utf-8") as f:
        return parse_json(f.read(), path)


def write_atomically(path: str, write: Callable[[Any], None], mode: str = "w") -> None:
    """Calls `write(file)` on a temporary file beside `path`, then renames it to `path`. A disk
    that is full (or a file-size limit) is a `UserError` naming `path`, which is left as it was."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if not is_disk_full(e):
            raise
        kept = f"{path} is as it was" if os.path.exists(path) else None
        raise disk_full_error(path, e, kept) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path: str, obj: Any) -> None:
    """Writes JSON atomically (sorted keys, indented)."""

    def write(f):
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")

    write_atomically(path, write)


def copy_file_atomically(src: str, dst: str) -> None:
    def write(f):
        with open(src, "rb") as source:
            shutil.copyfileobj(source, f)

    write_atomically(dst, write, mode="wb")
