"""Code extraction from a designer model's answer.

Contract of :func:`extract_code`:

1. fenced blocks (```` ```python ````, ```` ```py ````, bare ```` ``` ````, or ``~~~``) are
   collected; a closing fence glued to the end of a code line counts; an unterminated
   last fence runs to the end of the answer (models often hit their token limit
   mid-block);
2. among the blocks, the ones that define a class whose name ends in ``Env`` win; of
   those (or of all blocks when none does) the *largest* is returned;
3. with no fence at all, the answer itself is returned when it looks like code (it
   defines a ``*Env`` class, or it parses as Python and holds a ``class`` or ``def``);
   leading prose before the first ``import``/``class``/``METADATA`` line is dropped;
4. otherwise ``None``: nothing to validate (the caller records that as a verdict).

Extraction never runs or even parses the code beyond that heuristic; whether it is a
valid environment is the acceptance pipeline's job.
"""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+-]*)[^\n]*$", re.MULTILINE)
_ENV_CLASS = re.compile(r"^[ \t]*class[ \t]+\w*Env\b", re.MULTILINE)
_CODE_START = re.compile(r"^(?:import |from \w[\w.]* import |class |METADATA\b|def |@|\"\"\"|''')", re.MULTILINE)
_CODE_LANGS = {"", "python", "py", "python3", "py3"}


def fenced_blocks(text: str) -> list[str]:
    """The bodies of fenced code blocks in ``text`` whose language is Python or unset,
    in order; an unterminated last block runs to the end of ``text``."""
    blocks: list[str] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            break
        fence, lang = opening.group(1), opening.group(2).lower()
        start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence)}[ \t]*$", re.MULTILINE).search(text, start)
        if closing is None:  # a fence glued to the end of a code line
            closing = re.compile(re.escape(fence)).search(text, start)
        body = text[start:closing.start()] if closing else text[start:]
        if lang in _CODE_LANGS:
            blocks.append(body.rstrip() + "\n" if body.strip() else "")
        if closing is None:
            break
        pos = closing.end()
    return [b for b in blocks if b.strip()]


def _looks_like_code(text: str) -> bool:
    if _ENV_CLASS.search(text):
        return True
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, (ast.ClassDef, ast.FunctionDef)) for n in tree.body)


def extract_code(answer: str | None) -> str | None:
    """The environment source in a model's ``answer`` (see the module docstring), or None."""
    if not answer or not answer.strip():
        return None
    blocks = fenced_blocks(answer)
    if blocks:
        with_env = [b for b in blocks if _ENV_CLASS.search(b)]
        return max(with_env or blocks, key=len)
    if "```" in answer or "~~~" in answer:
        return None  # fences of another language only
    start = _CODE_START.search(answer)
    candidate = answer[start.start():] if start else answer
    candidate = candidate.strip("\n") + "\n"
    return candidate if _looks_like_code(candidate) else None
