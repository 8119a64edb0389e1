"""Registry writes of a self-play run (main process only; other ranks get the results).

A collaborator of :class:`~.trainer.SelfPlayTrainer` with narrow inputs: it is given the
registry, the accelerator and a few names at construction, holds the pending programs
and the round -> generation table, and returns what it wrote. It never sees the trainer:
the trainer computes the estimates it stores (:func:`~.rewards.regret_estimate`) and
rekeys its own tables from :attr:`RegistrationReport.renamed`.

- pending programs (accepted ``code`` candidates) become ONE new generation every
  ``register_every`` rounds, through the registry's one write path
  (:func:`spade_envs.registry.write.register_accepted_many`, which measures tool specs);
- ``params`` candidates are registered as variants when accepted
  (:meth:`Registrar.register_variant`), in the generation of their round, so the agent
  plays them by id like any entry;
- stored scores (regret, win rates with and without hint) are the estimates the trainer
  computed from ALL actual plays of an environment so far, for every registry entry the
  run played that is not a seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..designer.acceptance.verdicts import verdicts_json
from . import dist
from .replay_buffer import is_program_key

if TYPE_CHECKING:
    from ..designer.regret import RegretEstimate
    from ..designer.acceptance.verdicts import StageVerdict
    from ..designer.proposal import Proposal


@dataclass
class RegistrationReport:
    """What one :meth:`Registrar.register` call wrote (the round's ``registered*`` metrics)."""

    registered: int  #: programs and variants written (new or already stored)
    registered_new: int  #: of them, new entries
    registered_variants: int  #: variants registered since the last report
    generation: int | None  #: the round's generation (None: nothing written this round)
    pushed: bool = False  #: pushed to the Hub (``push_to_hub``): the row then has ``hub_commit``
    hub_commit: str | None = None
    #: ``(pending key, registry id)`` of each program written, in order: the trainer rekeys its tables
    renamed: list[tuple[str, str]] = field(default_factory=list)

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"registered": self.registered, "registered_new": self.registered_new,
                               "registered_variants": self.registered_variants, "generation": self.generation}
        if self.pushed:
            row["hub_commit"] = self.hub_commit
        return row


class Registrar:
    """Registry side of a self-play run (holds the pending list)."""

    def __init__(self, registry: Any, *, accelerator: Any = None, designer_model: str, runtime: Any = None,
                 reward_mode: str = "regret", agent_name: str | None = None, push_to_hub: str | None = None) -> None:
        from ..registry.catalog import seed_records

        self.registry = registry
        self.acc = accelerator
        self.designer_model = designer_model
        self.runtime = runtime
        self.reward_mode = reward_mode
        self.agent_name = agent_name
        self.push_to_hub = push_to_hub
        self.pending: list[dict] = []
        self.generations: list[int] = []
        self._round_gen: dict[int, int] = {}
        self.variants_new = 0  #: variants registered since the last :meth:`register` report
        self._seed_ids = {str(rec.env_id) for rec in seed_records()}

    # -- state ------------------------------------------------------------------------------
    def is_seed(self, env_id: str) -> bool:
        return env_id in self._seed_ids

    def is_pending(self, key: str) -> bool:
        return any(x["key"] == key for x in self.pending)

    def pending_sources(self) -> list[tuple[str, str]]:
        """``(key, source)`` of the pending programs (the novelty check sees them too)."""
        return [(x["key"], x["source"]) for x in self.pending if x.get("source")]

    def add_pending(self, p: "Proposal", key: str, hinted: str, origin: str, round_no: int) -> None:
        """An accepted program, registered at the next :meth:`register` (``hinted``: the
        source to store, with its resolved hint of ``origin``)."""
        self.pending.append({"key": key, "source": hinted, "skill": p.skill, "mode": p.mode, "cid": p.cid,
                             "doc_ref": p.doc_ref, "parent_ids": p.parent_ids, "verdicts": verdicts_json(p.verdicts),
                             "hint_origin": origin, "round": round_no})

    def state_dict(self) -> dict[str, Any]:
        return {"pending": self.pending, "generations": self.generations,
                "round_generations": {str(k): v for k, v in self._round_gen.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = list(state.get("pending", []))
        self.generations = list(state.get("generations", []))
        self._round_gen = {int(k): int(v) for k, v in state.get("round_generations", {}).items()}

    def generation_of(self, round_no: int) -> int:
        """The registry generation of ``round_no``'s registrations (one per registering round)."""
        if round_no not in self._round_gen:
            self._round_gen[round_no] = dist.on_main(self.acc, self.registry.next_generation)
        return self._round_gen[round_no]

    def _note(self, gen: int) -> None:
        if gen not in self.generations:
            self.generations.append(gen)

    # -- scores -------------------------------------------------------------------------------
    def _store(self, env_id: str, est: "RegretEstimate") -> bool:
        from ..designer.scoring import store_scores

        store_scores(self.registry, env_id, est, self.reward_mode, agent_name=self.agent_name)
        return True

    def store_scores(self, items: Sequence[tuple[str, "RegretEstimate | None"]]) -> int:
        """Store ``(env id, estimate)`` for the registry entries among ``items`` (not seeds,
        not unregistered programs, not unplayed); returns how many."""
        items = [(eid, est) for eid, est in items
                 if est is not None and not self.is_seed(eid) and not is_program_key(eid)]

        def write() -> int:
            return sum(self._store(eid, est) for eid, est in items)

        return dist.on_main(self.acc, write) if items else 0

    # -- registration ---------------------------------------------------------------------------
    def register_variant(self, parent: str, params: dict, *, round_no: int, cid: str,
                         acceptance: "list[StageVerdict]", metadata: dict | None = None) -> tuple[str, bool]:
        """Register an accepted variant now; ``(env id, new)``."""
        from ..registry.write import register_variant

        gen = self.generation_of(round_no)

        def write() -> tuple[str, bool]:
            res = register_variant(self.registry, parent, params, generation=gen, acceptance=verdicts_json(acceptance),
                                   designer_model=self.designer_model, metadata={
                                       "mode": "params", "selfplay_round": round_no, "candidate": cid,
                                       **(metadata or {})})
            return str(res.env_id), bool(res.new)

        eid, new = dist.on_main(self.acc, write)
        if new:
            self._note(gen)
            self.variants_new += 1
        return eid, new

    def register(self, round_no: int, estimates: Mapping[str, "RegretEstimate | None"]) -> RegistrationReport:
        """Register the pending programs as one generation, storing the scores in
        ``estimates`` (by pending key) with them; the report says which key became which id."""
        variants, self.variants_new = self.variants_new, 0
        if not self.pending:
            return RegistrationReport(variants, variants, variants, self._round_gen.get(round_no))
        gen = self.generation_of(round_no)
        items = [{
            "source": p["source"], "filename": f"{p['cid']}.py", "generation": gen, "skill": p["skill"],
            "designer_model": self.designer_model, "grounding_ref": p["doc_ref"], "parent_ids": p["parent_ids"],
            "acceptance": p["verdicts"],
            "metadata": {"mode": p["mode"], "selfplay_round": p["round"], "hint_origin": p["hint_origin"],
                         "candidate": p["cid"]},
        } for p in self.pending]

        def write() -> list[tuple[str, bool]]:
            from ..registry.write import register_accepted_many  # the one write path: measures tool specs

            return [(str(res.env_id), bool(res.new))
                    for res in register_accepted_many(self.registry, items, runtime=self.runtime)]

        results = dist.on_main(self.acc, write)
        new, renamed = 0, []
        for p, (eid, is_new) in zip(self.pending, results):
            new += int(is_new)
            est = estimates.get(p["key"])
            if est is not None:
                dist.on_main(self.acc, lambda eid=eid, est=est: self._store(eid, est))
            renamed.append((p["key"], eid))
        self.pending = []
        new += variants
        report = RegistrationReport(len(results) + variants, new, variants, gen, renamed=renamed)
        if new:
            self._note(gen)
        if self.push_to_hub and new:
            from ..registry.hub_sync import push

            res = dist.on_main(self.acc, lambda: push(self.registry.list(seeds=True), self.push_to_hub, generation=gen))
            report.pushed, report.hub_commit = True, (res or {}).get("commit")
        return report
