"""Prompt, decoding schema and answer parsing of the ``params`` design mode.

In this mode the designer does not write a program: it proposes a *variant* of a
registry environment (DESIGN.md section 6), answering with ONE JSON object
``{"parent": ID, "kwargs": {...}}``. :func:`build_params_prompt` shows each offered
parent's description, its ``PARAMETERS`` schema and defaults, how the agent did on it
and on the variants tried before (win rates with and without the hint, regret, in the
memory's words), and asks for a point not tried yet that moves the agent's plain win
rate toward one half. :func:`decoding_schema` is the JSON Schema that constrained
decoding enforces (bounded numbers become an ``enum`` grid, because the constrained
decoders for transformers do not enforce ``minimum``/``maximum``; every parameter is
required so the model states the whole point). :func:`parse_answer` reads an answer,
also one written without constraint (the first JSON object in the text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .memory import MemoryEntry

#: integer ranges up to this many values are offered whole; wider ones as a grid
MAX_ENUM = 64
GRID = 17

SYSTEM = (
    "You are the Environment Designer of a self-play curriculum. Here you do not write code: you "
    "choose the parameters of an existing environment, making a variant of it that trains the agent at "
    "the edge of its ability. A good variant is won by the agent about half of the time on its own and "
    "clearly more often with a hint (high regret); one it always wins teaches nothing, one it never "
    "wins even with the hint teaches nothing either. Reply with ONE JSON object and nothing else."
)


@dataclass(frozen=True)
class Offer:
    """One parent offered in a prompt: its record, checked schema and memory lines."""

    env_id: str  #: full id, spade/Env-NNNNN-vK
    name: str
    description: str
    skill: str | None
    schema: dict[str, Any]
    defaults: dict[str, Any]
    parent_outcome: str = ""  #: how the agent did at the defaults ("" when unscored)
    history: list[tuple[dict[str, Any], MemoryEntry]] = field(default_factory=list)  #: past variants


def _outcome(entry: MemoryEntry) -> str:
    return entry.why() if entry.scored else "not scored yet"


def offer_text(offer: Offer) -> str:
    lines = [f"Environment {offer.env_id}: {offer.name}" + (f" - {offer.description}" if offer.description else "")]
    if offer.skill:
        lines.append(f"Skill: {offer.skill}")
    props = {k: {kk: vv for kk, vv in v.items()} for k, v in (offer.schema.get("properties") or {}).items()}
    lines.append("Its parameters (JSON Schema of the constructor's keyword arguments):")
    lines.append(json.dumps(props, indent=1, sort_keys=True))
    lines.append(f"Defaults: {json.dumps(offer.defaults, sort_keys=True)}")
    if offer.parent_outcome:
        lines.append(f"At the defaults: {offer.parent_outcome}")
    if offer.history:
        lines.append("Variants tried before, and how the agent did on them:")
        for point, entry in offer.history:
            lines.append(f"- {json.dumps(point, sort_keys=True)}: {_outcome(entry)}")
    else:
        lines.append("No variant of it has been tried yet.")
    return "\n".join(lines)


def build_params_prompt(offers: list[Offer]) -> list[dict[str, str]]:
    """The chat messages asking for one variant of one of ``offers``."""
    if not offers:
        raise ValueError("a params-mode prompt needs at least one parent environment")
    body = "\n\n".join(offer_text(o) for o in offers)
    example = offers[0]
    which = ("the environment above" if len(offers) == 1
             else f"one of the {len(offers)} environments above (name it by its id)")
    ask = (
        f"Propose a variant of {which}: values for EVERY parameter, within the schema's bounds, forming a "
        "point that is not the defaults and not a variant listed above. Make it harder where the agent "
        "wins too often, easier where it fails even with the hint, and explore near the good ones.\n"
        f'Answer with JSON only, in this form: {{"parent": "{example.env_id}", "kwargs": '
        f"{json.dumps(example.defaults, sort_keys=True)}}}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{body}\n\n{ask}"}]


def _grid(lo: float, hi: float, default: Any, integer: bool) -> list[Any]:
    if integer:
        lo_i, hi_i = int(lo), int(hi)
        if hi_i - lo_i + 1 <= MAX_ENUM:
            return list(range(lo_i, hi_i + 1))
        values = {lo_i + round(i * (hi_i - lo_i) / (GRID - 1)) for i in range(GRID)}
    else:
        values = {round(lo + i * (hi - lo) / (GRID - 1), 6) for i in range(GRID)}
    if isinstance(default, (int, float)) and not isinstance(default, bool) and lo <= default <= hi:
        values.add(int(default) if integer else float(default))
    return sorted(values)


def decoding_property(spec: dict[str, Any]) -> dict[str, Any]:
    """What constrained decoding enforces for one parameter (see the module docstring)."""
    if "const" in spec:
        return {"const": spec["const"]}
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return {"enum": list(spec["enum"])}
    kind = spec.get("type")
    if isinstance(kind, list):  # a union such as ["integer", "null"]: one option per type
        # (lm-format-enforcer takes only single-type enums, so the union is an anyOf)
        subs = [decoding_property({**spec, "type": t}) for t in kind if isinstance(t, str)]
        return subs[0] if len(subs) == 1 else {"anyOf": subs} if subs else {}
    if kind == "null":
        return {"type": "null"}
    if kind in ("integer", "number"):
        integer = kind == "integer"
        lo = spec.get("minimum", spec.get("exclusiveMinimum"))
        hi = spec.get("maximum", spec.get("exclusiveMaximum"))
        if lo is not None and hi is not None:
            if "minimum" not in spec:
                lo = lo + 1 if integer else lo + 1e-6
            if "maximum" not in spec:
                hi = hi - 1 if integer else hi - 1e-6
            if lo <= hi:
                return {"enum": _grid(lo, hi, spec.get("default"), integer)}
        return {"type": kind}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "string":
        out = {k: v for k, v in spec.items() if k in ("type", "pattern", "minLength", "maxLength", "format")}
        out.setdefault("maxLength", 64)
        return out
    return {k: v for k, v in spec.items() if k not in ("default", "description", "title", "examples")}


def offer_schema(offer: Offer) -> dict[str, Any]:
    props = offer.schema.get("properties") or {}
    kwargs = {"type": "object", "properties": {k: decoding_property(v) for k, v in props.items()},
              "required": list(props), "additionalProperties": False}
    return {"type": "object", "properties": {"parent": {"const": offer.env_id}, "kwargs": kwargs},
            "required": ["parent", "kwargs"], "additionalProperties": False}


def decoding_schema(offers: list[Offer]) -> dict[str, Any]:
    """The JSON Schema of an answer to :func:`build_params_prompt` over ``offers``."""
    schemas = [offer_schema(o) for o in offers]
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}


class AnswerError(ValueError):
    """The answer is not ``{"parent": ID, "kwargs": {...}}`` for an offered parent."""


def _first_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "{":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise AnswerError(f"no JSON object in the answer ({len(text)} characters)")


def parse_answer(text: str, offers: list[Offer]) -> tuple[Offer, dict[str, Any]]:
    """The offered parent and the proposed kwargs of an answer; :class:`AnswerError`
    says what is wrong otherwise. With one offer, a missing ``parent`` means it."""
    try:
        value = json.loads(text)
    except ValueError:
        value = _first_object(text)
    if not isinstance(value, dict):
        raise AnswerError("the answer is JSON but not an object")
    kwargs = value.get("kwargs")
    if not isinstance(kwargs, dict):
        raise AnswerError('the answer has no "kwargs" object')
    parent = value.get("parent")
    by_id = {o.env_id: o for o in offers}
    from ..registry.ids import base_of  # offers are registry ids: the id module reads them

    by_base = {base_of(o.env_id): o for o in offers}
    if parent is None and len(offers) == 1:
        return offers[0], kwargs
    offer = by_id.get(str(parent)) or by_base.get(str(parent))
    if offer is None:
        raise AnswerError(f"parent {parent!r} is not one of the offered environments ({', '.join(by_id)})")
    return offer, kwargs
