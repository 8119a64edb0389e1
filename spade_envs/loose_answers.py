"""Reading an answer out of a reply that does not use the answer format (difficulty 0).

The easiest level of several seed environments also accepts a plain reply ("it is 42")
as well as ``\\boxed{42}``. :func:`loose_answer` is that one rule, shared by the seeds
through the alias module ``spade_answers`` (``from spade_answers import loose_answer``:
it works in the sandbox and in-process, see :data:`spade_envs.program.ALIAS_MODULES`).
"""

from __future__ import annotations

import re

#: an integer, optionally negative (the default shape of a loose answer)
INTEGER = r"-?\d+"


def loose_answer(text: str, pattern: str = INTEGER, most: int = 6) -> str | None:
    """The one ``\\boxed{}`` answer of ``text``; else the last match of ``pattern`` when
    the reply holds at most ``most`` distinct matches (more is a guess-list, not an
    answer); else None. Several different boxed answers are None as well.

    A ``pattern`` with groups gives its groups joined by one space
    (``(\\d{4}-\\d{2}-\\d{2}) (\\d{2}:\\d{2})`` -> ``"2026-12-02 09:30"``)."""
    text = str(text)
    boxed = {b.strip() for b in re.findall(r"\\boxed\{([^{}]*)\}", text)}
    if boxed:
        return boxed.pop() if len(boxed) == 1 else None
    found = re.findall(pattern, text)
    if not found or len(set(found)) > most:
        return None
    last = found[-1]
    return " ".join(last) if isinstance(last, tuple) else last
