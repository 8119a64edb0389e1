r"""Deliberately broken variants of environment sources, to measure the acceptance pipeline.

Each operator takes a valid source and returns a broken one (or None when it does not
apply). Most operators work on the AST: they rename a method of the environment class
(``step`` -> ``_mut_orig_step``) and add a wrapper that calls the original (or
``super()``'s, for methods inherited from ``ToolUseBaseEnv``) and breaks its result, so
they apply to any program of the format. A few work on the text (syntax errors).

Every mutant is broken by construction (wrong types, leaked answers, broken solutions,
ignored seeds, guessable checks...); ``expect`` names the stage that should reject it, or
``unverified`` for a defect that acceptance reports by accepting the program unverified (a
solution that no longer replays a win: SPADE never replays solution()); :func:`outcome`
names what a report did with a mutant in the same terms.
Operators in :data:`SLOW_OPERATORS` (hangs) need a runtime that enforces deadlines and
are left out unless asked for.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from spade_envs.program import inspect_program

_CORRUPT_HELPER = '''
def _mut_corrupt(text):
    import re
    text = str(text)
    shifted = re.sub(r"[0-9]+", lambda m: str(int(m.group(0)) + 1), text)
    if shifted != text:
        return shifted
    for end in ("</answer>", "}"):
        k = text.rfind(end)
        if k > 0:
            return text[:k - 1] + "zz" + text[k:]
    return text[:-1] + "zz"
'''


@dataclass(frozen=True)
class Mutant:
    """One broken variant: ``operator`` applied to ``parent`` (a file name)."""

    operator: str
    parent: str
    source: str
    expect: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.parent}:{self.operator}"


# -- AST helpers ------------------------------------------------------------------------
def _env_class(tree: ast.Module, class_name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _parse_method(code: str) -> ast.FunctionDef:
    holder = ast.parse("class _Holder:\n" + textwrap.indent(textwrap.dedent(code), "    "))
    return holder.body[0].body[0]  # type: ignore[attr-defined,return-value]


def _wrap(source: str, method: str, template: str, *, helper: str = "") -> str | None:
    """Rename ``method`` and add ``template`` (a def using ``ORIG(...)`` for the original)."""
    info = inspect_program(source)
    tree = ast.parse(source)
    cls = _env_class(tree, info.class_name)
    original = _method(cls, method)
    if original is not None:
        original.name = f"_mut_orig_{method}"
        orig = f"self._mut_orig_{method}"
    elif info.uses_tool_base and method in ("step", "get_tools", "reset", "solution"):
        orig = f"super().{method}"
    else:
        return None
    cls.body.append(_parse_method(template.replace("ORIG", orig)))
    if helper:
        tree.body.extend(ast.parse(helper).body)
    return ast.unparse(tree) + "\n"


def _replace_method(source: str, method: str, code: str, *, must_exist: bool = True) -> str | None:
    info = inspect_program(source)
    tree = ast.parse(source)
    cls = _env_class(tree, info.class_name)
    old = _method(cls, method)
    if old is None and must_exist:
        return None
    cls.body = [n for n in cls.body if n is not old] + [_parse_method(code)]
    return ast.unparse(tree) + "\n"


# -- operators ---------------------------------------------------------------------------
def _syntax_error(src: str) -> str | None:
    lines = src.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("def ") and line.rstrip().endswith(":"):
            lines[i] = line.rstrip()[:-1]
            return "\n".join(lines) + "\n"
    return None


def _no_env_class(src: str) -> str | None:
    info = inspect_program(src)
    tree = ast.parse(src)
    _env_class(tree, info.class_name).name = "Puzzle"
    return ast.unparse(tree) + "\n"


def _step(body: str) -> Callable[[str], str | None]:
    return lambda src: _wrap(src, "step", "def step(self, action):\n    r = ORIG(action)\n" + textwrap.indent(body, "    "))


def _reset(body: str) -> Callable[[str], str | None]:
    return lambda src: _wrap(src, "reset", "def reset(self, seed=None):\n" + textwrap.indent(body, "    "))


def _solution(body: str, helper: str = "") -> Callable[[str], str | None]:
    return lambda src: _wrap(src, "solution", "def solution(self):\n    s = ORIG()\n" + textwrap.indent(body, "    "), helper=helper)


def _init_no_reset(src: str) -> str | None:
    code = "def __init__(self, max_turns=10, **kwargs):\n    self.max_turns = max_turns\n"
    return _replace_method(src, "__init__", code, must_exist=False)


def _invalid_tool_spec(src: str) -> str | None:
    info = inspect_program(src)
    if info.uses_tool_base or "get_tools" in info.methods:
        body = (
            "def get_tools(self):\n    t = [dict(x) for x in ORIG()]\n"
            "    if t:\n        t[0] = {'type': 'function', 'function': {'name': t[0]['function']['name'],"
            " 'parameters': {'type': 'object', 'properties': 5}}}\n    return t\n"
        )
        return _wrap(src, "get_tools", body)
    code = (
        "def get_tools(self):\n    return [{'type': 'function', 'function': {'name': 'ghost', "
        "'description': 'no method behind it', 'parameters': {'type': 'object', 'properties': {}}}}]\n"
    )
    return _replace_method(src, "get_tools", code, must_exist=False)


def _unseeded_ast(src: str) -> str | None:
    """``random.Random(seed)`` -> ``random.Random()`` (and ``random.seed(x)`` -> ``random.seed()``)."""
    tree = ast.parse(src)
    changed = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in ("Random", "seed", "default_rng"):
                node.args, node.keywords, changed = [], [], True
    return ast.unparse(tree) + "\n" if changed else None


_WIN = "return ('Correct!', 1.0, True, False, {})"

#: operator name -> (function, the stage expected to reject it)
OPERATORS: dict[str, tuple[Callable[[str], str | None], str | tuple[str, ...]]] = {
    "syntax_error": (_syntax_error, "size_syntax"),
    "no_env_class": (_no_env_class, "interface"),
    # two public *Env classes are no defect either: the first is played, as SPADE's loader does
    # no solution() is no defect (SPADE requires only reset and step): accepted unverified
    "step_tuple_length": (_step("return tuple(r)[:4]\n"), "interface"),
    "reward_not_number": (_step("return (r[0], str(r[1])) + tuple(r[2:])\n"), "interface"),
    "terminated_not_bool": (_step("return (r[0], r[1], 'no', r[3], r[4])\n"), "interface"),
    "info_not_dict": (_step("return tuple(r)[:4] + ([],)\n"), "interface"),
    "obs_not_str": (_reset("o, i = ORIG(seed)\nreturn [o], i\n"), "interface"),
    "reset_info_not_dict": (_reset("o, i = ORIG(seed)\nreturn o, None\n"), "interface"),
    # SPADE str()s solution(): None is the text "None", which replays no win ("unverified":
    # accepted with report.verified False, as SPADE never replays solution())
    "solution_none": (_solution("return None\n"), ("seed_variety", "unverified")),
    "solution_raises": (_solution("raise ValueError('no solution today')\n"), "interface"),
    # a hint() that fails or returns a non-str is treated as no hint (SPADE never calls it)
    "invalid_tool_spec": (_invalid_tool_spec, "tool_specs"),
    "init_no_reset": (_init_no_reset, ("smoke", "interface")),  # interface: __init__ itself breaks
    # a step that raises on junk is played as SPADE plays it (a lost episode); raising on
    # SPADE's own probe actions is what its loader refuses
    "step_raises_on_spade_probe": (
        _step("if 'boxed{test}' in action:\n    raise IndexError('mutant: probe action')\nreturn r\n"),
        "smoke",
    ),
    "reset_ignores_seed": (_reset("return ORIG(0)\n"), "seed_variety"),
    "reset_unseeded": (_reset("import random\nreturn ORIG(random.Random().randrange(10 ** 9))\n"), "determinism"),
    "unseeded_rng": (_unseeded_ast, "determinism"),
    "step_nondeterministic": (
        _step("import random\nreturn (r[0] + ' #' + str(random.Random().randrange(10 ** 6)),) + tuple(r[1:])\n"),
        "determinism",
    ),
    # tool-use solutions keep their tags (else the base class's <answer> fallback would
    # legitimately complete the replay): reverse the final answer instead
    "solution_reversed": (_solution(
        "return re.sub(r'<answer>(.*?)</answer>', lambda m: '<answer>' + m.group(1)[::-1] + 'x</answer>', s, "
        "flags=re.S) if '<answer>' in s else s[::-1]\n"), "unverified"),
    "solution_corrupted": (_solution("return _mut_corrupt(s)\n", _CORRUPT_HELPER), "unverified"),
    "reward_zero": (_step("return (r[0], 0.0) + tuple(r[2:])\n"), "unverified"),
    # a terminal reward > 0 is a win (time-shaped rewards, as SPADE scores them): negate it
    "reward_negated": (_step("return (r[0], -abs(r[1])) + tuple(r[2:])\n"), "unverified"),
    "guessable_any_boxed": (
        lambda src: _wrap(src, "step", "def step(self, action):\n    if '\\\\boxed{' in action or '<answer>' in action:\n        " + _WIN + "\n    return ORIG(action)\n"),
        "garbage",
    ),
    "guessable_empty": (
        lambda src: _wrap(src, "step", "def step(self, action):\n    if not action.strip():\n        " + _WIN + "\n    return ORIG(action)\n"),
        "garbage",
    ),
    "guessable_common": (
        lambda src: _wrap(src, "step", "def step(self, action):\n    if 'yes' in action.lower() or '{0}' in action:\n        " + _WIN + "\n    return ORIG(action)\n"),
        "garbage",
    ),
    "leak_in_reset": (_reset("o, i = ORIG(seed)\nreturn o + '\\n(reference: ' + str(self.solution()) + ')', i\n"), "no_leak"),
    "leak_in_feedback": (
        _step("if r[2] or r[3]:\n    return r\nreturn (r[0] + ' The expected answer: ' + str(self.solution()),) + tuple(r[1:])\n"),
        "no_leak",
    ),
}

#: operators that need a deadline-enforcing runtime (the sandbox)
SLOW_OPERATORS: dict[str, tuple[Callable[[str], str | None], str | tuple[str, ...]]] = {
    "hang_on_empty": (_step("if not action.strip():\n    while True:\n        pass\nreturn r\n"), "smoke"),
}


def outcome(report: Any) -> str:
    """The stage that rejected a mutant, ``unverified`` when it was accepted without a
    replayed win, else ``accepted`` (a survivor)."""
    if report.rejected_at:
        return report.rejected_at
    return "accepted" if getattr(report, "verified", True) else "unverified"


def mutate(source: str, parent: str, operators: Iterable[str] | None = None) -> list[Mutant]:
    """Every applicable mutant of ``source`` (a valid program), in operator order."""
    table = {**OPERATORS, **SLOW_OPERATORS}
    names = list(OPERATORS) if operators is None else list(operators)
    out = []
    for name in names:
        fn, expect = table[name]
        try:
            mutated = fn(source)
        except (SyntaxError, StopIteration, ValueError):
            mutated = None
        if mutated is not None and mutated != source:
            stages = (expect,) if isinstance(expect, str) else tuple(expect)
            out.append(Mutant(operator=name, parent=parent, source=mutated, expect=stages))
    return out


def seed_mutants(operators: Iterable[str] | None = None) -> list[Mutant]:
    """Mutants of every single-player seed of the installed suite (the operators target
    the single-player contract; games have their own acceptance stages and tests)."""
    from spade_envs.games import is_multiplayer
    from spade_envs.registry.catalog import seed_records

    ops = None if operators is None else list(operators)
    out: list[Mutant] = []
    for rec in seed_records():
        if is_multiplayer(rec):
            continue
        out.extend(mutate(rec.source, rec.metadata.get("file", str(rec.env_id)), ops))
    return out
