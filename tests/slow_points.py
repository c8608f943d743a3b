"""Sweep point functions for the tests of sweeps (not a test module): importable by worker processes,
which inherit the test process's sys.path."""

from __future__ import annotations

import os
import time


def sleepy_point(x: float, seconds: float = 0.3) -> dict:
    """Takes `seconds`, returns its input and the process that computed it."""
    time.sleep(seconds)
    return {"x": x, "pid": os.getpid()}
