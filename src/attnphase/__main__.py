"""`python -m attnphase` runs the command line."""

from attnphase.cli import main

main()
