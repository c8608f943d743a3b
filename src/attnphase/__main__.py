"""`python -m attnphase ...`: the same command line as the `attnphase` script."""

from attnphase.cli import main

main()
