"""The designer role inside self-play: prompts -> completions -> acceptance.

Thin coupling to :mod:`spade_envs.designer`: ``prompts.build_prompt`` (falls back to a
short built-in prompt if the module is missing), ``memory.DesignerMemory`` (retrieval and
the novelty check), ``extract.extract_code``, ``hints.resolve_hint`` and the
``acceptance.AcceptancePipeline``. Completions keep their prompt/completion token ids and
sampling logprobs, because the designer's GRPO step happens later, when the regret of
its environment is known.

``scripted:seed-variants`` (a harness check, like ``replay:reference`` for agents) is a
backend whose answers alternate between a seed environment of the train split with its
class renamed (valid) and prose with no code (invalid), so the registration path and a
non-zero designer advantage can be exercised without a capable model.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable

from ..agents.api import Backend, Generation
from ..designer.acceptance.verdicts import StageVerdict
from ..designer.proposal import Proposal
from ..errors import Stage


def fallback_prompt(mode: str, skill: str, doc_text: str) -> list[dict]:
    return [{"role": "system", "content": "You write Python training environments for a reasoning agent."},
            {"role": "user", "content": f"Write a {mode} environment (one class ending in Env with reset, step, "
             f"solution, hint) training {skill}, grounded on:\n{doc_text}\nReply with one ```python block."}]


def rename_env_class(source: str, suffix: str) -> str:
    """``source`` with its public ``*Env`` class renamed to ``<Name><suffix>Env``."""
    m = re.search(r"^class (\w+?)Env\b", source, re.MULTILINE)
    if m is None:
        raise ValueError("no *Env class in source")
    return re.sub(rf"\b{m.group(1)}Env\b", f"{m.group(1)}{suffix}Env", source)


class ScriptedSeedVariants(Backend):
    """Answers: even calls a renamed train-split seed (valid), odd calls prose (invalid)."""

    token_level = False

    def __init__(self, tokenizer: Any) -> None:
        from ..registry.catalog import seed_records
        from .splits import is_heldout

        self.name = "scripted:seed-variants"
        self.tokenizer = tokenizer
        self.calls = 0
        self.seeds = [r for r in seed_records() if not is_heldout(str(r.env_id)) and "ToolUseBaseEnv" not in r.source]

    def chat(self, conversations: list[list[dict]], *, tools: Any = None, max_new_tokens: int = 256,
             temperature: float = 0.6, seed: int | None = None) -> list[Generation]:
        from ..agents.chat import encode, render

        out = []
        for conv in conversations:
            k = self.calls
            self.calls += 1
            if k % 2 == 0:
                rec = self.seeds[(k // 2) % len(self.seeds)]
                text = "```python\n" + rename_env_class(rec.source, f"V{seed or 0}x{k}") + "```"
            else:
                text = "I am not sure how to write this environment."
            prompt = encode(self.tokenizer, render(self.tokenizer, conv))
            ids = encode(self.tokenizer, text)
            out.append(Generation(text=text, token_ids=ids, logprobs=[], prompt_token_ids=prompt))  # none sampled
        return out


def fit_prompt(build: Callable[[Any, Any], list[dict]], retrieval: Any, doc: Any,
               count: Callable[[list[dict]], int], budget: int) -> tuple[list[dict], Any]:
    """The designer prompt ``build(retrieval, doc)`` within ``budget`` tokens
    (``designer_prompt_tokens``): memory examples go first (good examples one by one, the
    format example, then the negatives), then the document is cut by halves; the contract
    is never cut, so a prompt may stay over budget when the contract alone is. Returns the
    messages and the retrieval they show."""
    import dataclasses

    messages = build(retrieval, doc)
    if retrieval is not None:
        cuts = [dict(positives=retrieval.positives[:k]) for k in range(len(retrieval.positives) - 1, -1, -1)]
        cuts += [dict(positives=[], format_example=None), dict(positives=[], format_example=None, negatives=[])]
        for cut in cuts:
            if count(messages) <= budget:
                return messages, retrieval
            retrieval = dataclasses.replace(retrieval, **cut)
            messages = build(retrieval, doc)
    words = doc.text.split()
    while count(messages) > budget and len(words) > 8:
        words = words[: len(words) // 2]
        doc = dataclasses.replace(doc, text=" ".join(words))
        messages = build(retrieval, doc)
    return messages, retrieval


class SelfPlayDesigner:
    """Proposes and validates candidates for one round."""

    def __init__(self, config: Any, backend: Backend, registry: Any, runtime: Any = None, *,
                 accelerator: Any = None) -> None:
        from ..designer.corpus import Corpus

        self.config = config
        self.backend = backend
        self.registry = registry
        self.runtime = runtime
        self.docs = Corpus(config.corpus).sample(64, seed=config.seed)
        self._memory = None
        self.acc: Any = accelerator  #: the accelerator when several processes run (verdicts from the main one)

    @property
    def memory(self) -> Any:
        if self._memory is None:
            from ..designer.memory import DesignerMemory

            self._memory = DesignerMemory(self.registry)
        return self._memory

    def _prompt(self, mode: str, skill: str, doc: Any, seed: int) -> tuple[list[dict], list[str]]:
        try:
            from ..designer.prompts import build_prompt
        except ImportError:
            return fallback_prompt(mode, skill, doc.text), []
        retrieval = self.memory.retrieve(skill, mode=mode, seed=seed)
        messages, retrieval = fit_prompt(lambda r, d: build_prompt(mode, skill, d, r), retrieval, doc,
                              self._counter(), int(self.config.designer_prompt_tokens))
        return messages, list(getattr(retrieval, "parent_ids", []) or [])

    def _counter(self) -> Callable[[list[dict]], int]:
        tokenizer = getattr(self.backend, "tokenizer", None)
        if tokenizer is None:  # a backend without a tokenizer: about 4 characters a token
            return lambda messages: sum(len(m.get("content") or "") for m in messages) // 4
        from ..agents.chat import encode, render

        return lambda messages: len(encode(tokenizer, render(tokenizer, messages)))

    def propose(self, round_no: int, rng: random.Random, pending: list[tuple[str, str]] = (),
                n_prompts: int | None = None) -> list[Proposal]:
        """``designer_prompts`` prompts x ``designer_group_size`` completions, validated.
        The memory is reloaded from the registry first; ``pending`` = ``(key, source)`` of
        accepted environments not registered yet (the novelty check sees them too)."""
        from ..designer.extract import extract_code

        cfg = self.config
        self.memory.refresh()
        if cfg.novelty_check:
            for key, source in pending:
                self.memory.novelty_index().add(key, source)
        convs, meta = [], []
        for p in range(cfg.designer_prompts if n_prompts is None else n_prompts):
            skill, mode = rng.choice(cfg.skills), rng.choice(cfg.modes)
            doc = self.docs[rng.randrange(len(self.docs))]
            messages, parents = self._prompt(mode, skill, doc, rng.randrange(2**31))
            for c in range(cfg.designer_group_size):
                convs.append(messages)
                meta.append((f"r{round_no}-p{p}", f"r{round_no}-p{p}-c{c}", skill, mode, doc.ref, parents))
        if not convs:
            return []
        gens = self.backend.chat(convs, max_new_tokens=cfg.designer_max_new_tokens, temperature=cfg.temperature,
                                 seed=rng.randrange(2**31))
        out = []
        for (group, cid, skill, mode, ref, parents), gen in zip(meta, gens):
            prop = Proposal(cid, group, mode, list(gen.prompt_token_ids), list(gen.token_ids), list(gen.logprobs),
                            gen.text, skill=skill, doc_ref=ref, parent_ids=parents)
            prop.source = extract_code(gen.text)
            if prop.source is None:
                prop.verdict(Stage.EXTRACT, False, "no Python program in the answer")
            out.append(prop)
        self._accept([p for p in out if p.source is not None])
        return out

    def _accept(self, props: list[Proposal]) -> None:
        """Acceptance of ``props`` (in order: a later candidate must differ from an earlier
        accepted one). Verdicts depend on sandbox deadlines, so with several processes the
        main process judges and broadcasts; every rank then records the same verdicts and
        adds the same accepted programs to its novelty index."""
        from . import dist

        cfg = self.config
        index = self.memory.novelty_index() if cfg.novelty_check else None
        acc = self.acc
        verdicts = dist.on_main(acc, lambda: self._judge(props, index))
        for prop, (novelty, stages, rejected_at) in zip(props, verdicts):
            prop.novelty, prop.verdicts, prop.rejected_at = novelty, stages, rejected_at
            if rejected_at is None and index is not None and not dist.is_main(acc):
                index.add(prop.cid, prop.source)  # the main process added it while judging

    def _judge(self, props: list[Proposal], index: Any) -> list[tuple[float | None, list[StageVerdict], str | None]]:
        from ..designer.acceptance import AcceptanceConfig, AcceptancePipeline

        cfg = self.config
        novelty_check = self.memory.novelty_check if cfg.novelty_check else None
        pipeline = AcceptancePipeline(AcceptanceConfig(seeds=tuple(cfg.acceptance_seeds), novelty_check=novelty_check),
                                      runtime=self.runtime)
        out = []
        for prop in props:
            novelty = None
            if index is not None and len(index):
                _, code_sim, text_sim = index.nearest(prop.source)
                novelty = 1.0 - max(code_sim, text_sim)
            report = pipeline.run(prop.source, filename=f"{prop.cid}.py")
            stages = [StageVerdict(Stage.EXTRACT, True, "code found"), *report.stages]
            out.append((novelty, stages, None if report.accepted else str(report.rejected_at)))
            if report.accepted and index is not None:
                index.add(prop.cid, prop.source)  # later candidates must differ from it too
        return out

    def hinted_source(self, source: str, backend: Any = None) -> tuple[str, str]:
        """``(source to play hinted, hint origin)`` via ``designer.hints.resolve_hint``."""
        try:
            from ..designer.hints import resolve_hint
        except ImportError:
            return source, "none"
        res = resolve_hint(source, backend=backend, runtime=self.runtime, seed=self.config.seed)
        return res.source, res.origin
