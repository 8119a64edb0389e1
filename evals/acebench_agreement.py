"""Agreement of spade's ACEBench verdicts with ACEBench's own evaluation code.

ACEBench's ``eval_main.py`` (from the checkout; third-party, so in-process only with
``trust_remote_code=True``) scores files of model results. Here it scores the same
records the suite produced:

- **agent categories**, entry by entry: ``agent_eval`` and ``agent_eval_process`` are
  called on one entry at a time with its ``result`` and ``process`` records, and their
  end-to-end verdict and process accuracy are compared with spade's;
- **perturbed trajectories** (:func:`perturb`): from each reference trajectory, one
  message dropped, one argument changed, one state-changing call repeated, a pair of
  messages swapped; each is executed afresh and judged by both;
- **normal and special categories**, per category: ACEBench's ``normal_single_turn_eval``,
  ``normal_multi_turn_eval`` or ``special_eval`` score a result file written in its
  layout, and the accuracy it returns is compared with spade's.

ACEBench's evaluator writes score files relative to the working directory; every call
runs inside a temporary folder, and the previous working directory is restored.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .acebench_calls import AceCallError, decode_calls, format_message

MODEL_NAME = "spade"
PERTURBATIONS = ("drop_call", "change_argument", "extra_call", "reorder_pair")


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="spade-acebench-eval-") as tmp:
        os.chdir(tmp)
        try:
            (Path(tmp) / "score_all" / "score_en" / MODEL_NAME).mkdir(parents=True)
            yield Path(tmp)
        finally:
            os.chdir(old)


class OfficialEvaluator:
    """ACEBench's ``eval_main`` module, loaded from the checkout (trusted code)."""

    def __init__(self, root: str | Path, data_dir: Path, *, trust_remote_code: bool) -> None:
        from .acebench_score import import_checkout

        load = import_checkout(root, trust_remote_code=trust_remote_code)
        self.main = load("eval_main")
        self.data_dir = data_dir
        self.main.language = "en"

    def _rows(self, category: str, kind: str) -> dict[str, dict[str, Any]]:
        folder = self.data_dir / ("possible_answer" if kind == "answer" else "")
        path = folder / f"data_{category}.json"
        return {r["id"]: r for r in (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip())}

    def agent_entry(self, category: str, entry_id: str, result: Any, process: Sequence[str]) -> tuple[bool, float]:
        """ACEBench's (end-to-end valid, process accuracy) of one agent entry."""
        prompt = [self._rows(category, "prompt")[entry_id]]
        answer = [self._rows(category, "answer")[entry_id]]
        record = json.loads(json.dumps([{"id": entry_id, "result": result, "process": list(process)}]))
        with _scratch():
            self.main.OUTPUT_PATH = "./score_all/score_en/"
            accuracy, _ = self.main.agent_eval(record, prompt, answer, category, MODEL_NAME)
            correct = [0] if accuracy == 1.0 else []
            process_acc = self.main.agent_eval_process(MODEL_NAME, record, answer, category, correct, "en")
        return accuracy == 1.0, float(process_acc)

    def category_accuracy(self, category: str, rows: Sequence[dict[str, Any]]) -> float:
        """ACEBench's accuracy of a normal or special category over ``rows`` (in data order)."""
        prompts, answers = self._rows(category, "prompt"), self._rows(category, "answer")
        ids = [r["id"] for r in rows]
        with _scratch() as tmp:
            result_dir = tmp / "result_all" / "result_en" / MODEL_NAME
            result_dir.mkdir(parents=True)
            data = tmp / "data"
            (data / "possible_answer").mkdir(parents=True)
            for folder, table in ((data, prompts), (data / "possible_answer", answers)):
                (folder / f"data_{category}.json").write_text(
                    "".join(json.dumps(table[i], ensure_ascii=False) + "\n" for i in ids), encoding="utf-8")
            (result_dir / f"data_{category}_result.json").write_text(
                "".join(json.dumps({"id": r["id"], "result": r["result"]}, ensure_ascii=False) + "\n" for r in rows),
                encoding="utf-8")
            paths = {"INPUT_PATH": f"{tmp}/result_all/result_en/", "PROMPT_PATH": f"{data}/",
                     "POSSIBLE_ANSWER_PATH": f"{data}/possible_answer/", "OUTPUT_PATH": f"{tmp}/score_all/score_en/"}
            self.main.OUTPUT_PATH = paths["OUTPUT_PATH"]
            records = [{"id": r["id"], "result": r["result"]} for r in rows]
            p, a = [prompts[i] for i in ids], [answers[i] for i in ids]
            if category.startswith("special_"):
                return float(self.main.special_eval(records, p, a, category, MODEL_NAME, paths))
            if "multi_turn" in category:
                return float(self.main.normal_multi_turn_eval(records, p, a, category, MODEL_NAME, paths))
            return float(self.main.normal_single_turn_eval(records, p, a, category, MODEL_NAME, paths))


def perturb(messages: Sequence[str]) -> dict[str, list[str]]:
    """Perturbed copies of a reference trajectory (only those that apply to it)."""
    msgs = list(messages)
    out: dict[str, list[str]] = {}
    if msgs:
        out["drop_call"] = msgs[:-1]
        out["extra_call"] = msgs + [msgs[-1]]
    for i in range(len(msgs) - 1, -1, -1):
        try:
            calls = decode_calls(msgs[i])
        except AceCallError:
            continue
        changed = _change_argument(calls)
        if changed is not None:
            out["change_argument"] = msgs[:i] + [format_message(changed)] + msgs[i + 1:]
            break
    if len(msgs) >= 2:
        out["reorder_pair"] = [msgs[1], msgs[0]] + msgs[2:]
    return out


def _change_argument(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]] | None:
    for n, (name, kwargs) in enumerate(calls):
        for key, value in kwargs.items():
            if isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                new = dict(kwargs)
                new[key] = value + " (changed)" if isinstance(value, str) else value + 1
                return calls[:n] + [(name, new)] + calls[n + 1:]
    return None


def tally(pairs: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    agree = sum(1 for ours, theirs in pairs if ours == theirs)
    return {"n": len(pairs), "agree": agree, "rate": round(agree / len(pairs), 6) if pairs else None}


def agreement_line(agreement: dict[str, Any]) -> str:
    """The one-line summary of :func:`check_agreement`: only what was compared (agent
    entries, perturbed trajectories, normal/special categories), never ``0/0``."""
    parts = [f"{label} {agreement[key]['agree']}/{agreement[key]['n']}" for key, label in
             (("entries", "agent entries"), ("perturbed", "perturbed trajectories"))
             if (agreement.get(key) or {}).get("n")]
    cats = agreement.get("categories") or {}
    if cats:
        parts.append(f"categories {sum(1 for c in cats.values() if c.get('agree'))}/{len(cats)}")
    return "agreement with ACEBench's evaluation: " + (", ".join(parts) or "nothing to compare")


def check_agreement(root: str | Path, entries: Sequence[Any], rows: Sequence[dict[str, Any]], *, runtime: Any,
                    trust_remote_code: bool, perturbations: bool = True) -> dict[str, Any]:
    """``summary["agreement"]``: spade's verdicts against ACEBench's evaluation of the same run."""
    from .acebench import AGENT, find_data_dir
    from .acebench_score import end_to_end, process_accuracy
    from .acebench_world import AceWorld, ScenarioProgram

    official = OfficialEvaluator(root, find_data_dir(root), trust_remote_code=trust_remote_code)
    by_id = {e.id: e for e in entries}
    entry_pairs, perturbed_pairs, disagreements = [], [], []
    programs: dict[str, ScenarioProgram] = {}
    for row in rows:
        entry = by_id[row["id"]]
        if entry.category not in AGENT or "end_to_end_ok" not in row:
            continue
        theirs = official.agent_entry(entry.category, entry.id, row["result"], row["process"])
        ours = (row["end_to_end_ok"], row["process_acc"])
        entry_pairs.append((ours, theirs))
        if ours != theirs:
            disagreements.append({"id": entry.id, "ours": ours, "acebench": theirs})
        if not perturbations:
            continue
        program = programs.setdefault(entry.category, ScenarioProgram(root, entry.category))
        for kind, messages in perturb(row["process"]).items():
            world = AceWorld(program, entry.involved_classes, entry.initial_config, runtime)
            try:
                for m in messages:
                    world.execute(m)
                result = world.result()
            finally:
                world.close()
            ok = end_to_end(result, entry.ground_truth)[0]
            ours_p = (ok, process_accuracy(entry.milestones, messages, ok))
            theirs_p = official.agent_entry(entry.category, entry.id, result, messages)
            perturbed_pairs.append((ours_p, theirs_p))
            if ours_p != theirs_p:
                disagreements.append({"id": entry.id, "perturbation": kind, "ours": ours_p, "acebench": theirs_p})
    from .acebench import summarize

    categories: dict[str, Any] = {}
    accuracy = summarize(rows)["accuracy_per_category"]
    for cat in dict.fromkeys(r["category"] for r in rows):
        if cat in AGENT:
            continue
        cat_rows = [r for r in rows if r["category"] == cat]
        ours_acc = accuracy[cat]
        theirs_acc = round(official.category_accuracy(cat, cat_rows), 3)
        categories[cat] = {"ours": ours_acc, "acebench": theirs_acc, "agree": ours_acc == theirs_acc}
    return {"entries": tally(entry_pairs), "perturbed": tally(perturbed_pairs), "categories": categories,
            "disagreements": disagreements[:50]}
