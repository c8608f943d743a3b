"""Progress of long work, shown on a terminal only.

Library code announces its stages with `task(description, total)` and advances them; nothing is shown
unless a command has switched display on with `shown(enabled)`. Every `attnphase` command switches it
on when stderr is a terminal and `--json` is not given (`attnphase.cli.common.json_option`), so piped
or JSON output stays clean, and the numeric layers never need a callback argument for it.

    with progress.task("alpha_c(omega)", total=len(omegas)) as bar:
        for omega in omegas:
            ...
            bar.advance(f"omega = {omega:g}")

Tasks nest: a task started inside another one gets its own line under it, and the lines of finished
tasks disappear, so a terminal shows what is running now. The bars are drawn by `rich` on stderr;
rich is imported only when a bar is actually shown.
"""

from __future__ import annotations

import contextvars
import sys
from contextlib import contextmanager

__all__ = ["shown", "task", "is_shown", "setting"]

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("attnphase_progress_shown", default=False)


def is_shown() -> bool:
    """Whether progress is displayed in the current context."""
    return _SHOWN.get()


def setting() -> bool | None:
    """What the enclosing `shown(...)` block decided (whether progress is displayed), or None where no block set it:
    a function that decides for itself when nothing was asked (`sweep.run_sweep`) follows its caller's block."""
    return _SHOWN.get(None)


@contextmanager
def shown(enabled: bool, *, terminal_only: bool = True):
    """Show progress bars of the work inside this block when `enabled` and stderr is a terminal.

    `terminal_only=False` draws them whatever stderr is (e.g. a notebook, where rich draws a widget; in a
    log file the final state of each bar is written once).
    """
    token = _SHOWN.set(bool(enabled) and (sys.stderr.isatty() or not terminal_only))
    try:
        yield
    finally:
        _SHOWN.reset(token)


class _Silent:
    def advance(self, note: str | None = None, amount: float = 1) -> None:
        pass


class _Display:
    """One rich `Progress` on stderr shared by all open tasks (rich allows one live display at a time)."""

    def __init__(self):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=sys.stderr)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[note]}", style="dim"),
            console=console, transient=console.is_terminal,  # on a terminal, finished bars disappear
        )
        self.open_tasks = 0

    def add(self, description: str, total: float | None):
        if self.open_tasks == 0:
            self.progress.start()
        self.open_tasks += 1
        return self.progress.add_task(description, total=total, note="")

    def remove(self, task_id) -> None:
        self.open_tasks -= 1
        if self.open_tasks == 0:
            self.progress.stop()  # before removing the task: off a terminal, the final state is written once
        self.progress.remove_task(task_id)


_DISPLAY: _Display | None = None


class _Bar:
    def __init__(self, display: _Display, description: str, total: float | None):
        self.display = display
        self.task_id = display.add(description, total)

    def advance(self, note: str | None = None, amount: float = 1) -> None:
        """Count `amount` steps as done; `note` (e.g. the current parameter) is shown after the bar."""
        changes = {"advance": amount}
        if note is not None:
            changes["note"] = note
        self.display.progress.update(self.task_id, **changes)

    def close(self) -> None:
        self.display.remove(self.task_id)


@contextmanager
def task(description: str, total: float | None = None):
    """A stage of work with `total` steps (None: unknown); yields an object with `advance(note, amount)`."""
    global _DISPLAY
    if not _SHOWN.get():
        yield _Silent()
        return
    if _DISPLAY is None or _DISPLAY.open_tasks == 0:  # a new display per outermost task: today's stderr
        _DISPLAY = _Display()
    bar = _Bar(_DISPLAY, description, total)
    try:
        yield bar
    finally:
        bar.close()
