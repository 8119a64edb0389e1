r"""Answer-leak detection: does an observation give the answer away?

The secrets of an episode come from its ``solution()`` text:

- a tool-use solution (``<answer>`` blocks): the content of the last ``<answer>``;
- ``\boxed{}`` actions: the content of each action when there are at most
  :data:`MAX_BOXED_ACTIONS` of them; a longer move list is checked as a *sequence*: its
  first :data:`SEQUENCE_MOVES` moves in order, separated by anything but letters and
  digits (the word ``boxed`` aside) (``W, W, S, E`` or ``\boxed{W}\n\boxed{W}...``), since one move such as ``up``
  is no secret but the plan is;
- anything else is a bare answer: the text itself.

**Specificity rule.** Short or generic answers appear in honest observations by chance
(``"3"`` in ``"code mod 7 = 3"``, ``"yes"``), so a single answer is only checked when,
after whitespace is collapsed, it

- holds at least ``min_digits`` digits (default 3: numbers from 100, codes, ids), or
- has no digit and is at least ``min_chars`` characters long (default 4);

move sequences of three or more moves are always checked. Matching is case-insensitive
with word boundaries (``105`` does not match inside ``1105``).

**Linear time.** Single answers are matched with a regular expression that has no
nested or adjacent unbounded repetition; move sequences are matched on the
observation's alphanumeric tokens in one pass (no regular expression at all), so a
hostile observation such as thousands of dashes costs one scan.

**Protocol exception.** An answer shared by the solutions of every seed checked (such as
``done`` in SPADE's multi-turn tool-use envs, whose feedback names ``<answer>done</answer>``)
is part of the protocol, not a secret of one episode; the caller passes it in ``shared``.

**Options exception.** An answer is not leaked by an observation that lists it as one of
at least :data:`MIN_OPTIONS` options shown together, all of which appear (a who-did-it
puzzle must name its suspects, a multiple-choice question its choices; clues may then
name the culprit like any other suspect): items separated by commas, semicolons, ``|``,
``/``, ``or`` or choice labels (``A) .. B) ..``) on one line (after an optional
``Label:``), or lines of a bulleted/numbered list; an item is the answer itself,
optionally with a label (``A)``, ``2.``, ``-``) and followed by a short remark (``Cedar at km 412``, ``Plum (the cook)``). Without such a list, any occurrence
is a leak.

**Vocabulary exception.** A secret that also appears in the reset observation of another
seed whose own solution does not contain it belongs to the task's vocabulary (a listed
option, a fixed word of the prompt), not to this episode's answer, and is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from spade_envs.actions import extract_answer, extract_boxed
from spade_envs.solutions import solution_to_actions

#: boxed move lists longer than this are checked as a sequence, not move by move
MAX_BOXED_ACTIONS = 2
#: moves of a sequence secret
SEQUENCE_MOVES = 4
#: fewest options shown together for the options exception
MIN_OPTIONS = 3
#: longest option item (characters) and most occurrences of one secret examined
MAX_OPTION_CHARS, MAX_OCCURRENCES = 80, 64

#: item separators (no unbounded repetition: linear); items are stripped afterwards
_SEPARATORS = re.compile(r"[,;|/]|\bor\b|\s(?=\(?[A-Z][.)]\s)")
_ITEM_LABEL = re.compile(r"^\s*(?:[-*\u2022]|\(?[A-Za-z0-9]{1,2}[.):])\s+")


_TOKEN = re.compile(r"[A-Za-z0-9]+")
#: most separator units (non-alphanumeric characters or the word ``boxed``) between moves
MAX_GAP = 12


@dataclass(frozen=True)
class Secret:
    """One thing an observation must not reveal: a label and its pattern (a literal
    answer) or its token sequence (a move list)."""

    label: str
    pattern: re.Pattern[str] | None = None
    moves: tuple[tuple[str, ...], ...] = ()

    def search(self, text: str) -> tuple[int, int] | None:
        """``(start, end)`` of the first occurrence in ``text``, or None."""
        if self.pattern is not None:
            m = self.pattern.search(text)
            return (m.start(), m.end()) if m else None
        return _find_sequence(self.moves, text)

    def search_unlisted(self, text: str) -> tuple[int, int] | None:
        """The first occurrence, unless one occurrence (of the first
        :data:`MAX_OCCURRENCES`) is one of several listed options (the options exception
        of the module docstring): then None."""
        if self.pattern is None:
            return _find_sequence(self.moves, text)
        first = None
        for k, m in enumerate(self.pattern.finditer(text)):
            if k >= MAX_OCCURRENCES:
                break
            if _is_listed_option(text, m.start(), m.end()):
                return None
            first = first or (m.start(), m.end())
        return first


def _item_is(item: str, secret: str, run_on: bool = False) -> bool:
    """``item`` (one option) starts with ``secret`` (maybe after a label), as a whole word;
    it is short unless ``run_on`` (the last item of a list that runs into the next sentence)."""
    item = _ITEM_LABEL.sub("", item, count=1).strip().strip("\"'*`").strip()
    if len(item) > MAX_OPTION_CHARS and not run_on:
        return False
    head, rest = item[: len(secret)], item[len(secret) :]
    return head.casefold() == secret.casefold() and not rest[:1].isalnum()


def _is_listed_option(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is one item of a list of >= MIN_OPTIONS options."""
    secret = " ".join(text[start:end].split())
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    line = text[line_start:line_end]
    if len(line) <= 4000:  # inline: "Suspects: Plum, Green, Mustard"
        colon = line.rfind(":", 0, start - line_start)
        body_start = colon + 1 if colon >= 0 else 0
        parts, pos, target = [], body_start, None
        for sep in _SEPARATORS.finditer(line, body_start):
            parts.append((pos, sep.start()))
            pos = sep.end()
        parts.append((pos, len(line)))
        # the other items are short; the answer's own item may run into the next sentence
        # ("..., Mrs. Plum. Witness statements: ...")
        target = next(((a, b) for a, b in parts if a <= start - line_start and end - line_start <= b), None)
        others = sum(1 for a, b in parts if (a, b) != target and 0 < len(line[a:b].strip()) <= MAX_OPTION_CHARS)
        if target is not None and others + 1 >= MIN_OPTIONS and _item_is(line[target[0]:target[1]], secret, run_on=True):
            return True
    # a bulleted or numbered list: this line and its neighbours are items
    if not _ITEM_LABEL.match(line) or not _item_is(line, secret):
        return False
    lines = text.split("\n") if len(text) <= 65536 else []
    index = text.count("\n", 0, line_start)
    run = 1
    for step in (-1, 1):
        j = index + step
        while 0 <= j < len(lines) and _ITEM_LABEL.match(lines[j]):
            run += 1
            j += step
    return run >= MIN_OPTIONS


def _within_move(between: str) -> bool:
    """What may stand between two tokens of one move: whitespace, or one or two marks on
    the same line (``1,2``, ``b-3``, ``A: 4``)."""
    return between.isspace() or (0 < len(between) <= 2 and "\n" not in between
                                  and not any(ch.isalnum() for ch in between))


def _find_sequence(moves: tuple[tuple[str, ...], ...], text: str) -> tuple[int, int] | None:
    """Moves in order, each move's tokens adjacent (:func:`_within_move`), consecutive
    moves separated by 1..MAX_GAP units of non-alphanumerics or the word ``boxed``.

    Linear in ``len(text)`` plus the moves' tokens, whatever both hold: the tokens are
    matched with Knuth-Morris-Pratt, and each token match's separators are checked in
    constant time from prefix counts (a secret of 5,000-token moves against a
    30,000-token observation is one scan, not their product)."""
    toks = [(m.group(0).casefold(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    if not moves or not toks:
        return None
    words = [t for move in moves for t in move]
    # gap before each token, counting skipped "boxed" tokens as one unit each
    kept: list[tuple[str, int, int, int]] = []  # (token, start, end, gap units before it)
    pending_gap, prev_end = 0, None
    for tok, start, end in toks:
        between = 0 if prev_end is None else start - prev_end
        if tok == "boxed":
            pending_gap += between + 1
        else:
            kept.append((tok, start, end, pending_gap + between))
            pending_gap = 0
        prev_end = end
    boundaries = []
    acc = 0
    for move in moves[:-1]:
        acc += len(move)
        boundaries.append(acc)
    n = len(words)
    if n == 0 or len(kept) < n:
        return None
    vocab: dict[str, int] = {}
    pattern = [vocab.setdefault(w, len(vocab)) for w in words]
    seq = [vocab.get(tok, -1) for tok, _s, _e, _g in kept]
    gap_ok = [1 <= gap <= MAX_GAP for _t, _s, _e, gap in kept]
    # not_within[j]: the text between kept tokens j-1 and j does not join one move
    not_within = [False] + [not _within_move(text[kept[j - 1][2]:kept[j][1]]) for j in range(1, len(kept))]
    prefix = [0]
    for flag in not_within:
        prefix.append(prefix[-1] + flag)
    fail = [0] * n  # KMP failure function of the pattern
    k = 0
    for i in range(1, n):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    k = 0
    for j, sym in enumerate(seq):
        while k and sym != pattern[k]:
            k = fail[k - 1]
        if sym == pattern[k]:
            k += 1
        if k == n:
            i = j - n + 1
            bad = prefix[i + n] - prefix[i + 1] - sum(not_within[i + b] for b in boundaries)
            if bad == 0 and all(gap_ok[i + b] for b in boundaries):
                return kept[i][1], kept[j][2]
            k = fail[k - 1]
    return None


def answer_candidates(solution: str) -> list[str]:
    """The single answer strings of a solution (before the specificity rule)."""
    text = "" if solution is None else str(solution)
    if "<answer>" in text:
        found = extract_answer(text)
        return [found] if found else []
    if "\\boxed{" in text:
        actions = solution_to_actions(text)
        if len(actions) > MAX_BOXED_ACTIONS:
            return []
        return [b for b in (extract_boxed(a) for a in actions) if b]
    stripped = text.strip()
    return [stripped] if stripped else []


def is_specific(candidate: str, min_digits: int = 3, min_chars: int = 4) -> bool:
    """True when ``candidate`` is specific enough that seeing it in an observation is a leak."""
    text = " ".join(candidate.split())
    digits = sum(ch.isdigit() for ch in text)
    if digits:
        return digits >= min_digits
    return len(text) >= min_chars


def _literal(candidate: str) -> str:
    text = " ".join(candidate.split())
    body = re.escape(text).replace(r"\ ", r"\s+")
    head = r"(?<![A-Za-z0-9])" if text[:1].isalnum() else ""
    tail = r"(?![A-Za-z0-9])" if text[-1:].isalnum() else ""
    return head + body + tail


def secrets(solution: str, min_digits: int = 3, min_chars: int = 4) -> list[Secret]:
    """The checkable secrets of a solution (see the module docstring)."""
    out = [
        Secret(c, re.compile(_literal(c), re.IGNORECASE))
        for c in answer_candidates(solution)
        if is_specific(c, min_digits, min_chars)
    ]
    text = "" if solution is None else str(solution)
    if "\\boxed{" in text and "<answer>" not in text:
        moves = [extract_boxed(a) for a in solution_to_actions(text)]
        if len(moves) > MAX_BOXED_ACTIONS and all(moves):
            head = moves[:SEQUENCE_MOVES]
            tokens = tuple(tuple(t.casefold() for t in _TOKEN.findall(m or "")) for m in head)
            if all(tokens):
                out.append(Secret("moves " + ", ".join(head), moves=tokens))  # type: ignore[arg-type]
    return out


def find_leak(
    solution: str,
    observations: Iterable[str],
    others: Iterable[tuple[str, str]] = (),
    *,
    min_digits: int = 3,
    min_chars: int = 4,
    shared: Iterable[str] = (),
) -> tuple[str, str] | None:
    """The first ``(secret label, observation excerpt)`` where a secret of ``solution``
    appears in one of ``observations``; None when nothing leaks. ``others`` are
    ``(reset observation, solution)`` pairs of other seeds (the vocabulary exception)."""
    observations = list(observations)
    others = list(others)
    protocol = {" ".join(str(a).split()).casefold() for a in shared}
    for secret in secrets(solution, min_digits, min_chars):
        if " ".join(secret.label.split()).casefold() in protocol:
            continue
        if any(secret.search(obs) and not secret.search(sol) for obs, sol in others):
            continue
        for obs in observations:
            m = secret.search_unlisted(obs)
            if m:
                lo, hi = max(0, m[0] - 30), min(len(obs), m[1] + 30)
                return secret.label, obs[lo:hi].replace("\n", " ")
    return None
