"""The `attnphase` program: the console script and `python -m attnphase` start here.

Importing the command line takes a few tenths of a second (click, numpy). A Ctrl-C or SIGTERM in that time ended the
program with a KeyboardInterrupt traceback; it now ends it with one line and the exit status a signal gives (130,
143), whatever the imports were doing when it came. Once the command line is imported, SIGINT raises
KeyboardInterrupt again and `cli.groups.GuardedGroup` handles both signals for the command, saying what its
interruption keeps.

This module imports nothing of attnphase at its top, so the handlers are in place before the command line loads.
"""

from __future__ import annotations

import os
import signal
import sys

_STARTING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stopped_while_starting(signum, frame) -> None:
    word = "interrupted" if signum == signal.SIGINT else "terminated"
    sys.stderr.write(f"{word} while starting: nothing was computed\n")
    sys.stderr.flush()
    # Not sys.exit: its SystemExit is raised wherever the imports have got to, and Python drops an exception raised in
    # a weakref callback (importlib's module locks have one) or wraps it in another inside __set_name__, so the
    # program went on to run the command, or ended with a traceback. Nothing needs cleaning up yet.
    os._exit(128 + signum)


def run() -> None:
    """Load the command line with the start-up handlers in place, then run it with the handlers it found (a signal
    ignored on entry, as under nohup, stays ignored throughout)."""
    found = {number: signal.getsignal(number) for number in _STARTING_SIGNALS}
    for number, handler in found.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, _stopped_while_starting)
    from attnphase.cli import main

    for number, handler in found.items():
        signal.signal(number, signal.SIG_DFL if handler is None else handler)
    main()
