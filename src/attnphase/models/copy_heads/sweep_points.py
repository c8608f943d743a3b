"""One copy-heads point of a parameter sweep (`attnphase sweep copy-heads`): the global minimum of the reduced action
and its losses at (attention, L, V, P) and any fields of `Convention`, with the check a sweep runs on every point
before computing any."""

from __future__ import annotations

import inspect

from attnphase.errors import ParameterError
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.homogeneous import solve_instance
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize, InstanceParameters

__all__ = ["check_sweep_point", "sweep_point"]


def _convention_fields_in_the_signature(function):
    """`function`, which takes the fields of `Convention` as **convention_fields, with a signature that names each
    field with its declared default (keyword-only). A sweep reads that signature: it checks --set names against it,
    fills the defaults into a point's key (`--set beta=1` is the point computed without it: one stored row) and reads
    a --set value as the declared type (bias=false a bool, linear_scale=1 the text '1'). Built from the declarations,
    so that the defaults are written once."""
    signature = inspect.signature(function)
    named = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    fields = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=field.default)
              for name, field in Convention.declarations().items()]
    function.__signature__ = signature.replace(parameters=[*named, *fields])
    return function


@_convention_fields_in_the_signature
def check_sweep_point(attention: str = "softmax", L: int = 16, V: int = 4, P: float = 100.0,
                      **convention_fields) -> None:
    """What `sweep_point` checks of its parameters, for a sweep to run on every point before computing any: every
    keyword besides attention, L, V and P must be a field of `Convention`."""
    fields = list(Convention.declarations())
    for name, value in convention_fields.items():
        if name not in fields:
            raise ParameterError(name, value, "one of the parameters copy-heads takes: attention, L, V, P, "
                                              + ", ".join(fields))
    InstanceParameters.validated(attention=attention, L=L, V=V, convention=Convention.validated(**convention_fields))
    DataSize.validated(P=P)


@_convention_fields_in_the_signature
def sweep_point(attention: str = "softmax", L: int = 16, V: int = 4, P: float = 100.0,
                **convention_fields) -> dict[str, float]:
    """One point of a parameter sweep: the global minimum, its losses and the solve's status (picklable, top level).
    Without a global minimum the point fails with the solve's message (a sweep records it and computes it again on
    its next run)."""
    check_sweep_point(attention, L, V, P, **convention_fields)
    convention = Convention(**convention_fields) if convention_fields else DEFAULT
    solved = solve_instance(CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention),
                            DataSize.validated(P=P).P)
    g = solved.global_minimum
    if g is None:
        raise RuntimeError(f"no global minimum at P = {P:g}: {solved.message}")
    return {"c_uniform": g.c_uniform, "c_copy": g.c_copy, "a_copy": g.a_copy, "action": g.action,
            "loss_mean_predictor": g.loss_mean_predictor, "loss_gibbs": g.loss_gibbs, "status": solved.status.value}
