"""Rendering: exact expected text, declared LaTeX names, and determinism across processes."""

import os
import subprocess
import sys

import sympy

from attnphase.derive.render import MarkdownDocument, latex
from attnphase.derive.symbols import Domain, parameter

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
