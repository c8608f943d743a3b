"""A child process that starts as a command typed at a terminal does, for the tests that signal one."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """`preexec_fn` of such a child: SIGINT and SIGTERM at their default actions and unblocked. A test runner's
    process can hand an ignored SIGINT down to its children (in the full suite the signalled commands ignored SIGINT
    in some runs and not others, while SIGTERM always reached them), and a command started that way never sees
    Ctrl-C, whatever the code does with it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
