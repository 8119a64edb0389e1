"""The privileged hint of a designed environment (DESIGN.md section 6).

:func:`resolve_hint` decides where the hint of an accepted source comes from:

1. the program's own ``hint()``, when it returns a non-empty string for every probed
   seed and none of those strings contains that episode's answer (origin ``program``);
2. otherwise a hint written by the designer model from the code (origin ``model``): a
   short prompt (:func:`hint_prompt`), then :func:`strip_answer` removes every sentence
   that contains a probed episode's answer (the specific secrets of
   :mod:`.leak`) or names the program's internals (``solution()``, ``self.x``, ``_private`` names); the
   remaining text (at most :data:`MAX_HINT_CHARS`) is injected into the source as a
   ``hint()`` method (:func:`with_hint`), so hinted plays and later evaluations see it;
3. origin ``none`` when neither gives a usable hint (hinted plays then equal plain ones).

Program code runs through a runtime (the sandbox by default), never in-process.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpadeError
from .acceptance.leak import secrets

MAX_HINT_CHARS = 400
HINT_SEEDS = (0, 1, 2)
#: sentences naming the program's internals (where the answer is kept) are not hints
_STORAGE = re.compile(r"solution\s*\(|\bself\.\w+|(?<![\w])_\w+|\banswer\s*=", re.IGNORECASE)


@dataclass(frozen=True)
class HintResult:
    """The resolved hint: ``source`` is the program to play hinted (with an injected
    ``hint()`` for origin ``model``), ``text`` the hint of the first probed seed."""

    origin: str  # "program" | "model" | "none"
    text: str
    source: str
    stripped: list[str] = field(default_factory=list)  # sentences removed as answer-bearing
    note: str = ""


def probe_program(source: str, seeds: tuple[int, ...] = HINT_SEEDS, runtime: Any = None) -> list[tuple[str, str | None]]:
    """``(solution, hint)`` of ``source`` for each seed, run through ``runtime``
    (default: ``get_runtime()``, the sandbox). Raises :class:`SpadeError` on failure."""
    from ..trust import get_runtime

    rt = runtime or get_runtime()
    session = rt.open(source)
    try:
        out = []
        for seed in seeds:
            session.reset(seed)
            out.append((session.solution(), session.hint()))
        return out
    finally:
        try:
            session.close()
        except SpadeError:
            pass


def strip_answer(text: str, solutions: list[str]) -> tuple[str, list[str]]:
    """``text`` without the sentences that contain an answer of ``solutions`` or name
    where the answer is stored; returns ``(kept text, removed sentences)``."""
    pats = [s for sol in solutions for s in secrets(sol)]  # Secret.search, linear time
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text or "") if s.strip()]
    kept, removed = [], []
    for sentence in sentences:
        if any(p.search(sentence) for p in pats) or _STORAGE.search(sentence) or "\\boxed{" in sentence \
                or "<answer>" in sentence:
            removed.append(sentence)
        else:
            kept.append(sentence)
    out = " ".join(kept)
    if len(out) > MAX_HINT_CHARS:
        out = out[:MAX_HINT_CHARS].rsplit(" ", 1)[0] + "..."
    return out, removed


def hint_prompt(source: str) -> list[dict[str, str]]:
    """The short prompt asking the designer model for a hint written from the code."""
    return [
        {"role": "system", "content": "You write short hints for puzzle environments."},
        {"role": "user", "content": (
            "Here is the code of an environment an agent will play:\n```python\n" + source[:6000] + "\n```\n"
            "Write a hint of one to three sentences that explains the STRATEGY to win any episode. "
            "Do not give any answer, number from the code or solution text. Reply with the hint only."
        )},
    ]


def with_hint(source: str, hint: str) -> str:
    """``source`` with ``def hint(self): return <hint>`` appended to its ``*Env`` class (a
    later definition overrides an existing ``hint``). The original text is kept as is
    (re-generated from the syntax tree only for a class written on one line)."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env") and not n.name.startswith("_"))
    lines = source.splitlines()
    first = cls.body[0]
    indent = lines[first.lineno - 1][:first.col_offset]
    end = cls.end_lineno or len(lines)
    if first.lineno != cls.lineno and not indent.strip():
        method = [f"{indent}def hint(self):", f"{indent}    return {hint!r}"]
        out = "\n".join(lines[:end] + [""] + method + lines[end:]) + "\n"
        try:
            ast.parse(out)
            return out
        except SyntaxError:
            pass
    cls.body.append(ast.parse(f"def hint(self):\n    return {hint!r}\n").body[0])
    return ast.unparse(tree) + "\n"


def resolve_hint(source: str, *, backend: Any = None, runtime: Any = None, seeds: tuple[int, ...] = HINT_SEEDS,
                 max_new_tokens: int = 96, seed: int | None = None) -> HintResult:
    """See the module docstring. ``backend``: a :class:`~spade_envs.agents.Backend` used
    when the program has no usable hint (None: origin ``none``)."""
    try:
        probes = probe_program(source, seeds, runtime)
    except SpadeError as exc:
        return HintResult("none", "", source, note=f"cannot run the program for its hint: {exc}")
    solutions = [s for s, _ in probes]
    note = ""
    hints = [h for _, h in probes]
    if all(isinstance(h, str) and h.strip() for h in hints):
        leaks = [h for (sol, h) in probes if strip_answer(h or "", [sol])[1]]  # type: ignore[arg-type]
        if not leaks:
            return HintResult("program", str(hints[0]).strip(), source)
        note = f"the program's hint() reveals the answer ({len(leaks)} of {len(probes)} seeds); replaced"
    elif any(hints):
        note = "the program's hint() is empty for some seeds; replaced"
    if backend is None:
        return HintResult("none", "", source, note=note or "no hint() and no model to write one")
    try:
        gen = backend.chat([hint_prompt(source)], max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)[0]
    except SpadeError as exc:
        return HintResult("none", "", source, note=f"the model could not write a hint: {exc}")
    text, removed = strip_answer(gen.text.strip().strip("`").strip(), solutions)
    if not text:
        return HintResult("none", "", source, removed, note=(note + "; " if note else "") + "the model's hint was empty "
                          "or gave the answer away")
    return HintResult("model", text, with_hint(source, text), removed, note=note)
