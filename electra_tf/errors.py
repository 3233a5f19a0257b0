"""User-facing errors: one clear line, a non-zero exit, never a deep traceback."""

import errno
import os
import re
import sys
from typing import Callable, List, Optional, Sequence

# what a write that ran out of room says: ENOSPC (and EDQUOT) from the file system, EFBIG from a
# file-size limit; TensorFlow's file system layer puts the strerror text into its message
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
DISK_FULL_TEXTS = ("No space left on device", "File too large", "Disk quota exceeded")
# TensorFlow's errors about a file; a bare OpError is what its checkpoint reader raises for a
# checksum that does not match
_TF_FILE_ERRORS = {"NotFoundError", "PermissionDeniedError", "DataLossError"}
TRACEBACK_ENV = "ELECTRA_TF_TRACEBACK"  # set: the full traceback instead of the one line


MAX_LISTED = 12  # names shown in one error line before "... (N more)"


def listing(items: Sequence[str]) -> str:
    """`a, b, c, ... (N more)`: a long list of names cut to fit one error line."""
    more = len(items) - MAX_LISTED
    return ", ".join(items[:MAX_LISTED]) + (f", ... ({more} more)" if more > 0 else "")


def weight_problems(missing: Sequence[str], unexpected: Sequence[str], bad: Sequence[str],
                    noun: str) -> List[str]:  # fmt: skip
    """The parts of a "these weights do not fit" error: counts and listings of the missing and
    unexpected `noun`s (e.g. "tensor") and of the shape mismatches; empty when all fit."""
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing {noun}(s): {listing(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected {noun}(s): {listing(unexpected)}")
    if bad:
        problems.append(f"{len(bad)} shape mismatch(es): {listing(bad)}")
    return problems


class UserError(Exception):
    """A mistake in the user's input (file, flag, hparam, data); the message is shown as is."""


def is_disk_full(e: BaseException) -> bool:
    """Whether `e` (an OSError or a TensorFlow error) says that a write found no room."""
    if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
        return True
    return type(e).__module__.startswith("tensorflow") and any(t in str(e) for t in DISK_FULL_TEXTS)


def disk_full_error(path: str, e: BaseException, kept: Optional[str] = None) -> UserError:
    """The one line for a write of `path` that ran out of room; `kept`: what is still intact."""
    why = next((t for t in DISK_FULL_TEXTS if t in str(e)), DISK_FULL_TEXTS[0]).lower()
    message = f"{path}: {why} while writing it: free some space (or raise the limit) and re-run"
    return UserError(message + (f"; {kept}" if kept else ""))


def tf_message(e: BaseException) -> str:
    """A TensorFlow error's message in one line, without its op and function decorations."""
    text = re.sub(r"\{\{[^}]*\}\}", "", str(e))
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text, flags=re.S)
    text = re.sub(
        r"^\s*Error in user-defined function passed to .*? with iterator: \S+: ", "", text
    )
    text = re.sub(r"\s*\[\[[^\]]*\]\]", "", text)
    return " ".join(text.split())[:300]


def run_main(main: Callable[[], object]) -> None:
    """Runs `main`, turning a `UserError` into `error: <message>` on stderr and exit status 1, a
    write that found the disk full into one such line too, and Ctrl-C outside a training loop
    (which saves a checkpoint itself) into `interrupted` and exit status 130."""
    try:
        main()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:
        if is_disk_full(e):
            # a write not wrapped where it happens: name the file as the error does
            path = getattr(e, "filename", None) or str(e).split(";")[0].split("}}")[-1].strip()
            print(f"error: {disk_full_error(path, e)}", file=sys.stderr)
            sys.exit(1)
        line = file_error_line(e)
        if line is None or os.environ.get(TRACEBACK_ENV):
            raise
        print(f"error: {line} (set {TRACEBACK_ENV}=1 for the traceback)", file=sys.stderr)
        sys.exit(1)


def file_error_line(e: BaseException) -> Optional[str]:
    """A file that could not be read or written, not caught where it happened (a file missing,
    unreadable or damaged: TensorFlow's NotFound, PermissionDenied and DataLoss errors, and
    Python's OSError with a file name) as one line naming it; None for any other error."""
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or e}"
    names = {c.__name__ for c in type(e).__mro__}
    bare = type(e).__name__ == "OpError"
    if type(e).__module__.startswith("tensorflow") and (bare or names & _TF_FILE_ERRORS):
        return tf_message(e)
    return None
