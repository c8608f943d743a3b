"""Rendering of expressions to LaTeX and of derivations to Markdown.

Output is deterministic (same input, same text): `attnphase derive --check` compares the rendered
derivation with the checked-in file. SymPy's LaTeX printer orders terms canonically, and the declared
LaTeX names of symbols (`symbols.parameter(..., latex=...)`) are substituted through `symbol_names`;
nothing here depends on hashing, dates or the environment.

    doc = MarkdownDocument()
    doc.heading("Saddle point", 2)
    doc.paragraph("The free energy is")
    doc.equation("f(m)", expr, label="free-energy")
    text = doc.text()
"""

from __future__ import annotations

import sympy

from attnphase.derive.symbols import latex_names
from attnphase.errors import ParameterError

__all__ = ["latex", "MarkdownDocument"]


def latex(expr, **settings) -> str:
    """LaTeX of a SymPy expression/Matrix/equation, using declared symbol names; strings pass through."""
    if isinstance(expr, str):
        return expr
    names = latex_names()
    if "symbol_names" in settings:
        names = {**names, **settings.pop("symbol_names")}
    return sympy.latex(sympy.sympify(expr), symbol_names=names, **settings)


class MarkdownDocument:
    """An append-only Markdown document with display equations ($$ ... $$) numbered by `label`."""

    def __init__(self, title: str | None = None):
        self._blocks: list[str] = []
        if title is not None:
            self.heading(title, 1)

    def heading(self, text: str, level: int = 1) -> MarkdownDocument:
        if not isinstance(level, int) or not 1 <= level <= 6:
            raise ParameterError("level", level, "an integer in [1, 6]")
        self._blocks.append("#" * level + " " + str(text).strip())
        return self

    def paragraph(self, text: str) -> MarkdownDocument:
        self._blocks.append(str(text).strip())
        return self

    def bullets(self, items) -> MarkdownDocument:
        self._blocks.append("\n".join(f"- {str(item).strip()}" for item in items))
        return self

    def equation(self, lhs, rhs=None, label: str | None = None, relation: str = "=") -> MarkdownDocument:
        """Display equation `lhs relation rhs` (or just `lhs` when rhs is None); `label` becomes a \\tag."""
        body = latex(lhs) if rhs is None else f"{latex(lhs)} {relation} {latex(rhs)}"
        if label is not None:
            body += rf" \tag{{{label}}}"
        self._blocks.append(f"$$\n{body}\n$$")
        return self

    def table(self, headers, rows) -> MarkdownDocument:
        """Pipe table; cells that are SymPy objects are rendered inline as $latex$."""
        def cell(v):
            return f"${latex(v)}$" if isinstance(v, sympy.Basic) else str(v)

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
