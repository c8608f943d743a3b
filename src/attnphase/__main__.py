"""`python -m attnphase ...`: the same command line as the `attnphase` script."""

from attnphase.console import run

run()
