"""Registry writes of a self-play run (main process only; other ranks get the results).

- pending programs (accepted ``code`` candidates) become ONE new generation every
  ``register_every`` rounds, through the registry's one write path
  (:func:`spade_envs.registry.write.register_accepted_many`, which measures tool specs);
- ``params`` candidates are registered as variants when accepted
  (``Registry.add_variant``), in the generation of their round, so the agent plays them
  by id like any entry;
- stored scores (regret, win rates with and without hint) are computed from ALL actual
  plays of an environment so far (never rebuilt from two means), for every registry
  entry the run played that is not a seed.
"""

from __future__ import annotations

from typing import Any

from . import dist
from .splits import is_heldout


class Registrar:
    """Registry side of :class:`~.trainer.SelfPlayTrainer` (holds the pending list)."""

    def __init__(self, trainer: Any) -> None:
        self.tr = trainer
        self.pending: list[dict] = []
        self.generations: list[int] = []
        self._round_gen: dict[int, int] = {}
        self.variants_new = 0  #: variants registered since the last :meth:`register` report
        from ..registry.catalog import seed_records

        self._seed_ids = {str(rec.env_id) for rec in seed_records()}

    # -- state ------------------------------------------------------------------------------
    def is_pending(self, key: str) -> bool:
        return any(x["key"] == key for x in self.pending)

    def add_pending(self, p: Any, key: str, hinted: str, origin: str, round_no: int) -> None:
        self.pending.append({"key": key, "source": hinted, "skill": p.skill, "mode": p.mode, "cid": p.cid,
                             "doc_ref": p.doc_ref, "parent_ids": p.parent_ids, "verdicts": p.verdicts,
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
            self._round_gen[round_no] = dist.on_main(self.tr.acc, self.tr.registry.next_generation)
        return self._round_gen[round_no]

    def _note(self, gen: int) -> None:
        if gen not in self.generations:
            self.generations.append(gen)

    # -- scores -------------------------------------------------------------------------------
    def estimate(self, key: str) -> Any:
        """RegretEstimate from every recorded play of ``key`` (None when never played);
        regret 0 (hinted = plain) when the environment has no usable hint."""
        from ..designer.regret import RegretEstimate

        kept = self.tr.plays.get(key)
        if not kept or not kept["plain"]:
            return None
        entry = self.tr.buffer.entries.get(key)
        usable = entry is None or entry.hint_usable
        hint = kept["hint"] or self.tr.hint_cache.get(key, [])
        if not usable or not hint:
            return RegretEstimate.from_rewards(kept["plain"], kept["plain"], extra={"hint": "none"})
        return RegretEstimate.from_rewards(hint, kept["plain"])

    def _store(self, env_id: str, est: Any) -> bool:
        from ..designer.scoring import store_scores

        store_scores(self.tr.registry, env_id, est, self.tr.config.reward_mode, agent_name=self.tr.agent.name)
        return True

    def store_scores(self, plays: list[Any]) -> int:
        """Store the scores of the played registry entries (not seeds); returns how many."""
        items = [(e.env_id, self.estimate(e.key)) for e in plays
                 if e.env_id and e.env_id not in self._seed_ids and not e.env_id.startswith("src:")]
        items = [(eid, est) for eid, est in items if est is not None]

        def write() -> int:
            return sum(self._store(eid, est) for eid, est in items)

        return dist.on_main(self.tr.acc, write) if items else 0

    # -- registration ---------------------------------------------------------------------------
    def register_variant(self, parent: str, params: dict, *, round_no: int, skill: str | None, cid: str,
                         acceptance: list[dict], metadata: dict | None = None) -> tuple[str, bool]:
        """Register an accepted variant now; ``(env id, new)``."""
        gen = self.generation_of(round_no)
        designer_model = getattr(self.tr.designer.backend, "name", self.tr.config.model)

        def write() -> tuple[str, bool]:
            res = self.tr.registry.add_variant(parent, params, generation=gen, acceptance=acceptance,
                                               designer_model=designer_model, metadata={
                "mode": "params", "selfplay_round": round_no, "candidate": cid, **(metadata or {})})
            return str(res.env_id), bool(res.new)

        eid, new = dist.on_main(self.tr.acc, write)
        if new:
            self._note(gen)
            self.variants_new += 1
        return eid, new

    def register(self, round_no: int) -> dict[str, Any]:
        """Register the pending programs as one generation; rekey ledger and buffer."""
        tr = self.tr
        variants, self.variants_new = self.variants_new, 0
        if not self.pending:
            return {"registered": variants, "registered_new": variants, "registered_variants": variants,
                    "generation": self._round_gen.get(round_no)}
        gen = self.generation_of(round_no)
        designer_model = getattr(tr.designer.backend, "name", tr.config.model)
        items = [{
            "source": p["source"], "filename": f"{p['cid']}.py", "generation": gen, "skill": p["skill"],
            "designer_model": designer_model, "grounding_ref": p["doc_ref"], "parent_ids": p["parent_ids"],
            "acceptance": p["verdicts"],
            "metadata": {"mode": p["mode"], "selfplay_round": p["round"], "hint_origin": p["hint_origin"],
                         "candidate": p["cid"]},
        } for p in self.pending]

        def write() -> list[tuple[str, bool]]:
            from ..registry.write import register_accepted_many  # the one write path: measures tool specs

            runtime = getattr(tr.designer, "runtime", None)
            return [(str(res.env_id), bool(res.new))
                    for res in register_accepted_many(tr.registry, items, runtime=runtime)]

        results = dist.on_main(tr.acc, write)
        new = 0
        for p, (eid, is_new) in zip(self.pending, results):
            new += int(is_new)
            est = self.estimate(p["key"])
            if est is not None:
                dist.on_main(tr.acc, lambda eid=eid, est=est: self._store(eid, est))
            for table in (tr.plays, tr.hint_cache, tr.hint_sources):
                if p["key"] in table:
                    table[eid] = table.pop(p["key"])
            if is_heldout(eid):
                tr.ledger.finalize(p["key"])
            else:
                tr.ledger.rekey(p["key"], eid)
            tr.buffer.rekey(p["key"], eid)
        self.pending = []
        new += variants
        out: dict[str, Any] = {"registered": len(results) + variants, "registered_new": new,
                               "registered_variants": variants, "generation": gen}
        if new:
            self._note(gen)
        if tr.config.push_to_hub and new:
            from ..registry.hub_sync import push

            res = dist.on_main(tr.acc, lambda: push(tr.registry.list(seeds=True), tr.config.push_to_hub, generation=gen))
            out["hub_commit"] = (res or {}).get("commit")
        return out
