"""Rendering of expressions to LaTeX and of derivations to Markdown, with named sub-expressions.

A derivation should read like a paper's appendix: a quantity is named once and every later equation is
printed in terms of the names, not expanded into one line. `MarkdownDocument.define` names a
sub-expression (a symbol such as the ridge denominator D, or a function such as S_data(m, q, t) or the
softmax entry S_ij(h)) and prints its definition; `equation` prints a relation whose right-hand side is
written in the names. Every equation keeps the expression it stands for (`Equation.reference`: what the
solvers compile), so `attnphase.derive.equivalence.check_document` can substitute the names back and
confirm that the page still says what the code computes.

    doc = MarkdownDocument("Saddle point", sizes={L: 2})
    u = doc.define("u", tau * n * q / V, latex="u")                     # u = τnq/V, printed once
    S = doc.define("S_data", body, parameters=(m, q, t), latex=r"S_{{\\rm data}}({0}, {1}, {2})")
    doc.equation(r"S_{\\rm lin}", lam * c**2 / 2 + S(m_of_c, q_of_c, t), reference=linear_action())
    doc.equation(r"S_{\\rm data}", reference=data_action(m, q, t))     # printed with u abbreviated
    text = doc.text()

General forms. A page may show an expression for any number of tokens L: sums `sympy.Sum` over
integer index symbols with the upper limit a size symbol, arrays `sympy.IndexedBase` whose entries
stand for the model's per-token symbols. The document's `sizes` fix the size symbols and `arrays`
map each array to its entries (1-based), so the general form expands to the concrete expression the
solvers compile at that size.

Output is deterministic (same input, same text): `attnphase derive --check` compares the rendered
derivation with the checked-in file. SymPy's LaTeX printer orders terms canonically, and the declared
LaTeX names of symbols (`symbols.parameter(..., latex=...)`) and the document's names are substituted;
nothing here depends on hashing, dates or the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy.core.function import UndefinedFunction
from sympy.printing.latex import LatexPrinter

from attnphase.derive.symbols import latex_names
from attnphase.errors import ParameterError

__all__ = ["latex", "Expectation", "Definition", "Equation", "MarkdownDocument", "MAX_LINE_WIDTH"]

MAX_LINE_WIDTH = 60
"""Estimated printed characters of a display equation (both sides) above which it is broken over lines
at its top-level terms (an `aligned` environment)."""


class Expectation(sympy.Function):
    """𝔼[integrand] over the random variables args[1:], unevaluated (printed as \\mathbb{E}[...]).

    `Expectation(g * xi, g, xi)`. It is linear: `equivalence` compares expectations after pulling out the
    factors that do not depend on the random variables, so 𝔼[-g ξ/√q] and -𝔼[g ξ]/√q are the same.
    Without random variables every symbol counts as random: only numbers are pulled out.
    """

    def _latex(self, printer, exp=None):
        tex = r"\mathbb{E}\left[%s\right]" % printer._print(self.args[0])
        return tex if exp is None else r"%s^{%s}" % (tex, exp)


class _Printer(LatexPrinter):
    """SymPy's LaTeX printer with the document's names, paper-style sums, indices and derivatives."""

    def __init__(self, settings, templates: Mapping[UndefinedFunction, str]):
        super().__init__(settings)
        self._templates = templates

    def _as_ordered_terms(self, expr, order=None):
        # SymPy's canonical order, except that a sum does not open with a minus sign when one of its
        # terms is positive: T - H rather than -H + T.
        terms = list(super()._as_ordered_terms(expr, order=order))
        if terms and terms[0].could_extract_minus_sign():
            positive = next((term for term in terms if not term.could_extract_minus_sign()), None)
            if positive is not None:
                terms.remove(positive)
                terms.insert(0, positive)
        return terms

    def _print_Function(self, expr, exp=None):
        template = self._templates.get(expr.func)
        if template is None:
            return super()._print_Function(expr, exp)
        tex = template.format(*(self._print(argument) for argument in expr.args))
        return tex if exp is None else r"\left(%s\right)^{%s}" % (tex, exp)

    def _print_Indexed(self, expr):
        indices = [self._print(index) for index in expr.indices]
        separator = "" if all(len(index) == 1 for index in indices) else ","
        return "%s_{%s}" % (self._print(expr.base), separator.join(indices))

    def _print_Sum(self, expr):
        limits = expr.limits
        bounds = {(lower, upper) for _, lower, upper in limits}
        if len(limits) > 1 and len(bounds) == 1:  # one range for every index: \sum_{i,j=1}^{L}
            lower, upper = next(iter(bounds))
            indices = ",".join(self._print(index) for index, _, _ in limits)
            tex = r"\sum_{%s=%s}^{%s} " % (indices, self._print(lower), self._print(upper))
        else:
            tex = "".join(r"\sum_{%s=%s}^{%s} " % tuple(self._print(x) for x in limit) for limit in limits)
        body = expr.function
        return tex + (r"\left(%s\right)" % self._print(body) if isinstance(body, sympy.Add) else self._print(body))

    def _print_Derivative(self, expr):
        variables = "".join(rf"\partial {self._print(variable)}" if count == 1
                            else rf"\partial {self._print(variable)}^{{{count}}}"
                            for variable, count in expr.variable_count)
        order = sum(count for _, count in expr.variable_count)
        operator = r"\frac{\partial}{%s}" % variables if order == 1 else r"\frac{\partial^{%d}}{%s}" % (order, variables)
        return operator + " " + self.parenthesize(expr.expr, 50, strict=True)

    def _print_Mul(self, expr):
        # An operator (a sum, an expectation, a derivative) is printed after its coefficient, as in
        # (σ²/2) Σ_i ... rather than inside a fraction's numerator.
        operators = [factor for factor in expr.args if _is_operator(factor)]
        if not operators:
            return super()._print_Mul(expr)
        coefficient = sympy.Mul(*(factor for factor in expr.args if not _is_operator(factor)))
        tail = " ".join(self._print(factor) for factor in operators)
        if coefficient == 1:
            return tail
        if coefficient == -1:
            return "- " + tail
        head = self._print(coefficient)
        if isinstance(coefficient, sympy.Add):
            head = r"\left(%s\right)" % head
        return head + " " + tail

    def terms(self, expr) -> list[str]:
        """The printed top-level terms of a sum, each with its sign ("+ t" or "- t"; the first bare);
        a list or tuple is taken as the terms in the order to print them."""
        ordered = list(expr) if isinstance(expr, (list, tuple)) else self._as_ordered_terms(expr, order=None)
        out = []
        for position, term in enumerate(ordered):
            term = sympy.sympify(term)
            sign = ""
            if position > 0:
                sign = "- " if term.could_extract_minus_sign() else "+ "
                term = -term if sign == "- " else term
            tex = self._print(term)
            if self._needs_add_brackets(term):
                tex = r"\left(%s\right)" % tex
            out.append(sign + tex)
        return out


def _is_operator(factor) -> bool:
    if isinstance(factor, sympy.Pow) and factor.exp.is_positive:
        factor = factor.base
    return isinstance(factor, (sympy.Sum, Expectation, sympy.Derivative))


def latex(expr, **settings) -> str:
    """LaTeX of a SymPy expression/Matrix/equation, using declared symbol names; strings pass through."""
    if isinstance(expr, str):
        return expr
    names = latex_names()
    if "symbol_names" in settings:
        names = {**names, **settings.pop("symbol_names")}
    return _Printer({"symbol_names": names, **settings}, {}).doprint(sympy.sympify(expr))


def _printed_width(tex: str) -> int:
    """A rough count of the characters `tex` shows: a symbol command (\\lambda) counts one, layout commands,
    braces and spaces nothing, and the two parts of a fraction are counted side by side (an overestimate)."""
    tex = re.sub(r"\\(left|right|frac|rm|mathrm|operatorname|begin|end|quad|qquad)\b|\\[,;!]|[{}\s^_]", "", tex)
    return len(re.sub(r"\\[a-zA-Z]+", "x", tex))


@dataclass(frozen=True)
class Definition:
    """A named sub-expression: `name` (a Symbol, or an undefined Function applied to `parameters`) stands
    for `body`; `expanded` is `body` with the earlier names substituted (in terms of the model's symbols)."""

    name: Any
    parameters: tuple
    body: Any
    expanded: Any

    def substitute(self, expr):
        """`expr` with this name replaced by its expanded body (a function name at each application)."""
        if self.parameters:
            return expr.replace(self.name, sympy.Lambda(self.parameters, self.expanded))
        return expr.xreplace({self.name: self.expanded})


@dataclass(frozen=True)
class Equation:
    """One rendered relation and what it stands for.

    lhs: the left-hand side as printed (LaTeX); shown: the right-hand side as printed, in the document's
    names (a SymPy expression or Matrix); reference: the expression it must equal once the names are
    substituted back: what the solvers compile (a SymPy expression or Matrix, or a callable of the
    values of `indices` for an equation with a free index); None for a definition that is checked
    through the equations that use it. indices: free index symbols with their ranges, `(i, 1, L)`;
    substitutions: a change of variables applied to the expanded `shown` before the comparison (the page
    writes f(x) where the solver compiles f(x(u))); defines: the name a definition introduces (else None).
    """

    lhs: str
    shown: Any
    reference: Any
    label: str | None = None
    indices: tuple = ()
    substitutions: Mapping = field(default_factory=dict)
    relation: str = "="
    defines: Any = None


def _unroll_sums(expr):
    """Every `sympy.Sum` with integer limits written out term by term (`Sum.doit` would look for a closed
    form, which can take minutes on a sum of exponentials)."""
    def unroll(total):
        body = total.function
        for index, lower, upper in reversed(total.limits):
            if not (lower.is_Integer and upper.is_Integer):
                return total
            body = sympy.Add(*(body.xreplace({index: sympy.Integer(n)}) for n in range(int(lower), int(upper) + 1)))
        return body

    return expr.replace(lambda e: isinstance(e, sympy.Sum), unroll)


class MarkdownDocument:
    """An append-only Markdown document with display equations ($$ ... $$), tagged by `label`.

    latex_names: LaTeX of symbols used only on this page (index symbols, size symbols, arrays' labels);
    sizes: size symbol -> integer at which the page's general forms are expanded for checking;
    arrays: an IndexedBase's label symbol -> callable(*indices) giving its entry (indices from 1).
    """

    def __init__(self, title: str | None = None, *, latex_names: Mapping | None = None, sizes: Mapping | None = None,
                 arrays: Mapping[sympy.Symbol, Callable] | None = None):
        self._blocks: list[str] = []
        self._templates: dict[UndefinedFunction, str] = {}
        self.latex_names: dict = dict(latex_names or {})
        self.sizes: dict = dict(sizes or {})
        self.arrays: dict = dict(arrays or {})
        self.definitions: dict[Any, Definition] = {}
        self.equations: list[Equation] = []
        if title is not None:
            self.heading(title, 1)

    # -- text ------------------------------------------------------------------------------------------
    def heading(self, text: str, level: int = 1) -> MarkdownDocument:
        if not isinstance(level, int) or not 1 <= level <= 6:
            raise ParameterError("level", level, "an integer in [1, 6]")
        self._blocks.append("#" * level + " " + str(text).strip())
        return self

    def paragraph(self, text: str) -> MarkdownDocument:
        """A paragraph; `$...$` in it is inline LaTeX (use `math` to print a SymPy expression)."""
        self._blocks.append(str(text).strip())
        return self

    def bullets(self, items) -> MarkdownDocument:
        self._blocks.append("\n".join(f"- {str(item).strip()}" for item in items))
        return self

    def table(self, headers, rows) -> MarkdownDocument:
        """Pipe table; cells that are SymPy objects are rendered inline as $latex$."""
        def cell(v):
            return f"${self.latex(v)}$" if isinstance(v, sympy.Basic) else str(v)

        lines = ["| " + " | ".join(map(str, headers)) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
        self._blocks.append("\n".join(lines))
        return self

    def code(self, text: str, language: str = "") -> MarkdownDocument:
        self._blocks.append(f"```{language}\n{text.rstrip()}\n```")
        return self

    def text(self) -> str:
        """The document: blocks separated by blank lines, one trailing newline."""
        return "\n\n".join(self._blocks) + "\n"

    # -- LaTeX -----------------------------------------------------------------------------------------
    def _printer(self) -> _Printer:
        return _Printer({"symbol_names": {**latex_names(), **self.latex_names}}, self._templates)

    def latex(self, expr) -> str:
        """LaTeX of `expr` with this document's names; a string is taken to be LaTeX already."""
        if isinstance(expr, str):
            return expr
        return self._printer().doprint(sympy.sympify(expr))

    def math(self, expr) -> str:
        """Inline math for a paragraph: `$latex$`."""
        return f"${self.latex(expr)}$"

    # -- names -----------------------------------------------------------------------------------------
    def define(self, name: str, body, *, parameters: tuple = (), latex: str | None = None, reference=None,
               label: str | None = None, indices: tuple = (), show: bool = True):
        """Name `body` and print its definition; returns the name to use in later equations.

        Without `parameters` the name is a Symbol printed as `latex`. With `parameters` (symbols) it is a
        function, used as `name(arguments)` and printed by the template `latex` (`{0}`, `{1}`, ... are
        the printed arguments, e.g. r"S_{{{0}{1}}}({2})"). `reference`: what the definition must equal
        (checked like an equation's); None: checked through the equations that use the name.
        show=False registers the name without printing it (the text must then say what it is).
        """
        if not parameters:
            symbol = sympy.Symbol(name)
            self.latex_names[symbol] = latex or name
            lhs = named = symbol
        else:
            named = sympy.Function(name)
            arguments = ", ".join("{%d}" % k for k in range(len(parameters)))
            self._templates[named] = latex or f"{name}({arguments})"
            lhs = named(*parameters)
        if named in self.definitions:
            raise ParameterError("name", name, "a name not yet defined in this document")
        value = sympy.Add(*body) if isinstance(body, (list, tuple)) else body  # a list: terms in printing order
        self.definitions[named] = Definition(named, tuple(parameters), value, self.expand_names(value))
        self._add(lhs, body, reference, label, indices, {}, "=", show, defines=named)
        return named

    def expand_names(self, expr):
        """`expr` with every name replaced by what it stands for (sizes, sums and arrays left as they are)."""
        if isinstance(expr, str):
            raise ParameterError("expr", expr, "a SymPy expression, not LaTeX text")
        expr = sympy.sympify(expr)
        for definition in reversed(list(self.definitions.values())):  # later names may use earlier ones
            expr = definition.substitute(expr)
        return expr

    def expand(self, expr):
        """`expr` as the solvers see it: names substituted, sizes fixed, sums and derivatives evaluated,
        array entries replaced by the model's symbols."""
        expr = self.expand_names(expr)
        for _ in range(8):  # a derivative of an array entry can need a second pass
            previous = expr
            expr = _unroll_sums(expr.xreplace({k: sympy.Integer(v) for k, v in self.sizes.items()}))
            expr = expr.replace(lambda e: isinstance(e, sympy.Derivative), lambda e: e.doit())
            expr = expr.replace(
                lambda e: isinstance(e, sympy.Indexed) and e.base.label in self.arrays
                and all(index.is_Integer for index in e.indices),
                lambda e: self.arrays[e.base.label](*(int(index) for index in e.indices)),
            )
            if expr == previous:
                return expr
        return expr

    def abbreviate(self, expr):
        """`expr` with each symbol name's expanded body, where it occurs as a whole subexpression, replaced
        by the name (largest bodies first)."""
        symbols = [d for d in self.definitions.values() if not d.parameters]
        symbols.sort(key=lambda d: -sympy.count_ops(d.expanded))
        replace = {d.expanded: d.name for d in symbols}
        if isinstance(expr, sympy.MatrixBase):
            return expr.applyfunc(lambda entry: entry.xreplace(replace))
        return sympy.sympify(expr).xreplace(replace)

    # -- equations -------------------------------------------------------------------------------------
    def equation(self, lhs, rhs=None, *, reference=None, label: str | None = None, relation: str = "=",
                 indices: tuple = (), substitutions: Mapping | None = None, show: bool = True) -> MarkdownDocument:
        """Display equation `lhs relation rhs` (just `lhs` when both rhs and reference are None).

        reference: the expression the equation stands for (see `Equation`); without `rhs`, the right-hand
        side printed is the reference with the document's names abbreviated. `label` becomes a \\tag.
        """
        if rhs is None and reference is not None and not callable(reference):
            rhs = self.abbreviate(reference)
        self._add(lhs, rhs, reference, label, indices, dict(substitutions or {}), relation, show)
        return self

    def _add(self, lhs, rhs, reference, label, indices, substitutions, relation, show, defines=None):
        lhs_tex = self.latex(lhs)
        if show:
            body = lhs_tex if rhs is None else self._layout(lhs_tex, relation, rhs)
            if label is not None:
                body += rf" \tag{{{label}}}"
            self._blocks.append(f"$$\n{body}\n$$")
        if rhs is not None and not isinstance(rhs, str):
            shown = sympy.Add(*rhs) if isinstance(rhs, (list, tuple)) else rhs
            self.equations.append(Equation(lhs_tex, shown, reference, label, tuple(indices), substitutions, relation,
                                           defines))

    def _layout(self, lhs_tex: str, relation: str, rhs) -> str:
        """`lhs relation rhs` on one line, or over lines at the top-level terms of a long sum. A list or
        tuple `rhs` is a sum printed in the given order of its terms."""
        if isinstance(rhs, str):
            return f"{lhs_tex} {relation} {rhs}"
        ordered = isinstance(rhs, (list, tuple))
        if not ordered and not isinstance(rhs, sympy.Add):
            return f"{lhs_tex} {relation} {self.latex(rhs)}"
        terms = self._printer().terms(rhs)
        if _printed_width(lhs_tex + " ".join(terms)) <= MAX_LINE_WIDTH:
            return f"{lhs_tex} {relation} " + " ".join(terms)
        room = MAX_LINE_WIDTH - _printed_width(lhs_tex)  # each line is aligned after the left-hand side
        lines, current = [], ""
        for term in terms:
            if current and _printed_width(current + term) > room:
                lines.append(current)
                current = ""
            current += (" " if current else "") + term
        lines.append(current)
        rows = [f"{lhs_tex} {relation} {{}}& {lines[0]}"] + [f"&\\quad {line}" for line in lines[1:]]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"
