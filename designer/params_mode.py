"""The ``params`` design mode: the designer proposes variants of registry environments.

DESIGN.md section 6. Instead of a program, the designer answers with JSON
``{"parent": ID, "kwargs": {...}}`` (:mod:`.params_prompts`); the parent is a seed or store
program that declares ``PARAMETERS``. Each proposal goes through, in order:

``parse``
    the answer is that JSON, naming a parent the prompt offered;
``params``
    the kwargs are valid under the parent's ``PARAMETERS``
    (:func:`spade_envs.registry.variants.plan_variant`, i.e. :mod:`spade_envs.parameters`);
    the point stored is the full one (defaults filled in);
``novelty``
    the point is not the parent's defaults, not an existing variant, and not an earlier
    proposal of the same call;
then the acceptance pipeline's stages at that point (``AcceptancePipeline.run`` with
``env_kwargs`` = the point; the source's own novelty is not judged again, it is the
parent's). Accepted proposals are scored like programs (:mod:`.scoring`: hinted and plain
plays at the point, the hint from :func:`.hints.resolve_hint`) and registered with
``Registry.add_variant`` in a new generation, with their verdicts and scores.

Decoding is constrained where the backend offers it (``backend.supports_json_schema``:
the transformers backend through lm-format-enforcer, vLLM through its guided JSON), so
even the 135M model answers valid JSON of the right shape; other backends are parsed
leniently. :func:`propose_variants` is the entry point for self-play: its proposals keep
prompt/completion token ids and sampling logprobs for the designer's GRPO step.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from ..errors import SpadeError, Stage
from .acceptance.verdicts import verdicts_json
from .memory import MemoryEntry
from .params_prompts import AnswerError, Offer, build_params_prompt, decoding_schema, parse_answer
from .prompts import prompt_hash
from .proposal import PARAMS_MODE, Proposal

MODE = PARAMS_MODE


class NoParentsError(SpadeError):
    """No registry environment (of those asked for) declares ``PARAMETERS``."""


def parametric_parents(registry: Any = None, only: list[str] | None = None) -> list[Any]:
    """Active seeds and store programs (not variants, not multi-player games) whose
    ``PARAMETERS`` is a usable schema: the latest version of each, or with ``only`` the
    ids given (latest version unless the id names one)."""
    from ..games.format import is_multiplayer
    from ..parameters import schema_of
    from ..registry.catalog import seed_records
    from ..registry.ids import parse_env_id

    recs = [r for r in [*seed_records(), *(registry.list(status="active") if registry is not None else [])]
            if r.parent is None and r.status == "active"]
    latest: dict[int, Any] = {}
    for rec in recs:
        if rec.env_id.seq not in latest or rec.env_id.version > latest[rec.env_id.seq].env_id.version:
            latest[rec.env_id.seq] = rec
    if only:
        wanted = [parse_env_id(x) for x in only]
        picked = [r for r in recs if any(w.seq == r.env_id.seq and (
            r.env_id.version == w.version if w.version is not None else latest[r.env_id.seq] is r) for w in wanted)]
    else:
        picked = list(latest.values())
    out = []
    for rec in picked:
        try:
            if schema_of(rec.source) is None or is_multiplayer(rec):
                continue
        except SpadeError:
            continue
        out.append(rec)
    return sorted(out, key=lambda r: (r.env_id.seq, r.env_id.version))


class VariantMemory:
    """Past variants per parent program, with their scores (read from the registry;
    :meth:`remember` adds one registered during this run)."""

    def __init__(self, registry: Any = None, k: int = 8) -> None:
        self.registry = registry
        self.k = k
        self._by_parent: dict[str, list[tuple[dict[str, Any], MemoryEntry]]] | None = None
        self._records: dict[str, Any] = {}

    def refresh(self) -> None:
        self._by_parent = None

    def _load(self) -> dict[str, list[tuple[dict[str, Any], MemoryEntry]]]:
        if self._by_parent is None:
            self._by_parent = {}
            if self.registry is not None:
                for rec in self.registry.list():
                    self._records[str(rec.env_id)] = rec
                    if rec.parent is not None and rec.status != "quarantined":
                        self._by_parent.setdefault(rec.parent, []).append((rec.params, MemoryEntry.from_record(rec)))
        return self._by_parent

    def history(self, parent: str) -> list[tuple[dict[str, Any], MemoryEntry]]:
        """The latest ``k`` variants of ``parent`` (oldest first)."""
        return self._load().get(parent, [])[-self.k:]

    def parent_entry(self, parent: str) -> MemoryEntry | None:
        self._load()
        rec = self._records.get(parent)
        return None if rec is None else MemoryEntry.from_record(rec)

    def remember(self, parent: str, point: dict[str, Any], entry: MemoryEntry) -> None:
        self._load().setdefault(parent, []).append((dict(point), entry))


def make_offer(rec: Any, memory: VariantMemory) -> Offer:
    from ..parameters import defaults, schema_of

    schema = schema_of(rec.source)
    pid = str(rec.env_id)
    parent_entry = memory.parent_entry(pid)
    m = rec.metadata
    return Offer(env_id=pid, name=str(m.get("name") or rec.class_name), description=str(m.get("description") or ""),
                 skill=rec.skill, schema=schema, defaults=defaults(schema),
                 parent_outcome=parent_entry.why() if parent_entry is not None and parent_entry.scored else "",
                 history=memory.history(pid))


def supports_json_schema(backend: Any) -> bool:
    """Whether ``backend.chat`` takes ``json_schema=``: its ``supports_json_schema``, or,
    for a wrapper that passes keywords through to ``backend._inner`` (the self-play
    policy backends), the inner backend's."""
    own = getattr(backend, "supports_json_schema", None)
    if own is not None:
        return bool(own)
    inner = getattr(backend, "_inner", None)
    return inner is not None and bool(getattr(inner, "supports_json_schema", False))


def _chat(backend: Any, convs: list[list[dict]], schemas: list[dict], *, max_new_tokens: int, temperature: float,
          seed: int) -> tuple[list[Any], bool]:
    """Completions (constrained when the backend supports it) and whether they were."""
    if supports_json_schema(backend):
        return backend.chat(convs, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                            json_schema=schemas), True
    return backend.chat(convs, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed), False


def propose_variants(backend: Any, registry: Any, n: int, memory: VariantMemory | None = None,
                     rng: random.Random | None = None, *, group_size: int = 1, parents: list[str] | None = None,
                     parents_per_prompt: int = 1, max_new_tokens: int = 192, temperature: float = 0.8,
                     acceptance: Any = None, runtime: Any = None, round_no: int = 0) -> list[Proposal]:
    """``n`` prompts x ``group_size`` completions of the params mode, each checked
    (parse, params, novelty, then acceptance at its point; module docstring). Nothing is
    registered. ``backend`` is an agents ``Backend``; ``registry`` a ``Registry`` (None:
    seeds only); ``parents`` restricts the offered parents; ``acceptance`` an
    ``AcceptanceConfig``. Raises :class:`NoParentsError` when no parent declares
    ``PARAMETERS``; a backend failure propagates (the caller decides)."""
    rng = rng or random.Random(0)
    memory = memory or VariantMemory(registry)
    pool = parametric_parents(registry, parents)
    if not pool:
        raise NoParentsError("no registry environment declares PARAMETERS, so there is nothing to make variants of"
                         + (f" among {', '.join(parents)}" if parents else ""))
    records = {str(r.env_id): r for r in pool}
    convs, schemas, meta = [], [], []
    for p in range(n):
        chosen = rng.sample(pool, min(max(1, parents_per_prompt), len(pool)))
        offers = [make_offer(r, memory) for r in chosen]
        messages = build_params_prompt(offers)
        schema = decoding_schema(offers)
        for c in range(group_size):
            convs.append(messages)
            schemas.append(schema)
            meta.append((f"r{round_no}-v{p}", f"r{round_no}-v{p}-c{c}", offers, messages))
    gens, constrained = _chat(backend, convs, schemas, max_new_tokens=max_new_tokens, temperature=temperature,
                              seed=rng.randrange(2**31))
    out = []
    for (group, cid, offers, messages), gen, schema in zip(meta, gens, schemas):
        prop = Proposal(cid=cid, group=group, mode=MODE, offers=[o.env_id for o in offers], messages=messages,
                        prompt_hash=prompt_hash(messages), prompt_ids=list(gen.prompt_token_ids or []),
                        completion_ids=list(gen.token_ids or []), logprobs=list(gen.logprobs or []),
                        text=gen.text, constrained=constrained, decoding_schema=schema if constrained else None)
        _check(prop, offers, records, registry)
        out.append(prop)
    _dedupe(out)
    _accept([p for p in out if p.rejected_at is None], records, acceptance, runtime)
    return out


def _check(prop: Proposal, offers: list[Offer], records: dict[str, Any], registry: Any) -> None:
    from ..registry.variants import plan_variant

    try:
        offer, kwargs = parse_answer(prop.text, offers)
    except AnswerError as exc:
        prop.verdict(Stage.PARSE, False, str(exc))
        return
    prop.parent, prop.kwargs, prop.doc_ref = offer.env_id, kwargs, offer.env_id
    prop.verdict(Stage.PARSE, True, f"variant of {offer.env_id} with {len(kwargs)} parameter(s)")
    try:
        plan = plan_variant(registry, offer.env_id, kwargs)
    except SpadeError as exc:
        prop.verdict(Stage.PARAMS, False, str(exc))
        return
    prop.point = plan.params
    prop.verdict(Stage.PARAMS, True, f"valid under the PARAMETERS of {offer.env_id}")
    if plan.is_defaults:
        prop.verdict(Stage.NOVELTY, False, f"these are the defaults of {offer.env_id}: the variant would be the parent")
        return
    existing = registry.find_variant(offer.env_id, plan.params) if registry is not None else None
    if existing is not None:
        prop.verdict(Stage.NOVELTY, False, f"the same point is already registered as {existing}")


def _dedupe(props: list[Proposal]) -> None:
    import json

    seen: dict[tuple[str, str], str] = {}
    for prop in props:
        if prop.rejected_at is not None or prop.point is None:
            continue
        key = (prop.parent or "", json.dumps(prop.point, sort_keys=True))
        if key in seen:
            prop.verdict(Stage.NOVELTY, False, f"the same point as proposal {seen[key]} of this round")
        else:
            seen[key] = prop.cid
            prop.verdict(Stage.NOVELTY, True, "a point not tried before")


def _accept(props: list[Proposal], records: dict[str, Any], acceptance: Any, runtime: Any) -> None:
    from .acceptance import AcceptanceConfig, AcceptancePipeline

    base = acceptance or AcceptanceConfig()
    for prop in props:
        rec = records[prop.parent]
        config = replace(base, env_kwargs=dict(prop.point or {}), novelty_check=None)
        report = AcceptancePipeline(config, runtime=runtime).run(rec.source, f"{prop.cid}.py")
        for s in report.stages:
            prop.record(s)
        if not report.accepted and prop.rejected_at is None:
            prop.verdict(Stage.INCOMPLETE, False, "not every acceptance stage ran")


def score_variants(agent: Any, proposals: list[Proposal], config: Any = None, *, registry: Any = None,
                   backend: Any = None, runtime: Any = None, seed: int = 0) -> list[Proposal]:
    """Hinted and plain plays of every valid proposal at its point (:mod:`.scoring`);
    sets ``proposal.estimate`` and returns the scored proposals. The hint is the parent
    program's own ``hint()`` or one ``backend`` writes (:func:`.hints.resolve_hint`)."""
    from .hints import resolve_hint
    from .scoring import PlayBudget, score_sources

    valid = [p for p in proposals if p.valid]
    if not valid:
        return []
    records = {str(r.env_id): r for r in parametric_parents(registry, sorted({p.parent for p in valid}))}
    hinted: dict[str, tuple[str, str]] = {}
    items = []
    for p in valid:
        rec = records[p.parent]
        if p.parent not in hinted:
            res = resolve_hint(rec.source, backend=backend, runtime=runtime, seed=seed)
            hinted[p.parent] = (res.source, res.origin)
        p.hint_origin = hinted[p.parent][1]
        items.append((p.env_id or p.cid, rec.source, hinted[p.parent][0], p.point))
    estimates = score_sources(agent, items, config or PlayBudget())
    for p, est in zip(valid, estimates):
        p.estimate = est
    return valid


def register_variants(registry: Any, proposals: list[Proposal], *, generation: int,
                      designer_model: str | None = None, reward_mode: str = "regret", agent_name: str | None = None,
                      memory: VariantMemory | None = None) -> list[Proposal]:
    """The one variant write path (:func:`spade_envs.registry.write.register_variant`) for
    every valid proposal, in ``generation``, with its verdicts, provenance and (when
    scored) its scores; returns the registered ones."""
    from ..registry.write import register_variant
    from .scoring import scores_metadata

    done = []
    for p in proposals:
        if not p.valid:
            continue
        est = p.estimate
        meta = {"mode": MODE, "prompt_hash": p.prompt_hash, "proposal": p.text[:2000], "constrained": p.constrained,
                "hint_origin": p.hint_origin, "offers": p.offers}
        if est is not None:
            meta["scores"] = {**scores_metadata(est, reward_mode), "agent": agent_name}
        try:
            res = register_variant(
                registry, p.parent, p.point, generation=generation, metadata=meta, acceptance=verdicts_json(p.verdicts),
                designer_model=designer_model, regret=None if est is None else est.regret,
                win_rate_hint=None if est is None else est.win_rate_hint,
                win_rate_plain=None if est is None else est.win_rate_plain)
        except SpadeError as exc:
            p.notes.append(f"registration failed: {exc}")
            continue
        p.env_id, p.new = str(res.env_id), res.new
        if memory is not None:
            memory.remember(p.parent, p.point, MemoryEntry(
                env_id=res.env_id.base, source="", generation=generation, regret=None if est is None else est.regret,
                win_rate_hint=None if est is None else est.win_rate_hint,
                win_rate_plain=None if est is None else est.win_rate_plain))
        done.append(p)
    return done
