"""Measure the novelty thresholds: seed pairs (distinct) vs. generated variants (duplicates).

``python -m spade_envs.designer.novelty_measure`` prints the figures quoted in
:mod:`.novelty`. Variants of a source (all near-duplicates that must be rejected):

- ``renamed``: every identifier the program defines (classes, functions, arguments,
  variables, ``self`` attributes) renamed consistently;
- ``reformatted``: ``ast.unparse`` layout plus added comments and blank lines;
- ``constants``: every number shifted, every string's words reversed;
- ``all_three``: renamed, then constants, then reformatted;
- ``helper_added``: an extra, unused helper method in the environment class;
- ``statement_removed``: one statement of the longest method deleted.
"""

from __future__ import annotations

import ast
import builtins
import itertools
from statistics import fmean
from typing import Callable

from .novelty import Signature, is_duplicate, kept_names

_KEEP_ATTRS = {"reset", "step", "solution", "hint", "get_tools", "close", "__init__"}


class _Renamer(ast.NodeTransformer):
    def __init__(self, defined: set[str]) -> None:
        self.map = {name: f"v{i}_{name[::-1].strip('_')}x" for i, name in enumerate(sorted(defined))}

    def _n(self, name: str) -> str:
        return self.map.get(name, name)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._n(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._n(node.arg)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = self._n(node.attr)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.name = self._n(node.name)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.generic_visit(node)
        node.name = self._n(node.name[:-3]) + "Env" if node.name.endswith("Env") else self._n(node.name)
        return node


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name[:-3] if isinstance(node, ast.ClassDef) and node.name.endswith("Env") else node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    builtin = set(dir(builtins))
    return {n for n in names if n not in _KEEP_ATTRS and n not in builtin
            and n not in ("self", "METADATA", "kwargs", "seed", "action", "max_turns")
            and not n.startswith("tool_") and not (n.startswith("__") and n.endswith("__"))}


def renamed(source: str) -> str:
    tree = ast.parse(source)
    return ast.unparse(_Renamer(_defined_names(tree)).visit(tree))


def reformatted(source: str) -> str:
    lines = ast.unparse(ast.parse(source)).splitlines()
    out = ["# reformatted variant", ""]
    for i, line in enumerate(lines):
        out.append(line)
        if line.strip().startswith("def "):
            out.append(" " * (len(line) - len(line.lstrip()) + 4) + "# a comment the model added")
        if i % 7 == 6:
            out.append("")
    return "\n".join(out) + "\n"


class _Constants(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        v = node.value
        if isinstance(v, bool) or v is None:
            return node
        if isinstance(v, int):
            node.value = v + 1 if v not in (0, 1) else v
        elif isinstance(v, float):
            node.value = v * 1.1 if v not in (0.0, 1.0) else v
        elif isinstance(v, str) and " " in v:
            node.value = " ".join(reversed(v.split(" ")))
        return node


def constants(source: str) -> str:
    return ast.unparse(_Constants().visit(ast.parse(source)))


def all_three(source: str) -> str:
    return reformatted(constants(renamed(source)))


def _env_class(tree: ast.Module) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env"))


def helper_added(source: str) -> str:
    tree = ast.parse(source)
    helper = ast.parse(
        "def _describe_progress(self, extra=''):\n"
        "    parts = [str(getattr(self, '_turn', 0)), extra]\n"
        "    return ' / '.join(p for p in parts if p)\n"
    ).body[0]
    _env_class(tree).body.append(helper)
    return ast.unparse(tree)


def statement_removed(source: str) -> str:
    tree = ast.parse(source)
    methods = [n for n in _env_class(tree).body if isinstance(n, ast.FunctionDef)]
    longest = max(methods, key=lambda m: len(m.body))
    if len(longest.body) > 1:
        del longest.body[len(longest.body) // 2]
    return ast.unparse(tree)


VARIANTS: dict[str, Callable[[str], str]] = {
    "renamed": renamed, "reformatted": reformatted, "constants": constants, "all_three": all_three,
    "helper_added": helper_added, "statement_removed": statement_removed,
}


def flagged_pairs(sources: dict[str, str]) -> list[tuple[str, str, float, float | None]]:
    """``(a, b, code, text)`` of every pair of ``sources`` the rule calls near-duplicates
    (on a set of distinct programs: the pairs it would wrongly merge)."""
    sigs = {k: Signature.compute(s) for k, s in sources.items()}
    pairs = ((a, b, *sigs[a].similarity(sigs[b])) for a, b in itertools.combinations(sigs, 2))
    return [p for p in pairs if is_duplicate(p[2], p[3])]


def measure() -> dict:
    """Similarities of distinct seed pairs and of every seed against its variants."""
    from ..registry.catalog import seed_records

    seeds = [(str(r.env_id.base), r.source) for r in seed_records()]
    sigs = {k: Signature.of(s) for k, s in seeds}
    distinct = [(a, b, *sigs[a].similarity(sigs[b])) for a, b in itertools.combinations(sigs, 2)]
    variants = []
    for key, source in seeds:
        for name, fn in VARIANTS.items():
            code, text = sigs[key].similarity(Signature.of(fn(source)))
            variants.append((key, name, code, text))
    dup_codes = [v[2] for v in variants]
    by_kind = {name: min(v[2] for v in variants if v[1] == name) for name in VARIANTS}
    return {
        "seeds": len(seeds),
        "distinct_pairs": len(distinct),
        "distinct_code_max": max(d[2] for d in distinct),
        "distinct_code_mean": fmean(d[2] for d in distinct),
        "distinct_text_max": max((d[3] for d in distinct if d[3] is not None), default=0.0),
        "distinct_closest": max(distinct, key=lambda d: d[2])[:2],
        "distinct_flagged": sum(is_duplicate(d[2], d[3]) for d in distinct),
        "variants": len(variants),
        "variant_code_min": min(dup_codes),
        "variant_code_min_by_kind": by_kind,
        "variant_missed": sum(not is_duplicate(v[2], v[3]) for v in variants),
        "kept_names": len(kept_names()),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(measure(), indent=2, default=str))
