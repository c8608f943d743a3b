"""Errors raised for bad input.

Every public entry point validates its parameters where they enter. A bad value raises
`ParameterError`, whose message names the parameter, the value given and the allowed range; the CLI
turns it into one line on stderr and exit status 2.
"""

from __future__ import annotations


class ParameterError(ValueError):
    """A parameter value outside its allowed range or of the wrong type."""

    def __init__(self, name: str, value: object, allowed: str):
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"invalid value for {name}: {value!r} (allowed: {allowed})")

    def __reduce__(self):
        # Sweeps run points in worker processes; the error must survive pickling back to the driver.
        return (type(self), (self.name, self.value, self.allowed))
