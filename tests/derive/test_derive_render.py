"""Rendering: exact expected text, declared LaTeX names, and determinism across processes."""

import os
import subprocess
import sys

import pytest
import sympy

from attnphase.derive.render import MarkdownDocument, latex
from attnphase.derive.symbols import Domain, parameter
from attnphase.errors import ParameterError

SCRIPT = r'''
import sympy
from attnphase.derive.render import MarkdownDocument
from attnphase.derive.symbols import Domain, parameter
beta = parameter("beta_render", Domain.positive(), latex=r"\beta")
x, y, z = sympy.symbols("x y z", real=True)
doc = MarkdownDocument("Derivation")
doc.heading("Free energy", 2)
doc.paragraph("The free energy is")
f = beta * x**2 / 2 - sympy.log(sympy.cosh(beta * x)) + sympy.exp(z + y + x)
doc.equation("f(x)", f, label="1")
doc.table(["term", "value"], [["quadratic", beta * x**2 / 2], ["count", 3]])
print(doc.text(), end="")
'''


def render_in_fresh_process(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_rendering_is_identical_across_processes_with_different_hash_seeds():
    # Term order must be SymPy's canonical order, not insertion or hash order (z + y + x is printed
    # as x + y + z whatever the hash seed).
    first, second = render_in_fresh_process("1"), render_in_fresh_process("12345")
    assert first == second
    assert "e^{x + y + z}" in first
    assert first.startswith("# Derivation\n\n## Free energy\n\nThe free energy is\n\n$$\nf(x) = ")
    assert r"\beta" in first and r"\tag{1}" in first and "| quadratic | $\\frac{\\beta x^{2}}{2}$ |" in first
    assert first.endswith("| count | 3 |\n")


def test_exact_markdown_text():
    gamma = parameter("gamma_render", Domain.positive(), latex=r"\gamma")
    m = sympy.Symbol("m", real=True)
    doc = MarkdownDocument()
    doc.heading("Saddle point", 2).paragraph("Stationarity gives").equation(m, sympy.tanh(gamma * m), label="sp")
    doc.bullets(["first", "second"])
    assert doc.text() == (
        "## Saddle point\n\nStationarity gives\n\n$$\nm = \\tanh{\\left(\\gamma m \\right)} \\tag{sp}\n$$\n\n"
        "- first\n- second\n"
    )
    assert latex(sympy.Rational(1, 2) * gamma) == r"\frac{\gamma}{2}"
    assert latex("already latex") == "already latex"


# -- named sub-expressions -------------------------------------------------------------------------------
L = sympy.Symbol("L", integer=True, positive=True)
i, j, k = sympy.symbols("i j k", integer=True, positive=True)
x1, x2, x3 = sympy.symbols("x_1 x_2 x_3", real=True)


def document(size=2):
    entries = (x1, x2, x3)
    return MarkdownDocument(latex_names={L: "L", i: "i", j: "j", k: "k"}, sizes={L: size},
                            arrays={sympy.Symbol("x"): lambda n: entries[n - 1]})


def test_a_name_is_printed_once_and_expands_back_to_its_body():
    a, b = sympy.symbols("a b", positive=True)
    doc = document()
    u = doc.define("u", a * b / (1 + a), latex="u")
    doc.equation("F", [u**2, -sympy.log(1 + u)], reference=(a * b / (1 + a)) ** 2 - sympy.log(1 + a * b / (1 + a)))
    text = doc.text()
    assert "$$\nu = \\frac{a b}{a + 1}\n$$" in text
    assert "$$\nF = u^{2} - \\log{\\left(u + 1 \\right)}\n$$" in text  # terms in the order given
    assert doc.expand(doc.equations[-1].shown) == doc.equations[-1].reference
    # abbreviate: where the body occurs whole, the name is printed instead
    assert doc.abbreviate(sympy.exp(a * b / (1 + a)) + a) == sympy.exp(u) + a


def test_a_function_name_is_applied_to_its_arguments():
    m, q, t = sympy.symbols("m q t", real=True)
    doc = document()
    S = doc.define("S_data", m**2 / (1 + q), parameters=(m, q), latex=r"S_{{\rm data}}({0}, {1})")
    doc.equation("S", S(t, t**2) + t)
    assert "S = t + S_{\\rm data}(t, t^{2})" in doc.text()
    assert doc.expand(doc.equations[-1].shown) == t**2 / (1 + t**2) + t


def test_a_general_form_expands_at_the_documents_size():
    doc = document(3)
    X = sympy.IndexedBase(sympy.Symbol("x"))
    softmax = doc.define("s", sympy.exp(X[i]) / sympy.Sum(sympy.exp(X[k]), (k, 1, L)), parameters=(i,),
                         latex="s_{{{0}}}")
    doc.equation("Z", sympy.Sum(softmax(i) * X[i], (i, 1, L)))
    assert "Z = \\sum_{i=1}^{L} s_{i} x_{i}" in doc.text()
    denominator = sympy.exp(x1) + sympy.exp(x2) + sympy.exp(x3)
    expected = sum(v * sympy.exp(v) / denominator for v in (x1, x2, x3))
    assert sympy.simplify(doc.expand(doc.equations[-1].shown) - expected) == 0
    # a double sum over one range prints as one sum sign with both indices
    assert "\\sum_{i,j=1}^{L}" in doc.latex(sympy.Sum(X[i] * X[j], (i, 1, L), (j, 1, L)))


def test_a_long_sum_is_broken_over_aligned_lines():
    terms = [sympy.Symbol(f"a_{n}", real=True) ** 2 * sympy.exp(sympy.Symbol(f"b_{n}", real=True)) for n in range(12)]
    doc = MarkdownDocument()
    doc.equation("F", terms, label="long")
    block = doc.text().split("$$")[1]
    assert block.startswith("\n\\begin{aligned}\nF = {}& ") and "\\end{aligned} \\tag{long}" in block
    lines = block.split("\\\\\n")
    assert len(lines) >= 2 and all(line.lstrip().startswith("&\\quad +") for line in lines[1:])
    assert all(f"a_{{{n}}}" in block for n in range(12))  # nothing dropped


def test_operators_follow_their_coefficient_and_a_sum_opens_with_a_positive_term():
    X = sympy.IndexedBase(sympy.Symbol("x"))
    sigma, H, T = sympy.symbols("sigma H T", positive=True)
    doc = document()
    assert doc.latex(sigma**2 / 2 * sympy.Sum(X[i] ** 2, (i, 1, L))) == "\\frac{\\sigma^{2}}{2} \\sum_{i=1}^{L} x_{i}^{2}"
    assert doc.latex(T - H) == "T - H"


def test_a_name_cannot_be_defined_twice():
    doc = MarkdownDocument()
    doc.define("u", sympy.Symbol("a"))
    with pytest.raises(ParameterError):
        doc.define("u", sympy.Symbol("b"))
