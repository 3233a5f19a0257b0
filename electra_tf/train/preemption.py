"""Stopping cleanly on SIGTERM (preemption) and SIGINT (Ctrl-C): the loop checks the flag after
each call of the step function, saves a checkpoint and exits with status 128 + the signal's
number (143, 130). A second Ctrl-C stops at once (KeyboardInterrupt), without saving: the last
checkpoint saved is what a re-run resumes from."""

import signal
import threading


class StopSignal:
    """A context manager recording `signals` (default SIGTERM) while it is active (main thread
    only: Python delivers signals there; elsewhere it records nothing).

    Example:
        with StopSignal() as stop:
            while training:
                ...
                if stop.received is not None:
                    break
    """

    def __init__(self, signals=(signal.SIGTERM,)):
        self.signals = tuple(signals)
        self.received = None
        self._previous = {}

    def _handler(self, signum, frame):
        if signum == signal.SIGINT and self.received == signal.SIGINT:
            raise KeyboardInterrupt  # Ctrl-C twice: the user does not want to wait
        self.received = signum

    def __enter__(self) -> "StopSignal":
        if threading.current_thread() is threading.main_thread():
            for s in self.signals:
                self._previous[s] = signal.getsignal(s)
                signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
