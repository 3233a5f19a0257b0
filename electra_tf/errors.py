"""User-facing errors: one clear line, a non-zero exit, never a deep traceback."""

import sys
from typing import Callable


class UserError(Exception):
    """A mistake in the user's input (file, flag, hparam, data); the message is shown as is."""


def run_main(main: Callable[[], object]) -> None:
    """Runs `main`, turning a `UserError` into `error: <message>` on stderr and exit status 1."""
    try:
        main()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
