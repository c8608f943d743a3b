"""Each model's derivation page against the code: the checked-in file is the rendered document, and every
rendered equation, with its names substituted back, equals the expression the solvers compile (symbolically
where SymPy decides it, else at random points to 30 digits; derive.equivalence). A page cannot drift from
the code without one of these failing."""

from pathlib import Path

import pytest
import sympy

from attnphase.derive.equivalence import check_document
from attnphase.models import derivation_filename, load_model, model_names

DERIVATIONS = Path(__file__).resolve().parents[2] / "derivations"


def assert_every_equation_equals_its_reference(document):
    checks = check_document(document)
    failed = [check.message for check in checks if not check.success]
    assert not failed, "\n".join(failed)
    assert len(checks) >= 8


def names_in(expr):
    expr = sympy.sympify(expr)
    return expr.free_symbols | {application.func for application in expr.atoms(sympy.Function)}


def assert_every_equation_is_checked(document):
    """Each equation has a reference, or defines a name that a checked equation uses (directly or through
    other names): nothing on the page escapes the comparison with the code."""
    used, frontier = set(), [e.shown for e in document.equations if e.reference is not None]
    while frontier:
        for name in names_in(frontier.pop()) & set(document.definitions) - used:
            used.add(name)
            frontier.append(document.definitions[name].body)
    unchecked = [e.lhs for e in document.equations if e.reference is None and e.defines not in used]
    assert not unchecked, f"equations with nothing to check them: {unchecked}"


@pytest.mark.parametrize("name", model_names())
def test_the_checked_in_page_is_the_rendered_document(name):
    assert (DERIVATIONS / derivation_filename(name)).read_text() == load_model(name).derivation_markdown()


@pytest.mark.parametrize("name", model_names())
def test_every_models_equations_equal_the_compiled_expressions(name):
    """Every registered model, one added later included (docs/adding-a-model.md): its derivation module's
    `derivation_document()`, every equation against its reference, and none left without one. Written once per model,
    a new model's page was not checked at all: a sign error in it passed every test."""
    document = load_model(name).derivation_document()
    assert_every_equation_equals_its_reference(document)
    assert_every_equation_is_checked(document)


def test_the_positional_semantic_page_is_written_for_any_number_of_tokens():
    """The page is checked at L = 2 (above) and its text does not depend on the size it is checked at."""
    from attnphase.models.positional_semantic import derivation

    assert derivation.derivation_document(3).text() == derivation.derivation_document(2).text()


@pytest.mark.slow
def test_positional_semantic_equations_equal_the_compiled_expressions_at_three_tokens():
    from attnphase.models.positional_semantic import derivation

    assert_every_equation_equals_its_reference(derivation.derivation_document(3))


def test_the_copy_heads_page_writes_the_exact_action_in_latex():
    """The exact action and its kernel form are LaTeX, not plain text."""
    from attnphase.models.copy_heads import derivation

    assert r"\log\det\left(I + \tau \beta M\right)" in derivation.derivation_document().text()


def test_a_page_that_no_longer_matches_the_compiled_expression_fails(monkeypatch):
    """Change what the solvers compile by one part in 10^20: the equations that show it fail."""
    from attnphase.models.potts import derivation
    from attnphase.models.potts import symbolic

    monkeypatch.setattr(symbolic, "free_energy", symbolic.free_energy * (1 + sympy.Rational(1, 10**20)))
    checks = check_document(derivation.derivation_document())
    failed = {check.equation for check in checks if not check.success}
    assert failed == {"f", "f(u)", r"\frac{\partial f}{\partial u}"}


def test_a_positional_semantic_page_that_drifts_fails(monkeypatch):
    """An edit of the loss the solvers compile reaches the Moreau objective and its derivatives, which are built from
    it: exactly those four equations fail."""
    from attnphase.models.positional_semantic import derivation
    from attnphase.models.positional_semantic import symbolic

    # the objective and its derivatives are cached per process: emptied before, so that they are built from the edited
    # loss whatever ran earlier, and after, so that no later test sees them
    built_from_the_loss = (symbolic.moreau_objective, symbolic.moreau_gradient, symbolic.moreau_hessian)
    compiled = symbolic.per_sample_loss
    monkeypatch.setattr(symbolic, "per_sample_loss", lambda L: compiled(L).subs(symbolic.omega, symbolic.omega**2))
    for cached in built_from_the_loss:
        cached.cache_clear()
    try:
        failed = [check.equation for check in check_document(derivation.derivation_document(2)) if not check.success]
    finally:
        for cached in built_from_the_loss:
            cached.cache_clear()
    objective = r"\mathcal{E}(h; \omega, h^*)"
    assert failed == [r"\ell(h, h^*)", objective, r"\frac{\partial}{\partial h_{i}} " + objective,
                      r"\frac{\partial^{2}}{\partial h_{i}\partial h_{j}} " + objective]
