"""Near-duplicate rejection for designed environments (DESIGN.md section 6, "novelty").

Two signatures per source, each a MinHash (``datasketch``) of a shingle set:

- **code**: the program with comments, docstrings and formatting removed (``ast`` round
  trip), then tokenized (``tokenize``) with every user identifier replaced by ``ID``
  (keywords, builtins, the prelude modules and their attributes, methods of builtin
  types and the format's method names are kept), every number by ``NUM`` and every
  string by ``STR``; shingles are :data:`CODE_SHINGLE` consecutive tokens. Renaming,
  reformatting and changing constants therefore leave the signature unchanged;
- **text**: ``METADATA`` name and description plus the module and class docstrings,
  case-folded words; shingles are single words and word pairs. The header SPADE's
  ``save_game_file`` writes into every saved game (the docstring ``SPADE self-play
  generated game``, and SPARE's before it) is boilerplate: it never counts as a description.

A candidate is a near-duplicate of a known source when

    code_similarity >= CODE_THRESHOLD_WITH_TEXT and text_similarity >= TEXT_THRESHOLD, or
    code_similarity >= CODE_THRESHOLD, unless both have descriptions and they are
        disjoint (text_similarity < TEXT_DIFFERENT): then only code_similarity >=
        CODE_THRESHOLD_ALONE (near-identical code) merges them

(similarities are MinHash Jaccard estimates with :data:`NUM_PERM` permutations). The same
rule judges ``registry add``, ``validate``, ``import-pool`` and the designer. Measured on
67 distinct programs (the seeds, ``tests/spade_programs``, ``tests/spade_format_r8``,
``tests/spade_pools_r9``, the pool samples and docs/hub.md's Relay and Tally, each saved
with SPADE's header; 2,211 pairs): 36 pairs were flagged before SPADE's header was
boilerplate and the disjoint-description clause existed (Relay vs Tally at code 0.70),
0 after; every generated variant of those programs is still flagged (``renamed`` with
``constants`` keeps the description's words: text similarity >= 0.19 > TEXT_DIFFERENT).

Thresholds, measured by :func:`spade_envs.designer.novelty_measure.measure` on the 30
seeds of the suite (435 distinct pairs) and 6 generated near-duplicate variants of each
seed (180: identifiers renamed, reformatted with comments, constants changed, all three
at once, a helper method added, a statement removed), ``python -m
spade_envs.designer.novelty_measure``:

    distinct seed pairs:   code similarity max 0.555 (Env-00025 vs Env-00027, two
                           multi-agent games written from one template), mean 0.20;
                           text similarity max 0.125
    near-duplicates:       code similarity min 0.805 (reformatted, constants changed:
                           1.00; helper added: >= 0.91; identifiers renamed, all three,
                           statement removed: >= 0.80)

so ``CODE_THRESHOLD = 0.68`` sits in the middle of the gap (0.555 .. 0.805): every
variant is rejected and every distinct seed accepted, with a margin of about 0.12 on
either side. (On the first 24 seeds the distinct maximum was 0.42.) The text rule
(code >= 0.45 and text >= 0.6) only adds duplicates with the same story and a heavily
edited program; no distinct seed pair comes near it (text similarity at most 0.125).
Signatures cost about 10-25 ms per source on one core and are cached by source text.
``tests/test_designer_novelty.py`` re-measures and asserts the gap.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import io
import keyword
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from datasketch import MinHash, MinHashLSH

from ..program import PRELUDE_MODULES, PRELUDE_NAMES

NUM_PERM = 128
CODE_SHINGLE = 5
CODE_THRESHOLD = 0.68
CODE_THRESHOLD_WITH_TEXT = 0.45
TEXT_THRESHOLD = 0.6
#: descriptions this far apart say the two programs play different things: the code rule
#: alone no longer merges them (unless the code is near-identical, CODE_THRESHOLD_ALONE)
TEXT_DIFFERENT = 0.1
CODE_THRESHOLD_ALONE = 0.9

#: names of the program format that are not "identifiers" of one environment
FORMAT_NAMES = frozenset(
    "self cls reset step solution hint get_tools close seed action max_turns kwargs METADATA ToolUseBaseEnv "
    "super np numpy _tools _state _expected_answer _call_history turn_count".split()
)


@functools.lru_cache(maxsize=1)
def kept_names() -> frozenset[str]:
    """Names kept verbatim by the code normalization (see the module docstring)."""
    keep = set(keyword.kwlist) | set(getattr(keyword, "softkwlist", [])) | set(dir(builtins)) | FORMAT_NAMES
    keep |= set(PRELUDE_MODULES) | set(PRELUDE_NAMES)
    for modname in PRELUDE_MODULES + ["typing"]:
        try:
            keep |= {a for a in dir(importlib.import_module(modname)) if not a.startswith("_")}
        except ImportError:  # pragma: no cover
            pass
    import random

    for typ in (str, list, dict, set, tuple, int, float, bytes, random.Random):
        keep |= {a for a in dir(typ) if not a.startswith("_")}
    keep |= {"__init__", "__str__", "__repr__", "__eq__", "__lt__", "__hash__", "__len__", "__iter__"}
    return frozenset(keep)


class _StripDocstrings(ast.NodeTransformer):
    def _strip(self, node: ast.AST) -> ast.AST:
        self.generic_visit(node)
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        return node

    visit_Module = visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _strip  # type: ignore[assignment]


def normalized_tokens(source: str) -> list[str]:
    """The token stream of the code signature (see the module docstring). A source that
    does not parse falls back to raw tokens (or words), so novelty never raises."""
    try:
        tree = _StripDocstrings().visit(ast.parse(source))
        text = ast.unparse(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.findall(r"\w+|[^\w\s]", source)
    keep = kept_names()
    out: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                out.append(tok.string if tok.string in keep else "ID")
            elif tok.type == tokenize.NUMBER:
                out.append("NUM")
            elif tok.type == tokenize.STRING or tok.type in _FSTRING_TYPES:
                if not out or out[-1] != "STR":  # f-string parts collapse into one STR
                    out.append("STR")
            elif tok.type == tokenize.OP:
                out.append(tok.string)
            elif tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE):
                out.append(tokenize.tok_name[tok.type])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


_FSTRING_TYPES = {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}


#: the header SPADE's ``save_game_file`` writes into every saved game (and its
#: predecessor SPARE's): it says nothing about the environment, so it (and the
#: punctuation after it) never counts as the description; words after it do
_BOILERPLATE_DOC = re.compile(r"^\s*spa[dr]e self-play generated game\b[\s.:;,-]*", re.IGNORECASE)


def strip_boilerplate(doc: str) -> str:
    """A module docstring without SPADE's (or SPARE's) saved-game header."""
    return _BOILERPLATE_DOC.sub("", doc, count=1)


def description_text(source: str) -> str:
    """METADATA name/description and module/class docstrings (empty when unparsable)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    module_doc = ast.get_docstring(tree) or ""
    # SPADE writes the same module docstring into every saved game: it describes nothing
    parts = [strip_boilerplate(module_doc)]
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            parts.append(ast.get_docstring(node) or "")
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "METADATA" for t in node.targets):
            try:
                meta = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                continue
            if isinstance(meta, dict):
                parts += [str(meta.get("name") or ""), str(meta.get("description") or "")]
    return " ".join(p for p in parts if p)


def _minhash(shingles: Iterable[str]) -> MinHash:
    m = MinHash(num_perm=NUM_PERM)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return m


@dataclass(frozen=True)
class Signature:
    """The two MinHashes of a source (``text`` is None when it has no description)."""

    code: MinHash
    text: MinHash | None

    @classmethod
    def of(cls, source: str) -> "Signature":
        """The signature of ``source`` (cached: the same text is hashed once)."""
        return _signature(source)

    @classmethod
    def compute(cls, source: str) -> "Signature":
        toks = normalized_tokens(source)
        k = min(CODE_SHINGLE, max(1, len(toks)))
        code = _minhash({" ".join(toks[i:i + k]) for i in range(max(1, len(toks) - k + 1))})
        words = re.findall(r"\w+", description_text(source).casefold())
        text = _minhash(set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])}) if words else None
        return cls(code, text)

    def similarity(self, other: "Signature") -> tuple[float, float | None]:
        """``(code, text)`` Jaccard estimates (text None when either lacks a description)."""
        text = self.text.jaccard(other.text) if self.text is not None and other.text is not None else None
        return self.code.jaccard(other.code), text


@functools.lru_cache(maxsize=4096)
def _signature(source: str) -> Signature:
    return Signature.compute(source)


def is_duplicate(code_sim: float, text_sim: float | None) -> bool:
    """The decision rule of the module docstring (``text_sim`` None: a side has no description)."""
    if text_sim is not None and text_sim >= TEXT_THRESHOLD and code_sim >= CODE_THRESHOLD_WITH_TEXT:
        return True
    if text_sim is not None and text_sim < TEXT_DIFFERENT:
        return code_sim >= CODE_THRESHOLD_ALONE
    return code_sim >= CODE_THRESHOLD


def rule_text(code_sim: float, text_sim: float | None) -> str:
    """Which clause of the rule a duplicate meets (named in the verdict)."""
    if text_sim is not None and text_sim >= TEXT_THRESHOLD and code_sim >= CODE_THRESHOLD_WITH_TEXT:
        return f"same description and code similarity >= {CODE_THRESHOLD_WITH_TEXT}"
    if text_sim is not None and text_sim < TEXT_DIFFERENT:
        return f"different descriptions but code similarity >= {CODE_THRESHOLD_ALONE}"
    return f"threshold {CODE_THRESHOLD}"


class NoveltyIndex:
    """Known sources and a near-duplicate check against them.

    ``check(source) -> (ok, detail)`` is the ``AcceptanceConfig.novelty_check`` hook: ok is
    False with the most similar known entry named when the candidate is a near-duplicate.
    Candidates are found with MinHash LSH at ``CODE_THRESHOLD_WITH_TEXT``, then judged by
    :func:`is_duplicate`. ``check`` does not add the candidate; call :meth:`add` once it
    is accepted (the designer does), so two near-identical candidates of one batch are
    caught too.
    """

    def __init__(self) -> None:
        self._lsh = MinHashLSH(threshold=CODE_THRESHOLD_WITH_TEXT, num_perm=NUM_PERM)
        self._sigs: dict[str, Signature] = {}

    def __len__(self) -> int:
        return len(self._sigs)

    def __contains__(self, key: str) -> bool:
        return key in self._sigs

    def add(self, key: str, source: str) -> None:
        """Index ``source`` under ``key`` (an env id or any unique label); re-adding a key is a no-op."""
        if key in self._sigs:
            return
        sig = Signature.of(source)
        self._sigs[key] = sig
        self._lsh.insert(key, sig.code)

    def _nearest(self, source: str, exclude: Iterable[str]) -> tuple[str | None, float, float | None]:
        sig = Signature.of(source)
        skip = set(exclude)
        best: tuple[str | None, float, float | None] = (None, 0.0, None)
        for key in self._lsh.query(sig.code):
            if key in skip:
                continue
            code, text = sig.similarity(self._sigs[key])
            if (is_duplicate(code, text), code) > (is_duplicate(best[1], best[2]), best[1]):
                best = (key, code, text)
        return best

    def nearest(self, source: str, exclude: Iterable[str] = ()) -> tuple[str | None, float, float]:
        """``(key, code_sim, text_sim)`` of the most similar indexed source among the LSH
        candidates, keys in ``exclude`` aside (``(None, 0, 0)`` when there is none; text
        0.0 when a side has no description)."""
        key, code, text = self._nearest(source, exclude)
        return key, code, 0.0 if text is None else text

    def check(self, source: str, exclude: Iterable[str] = ()) -> tuple[bool, str]:
        key, code, text = self._nearest(source, exclude)
        shown = "none" if text is None else f"{text:.2f}"
        if key is not None and is_duplicate(code, text):
            return False, (f"near-duplicate of {key} (code similarity {code:.2f}, description similarity "
                           f"{shown}; {rule_text(code, text)}); make something different")
        if key is None:
            return True, f"novel against {len(self)} known environment(s)"
        return True, (f"novel against {len(self)} known environment(s) (closest {key}: code similarity "
                      f"{code:.2f}, description similarity {shown})")

    @classmethod
    def from_sources(cls, items: Iterable[tuple[str, str]]) -> "NoveltyIndex":
        """An index of ``(key, source)`` pairs."""
        index = cls()
        for key, source in items:
            index.add(key, source)
        return index
