"""Fixtures shared by the model tests."""

from __future__ import annotations

import pytest

from attnphase.models.signal_recovery import schedules


@pytest.fixture
def small_plan_budget(monkeypatch):
    """The signal-recovery planner's budget of drift evaluations cut from 100 000 to 5 000. Where its ODE cannot be
    integrated the planner spends the whole budget before it gives up (about 7 s at the default); how it gives up and
    what it says do not depend on the budget's size."""
    monkeypatch.setattr(schedules, "PLAN_EVALUATIONS", 5_000)
