"""The Environment Designer loop (DESIGN.md section 6): propose, accept, repair, score, register.

:class:`EnvironmentDesigner` makes ``config.n`` candidates. For each one it samples a
skill (one of :data:`~.prompts.SKILLS` unless given), a mode and a grounding document,
retrieves memory examples (:class:`~.memory.DesignerMemory`) and builds the prompt. Then,
in rounds (each round ONE batched ``Backend.chat`` over the candidates still open):

1. **propose**: the model's answer; :func:`~.extract.extract_code` takes the program
   out of it (no code is the verdict ``extract``);
2. **accept**: the acceptance pipeline, with the memory's novelty check
   (near-duplicates of the archive or of an earlier candidate of this run are rejected);
3. **repair**: a rejected candidate gets its failing verdict shown and is asked for a
   fix, at most ``config.max_repairs`` times;

then, for the accepted ones:

4. **register**: the hint is resolved (:mod:`.hints`: the program's ``hint()``, or one the
   model writes, injected into the source), and the source is added to the registry
   as generation ``registry.next_generation()`` (one new generation per run) with its
   provenance: designer model, document reference, prompt hash, parents (the memory
   examples shown), mode, every attempt's verdicts;
5. **score**: hinted and plain plays through the agents API (:mod:`.scoring`), stored
   with the environment through ``Registry.update_scores``.

Every verdict is recorded as it happened (``Candidate.attempts``, :mod:`.design_run`); a backend failure
becomes the verdict ``propose`` of the candidates it hit. The loop never raises because
of what the model wrote.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..errors import SpadeError, Stage
from ..program import source_sha256
from .acceptance import AcceptanceConfig, AcceptancePipeline, StageVerdict, replay_metadata, verdicts_json
from .corpus import Corpus
from .design_run import Candidate, DesignRun
from .extract import extract_code
from .hints import resolve_hint
from .lazy_deps import LazyDesignerDeps
from .memory import DesignerMemory, MemoryEntry
from .prompts import DEFAULT_MODES, MODES, SKILLS, build_prompt, prompt_hash, repair_messages
from .proposal import Proposal
from .regret import RewardMode
from .scoring import PlayBudget, score_sources, store_scores

#: the designer's stages, in order (progress bars and the summary use these names)
DESIGN_STAGES = ("propose", "accept", "repair", "register", "score")

ProgressFn = Callable[[str, int, int], None]


def chat_batch(model: str, n: int) -> int:
    """Conversations per designer ``chat`` call: one for a local transformers model (on a
    CPU a batch is hardly faster than its answers one by one, and the bar then moves per
    answer), all of them for batching servers (vllm, openai)."""
    return 1 if str(model).startswith("transformers:") else max(1, n)


@dataclass
class DesignConfig:
    """Knobs of a design run (the CLI's options)."""

    n: int = 1
    model: str = "transformers:default"
    skill: str | None = None  #: None: a random one of SKILLS per candidate
    mode: str | None = None  #: puzzle | game | tool; None: a random one per candidate
    corpus: str = "stdlib"
    seed: int = 0
    max_repairs: int = 2
    max_new_tokens: int = 1536
    temperature: float = 0.7
    word_budget: int = 250
    k_positive: int = 2
    k_negative: int = 2
    score: bool = True
    agent: str | None = None  #: None: the designer's own model plays (shares the backend)
    hint_plays: int = 2  #: hinted plays per accepted environment (regret; scoring.PlayBudget)
    plain_plays: int = 4  #: plain plays per accepted environment
    max_turns: int = 6
    agent_max_new_tokens: int = 256
    reward_mode: str = "regret"
    acceptance: AcceptanceConfig = field(default_factory=AcceptanceConfig)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be at least 1")
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.max_repairs < 0:
            raise ValueError("max_repairs must be >= 0")
        RewardMode(self.reward_mode)


class EnvironmentDesigner(LazyDesignerDeps):
    """Runs the design loop of the module docstring.

    Dependencies can be injected (tests pass fakes): ``backend`` (a
    :class:`~spade_envs.agents.Backend`; default ``load_backend(config.model)``),
    ``agent`` (default: an ``LLMAgent`` over the same backend, or ``load_agent(config.agent)``),
    ``registry`` (default ``Registry.open()``), ``memory`` (default over ``registry``),
    ``runtime`` for the acceptance pipeline and hints (default: the sandbox), ``corpus``.
    """

    def __init__(self, config: DesignConfig | None = None, *, backend: Any = None, agent: Any = None,
                 registry: Any = None, memory: DesignerMemory | None = None, runtime: Any = None,
                 corpus: Corpus | None = None, progress: ProgressFn | None = None) -> None:
        self.config = config or DesignConfig()
        self._backend = backend
        self._agent = agent
        self._registry = registry
        self._memory = memory
        self.runtime = runtime
        self.corpus = corpus or Corpus(self.config.corpus)
        self.progress = progress or (lambda stage, done, total: None)

    # -- dependencies ------------------------------------------------------------------


    @property
    def memory(self) -> DesignerMemory:
        if self._memory is None:
            self._memory = DesignerMemory(self.registry)
        return self._memory


    # -- the loop ----------------------------------------------------------------------
    def plan(self) -> list[Candidate]:
        """The candidates with their skill, mode, document, memory examples and prompt."""
        cfg = self.config
        rng = random.Random(cfg.seed)
        docs = self.corpus.sample(cfg.n, seed=cfg.seed, word_budget=cfg.word_budget)
        out = []
        for i in range(cfg.n):
            skill = cfg.skill or rng.choice(SKILLS)
            mode = cfg.mode or rng.choice(DEFAULT_MODES)
            doc = docs[i % len(docs)]
            retrieval = self.memory.retrieve(skill, mode=mode, k_positive=cfg.k_positive,
                                             k_negative=cfg.k_negative, seed=cfg.seed + i)
            messages = build_prompt(mode, skill, doc, retrieval)
            out.append(Candidate(index=i, skill=skill, mode=mode, document=doc, prompt_hash=prompt_hash(messages),
                                 parents=retrieval.parent_ids, conversation=messages))
        return out

    def run(self) -> DesignRun:
        """Make ``config.n`` candidates; see the module docstring."""
        cfg = self.config
        seconds = dict.fromkeys(DESIGN_STAGES, 0.0)
        t = time.perf_counter()
        self.backend  # noqa: B018 - a bad model spec fails here, not as verdicts
        candidates = self.plan()
        seconds["propose"] += time.perf_counter() - t
        pipeline = AcceptancePipeline(replace(cfg.acceptance, novelty_check=self.memory.novelty_check), runtime=self.runtime)
        open_ = list(candidates)
        total_attempts = cfg.n
        for round_no in range(cfg.max_repairs + 1):
            if not open_:
                break
            stage = "propose" if round_no == 0 else "repair"
            t = time.perf_counter()
            base = 0 if stage == "propose" else total_attempts - cfg.n - len(open_)  # repair answers so far
            planned = cfg.n if stage == "propose" else total_attempts - cfg.n
            answers = self._chat([c.conversation for c in open_], round_no,
                                 lambda done: self.progress(stage, base + done, planned))
            seconds[stage] += time.perf_counter() - t
            still_open = []
            for c, answer in zip(open_, answers):
                t = time.perf_counter()
                attempt = self._evaluate(c, answer, round_no, pipeline)
                seconds["accept"] += time.perf_counter() - t
                self.progress("accept", sum(len(x.attempts) for x in candidates), total_attempts)
                if attempt.valid or answer is None:
                    continue
                if round_no < cfg.max_repairs:
                    bad = attempt.failure or StageVerdict(Stage.INCOMPLETE, False, "not every stage ran")
                    c.conversation = repair_messages(c.conversation, answer, str(bad.name), bad.detail)
                    still_open.append(c)
            open_ = still_open
            total_attempts += len(open_)
        accepted = [c for c in candidates if c.accepted]
        generation = None
        if accepted:
            t = time.perf_counter()
            generation = self._register(accepted)
            seconds["register"] += time.perf_counter() - t
            if cfg.score:
                t = time.perf_counter()
                self._score([c for c in accepted if c.env_id])
                seconds["score"] += time.perf_counter() - t
        return DesignRun(generation=generation, candidates=candidates, seconds=seconds)

    def _chat(self, conversations: list[list[dict]], round_no: int,
              on_answers: Callable[[int], None] | None = None) -> list[str | None]:
        """The designer's answers, generated ``chat_batch`` conversations at a time
        (:func:`chat_batch`); ``on_answers(done)`` after each batch (the progress bar)."""
        cfg = self.config
        step = chat_batch(cfg.model, len(conversations))
        out: list[str | None] = []
        for start in range(0, len(conversations), step):
            part = conversations[start:start + step]
            try:
                gens = self.backend.chat(part, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                                         seed=cfg.seed + round_no + start)
                out.extend(g.text for g in gens)
            except SpadeError as exc:
                self._backend_error = str(exc)
                out.extend([None] * len(part))
            if on_answers is not None:
                on_answers(len(out))
        return out

    def _evaluate(self, c: Candidate, answer: str | None, round_no: int, pipeline: AcceptancePipeline) -> Proposal:
        """Candidate ``c``'s answer of round ``round_no`` as a proposal with its verdicts
        (appended to ``c.attempts``): accepted exactly when the pipeline accepts it."""
        prop = Proposal(cid=f"candidate-{c.index}-{round_no}", group=f"candidate-{c.index}", mode=c.mode,
                        prompt_ids=[], completion_ids=[], logprobs=[], text=answer or "", skill=c.skill,
                        doc_ref=c.document.ref, messages=list(c.conversation), prompt_hash=c.prompt_hash,
                        parent_ids=list(c.parents), attempt=round_no)
        c.attempts.append(prop)
        if answer is None:
            prop.verdict(Stage.PROPOSE, False, f"the designer model failed: {getattr(self, '_backend_error', 'no answer')}")
            return prop
        code = extract_code(answer)
        if code is None:
            prop.verdict(Stage.EXTRACT, False, f"no Python program in the answer ({len(answer)} characters)")
            return prop
        c.source = prop.source = code
        report = pipeline.run(code, filename=f"candidate_{c.index:03d}.py")
        prop.verdict(Stage.EXTRACT, True, f"{len(code.splitlines())} lines of code")
        for verdict in report.stages:
            prop.record(verdict)
        if not report.accepted and prop.rejected_at is None:
            prop.verdict(Stage.INCOMPLETE, False, "not every acceptance stage ran")
        if report.accepted:  # later candidates of this run must differ from it too
            self.memory.novelty_index().add(f"candidate-{c.index}", code)
        return prop

    def _register(self, accepted: list[Candidate]) -> int:
        from ..registry.write import register_accepted

        cfg = self.config
        reg = self.registry
        generation = reg.next_generation()
        for i, c in enumerate(accepted):
            assert c.source is not None
            hint = resolve_hint(c.source, backend=self._backend_or_none(), runtime=self.runtime, seed=cfg.seed)
            c.hint_origin, c.hint_note = hint.origin, hint.note
            if hint.note:
                c.notes.append(hint.note)
            try:
                res = register_accepted(  # the one write path: it measures the tool specs
                    reg, hint.source, filename=f"candidate_{c.index:03d}.py", runtime=self.runtime,
                    generation=generation, skill=c.skill,
                    designer_model=cfg.model, grounding_ref=c.document.ref, parent_ids=c.parents,
                    acceptance=verdicts_json(c.attempts[-1].verdicts),
                    metadata={"mode": c.mode, "prompt_hash": c.prompt_hash, "hint_origin": hint.origin,
                              "repairs": c.repairs, "designer_seed": cfg.seed,
                              "attempts": [a.rejected_at for a in c.attempts],
                              "accepted_sha256": source_sha256(c.source),
                              **replay_metadata(c.attempts[-1].verdicts)},
                )
            except SpadeError as exc:
                c.notes.append(f"registration failed: {exc}")
                continue
            c.env_id, c.new = str(res.env_id), res.new
            if not res.new:
                c.notes.append(f"the same source is already registered as {res.env_id}")
            c.source = hint.source
            self.memory.remember(MemoryEntry(env_id=res.env_id.base, source=hint.source, skill=c.skill, mode=c.mode,
                                             generation=generation, name=f"candidate {c.index}"))
            self.progress("register", i + 1, len(accepted))
        return generation

    def _backend_or_none(self) -> Any:
        try:
            return self.backend
        except SpadeError:
            return None

    def _score(self, registered: list[Candidate]) -> None:
        cfg = self.config
        sc = PlayBudget(hint_plays=cfg.hint_plays, plain_plays=cfg.plain_plays, max_turns=cfg.max_turns)
        # one program for both kinds of play: the hint is shown only when hint=True
        items = [(c.env_id, c.source, c.source) for c in registered]
        try:
            estimates = score_sources(self.agent, items, sc)
        except (SpadeError, ValueError) as exc:
            for c in registered:
                c.notes.append(f"scoring failed: {exc}")
            return
        for i, (c, est) in enumerate(zip(registered, estimates)):
            c.estimate = est
            store_scores(self.registry, c.env_id, est, cfg.reward_mode, agent_name=getattr(self.agent, "name", None))
            self.progress("score", i + 1, len(registered))

