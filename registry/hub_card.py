"""The dataset card (``README.md``) of an exported registry: YAML header (license,
configs, spade provenance) and a body that documents every column, what generations,
configs and tags mean, how to read the data without spade-envs and how to run its code
safely. A pure function of its inputs, so an unchanged registry exports identical bytes.
"""

from __future__ import annotations

from typing import Any

#: every exported column, in schema order, with its meaning
GLOSSARY: dict[str, str] = {
    "id": "environment id without version, `spade/Env-NNNNN` (5+ digits); what `gym.make` takes for the latest version",
    "env_id": "id with version, `spade/Env-NNNNN-vK`; one row per (environment, version)",
    "seq": "the sequence number NNNNN (1-999: hand-written seed suite; 1000 up: synthesized entries)",
    "version": "K, from 0; a changed program is a new version of the same id",
    "generation": "0 = the seed suite shipped with spade-envs; each self-play round adds one",
    "status": "`active`, `deprecated` (still loadable by explicit version) or `quarantined` (never loaded)",
    "status_reason": "why the status was set (free text, may be empty)",
    "class_name": "the program's environment class (the one public class whose name ends in `Env`)",
    "skill": "the skill the environment trains (from the program's METADATA or the designer)",
    "description": "one-line description",
    "tags": "list of tags",
    "source": "the complete Python program (UTF-8): reset/step/solution/..., SPADE's format",
    "sha256": "sha256 of `source` (hex); identical sources are one entry",
    "tool_specs": "JSON list of OpenAI function specs the environment offers (seed 0's episode); `[]` = text-only",
    "metadata": "JSON object: the program's METADATA and any further designer fields",
    "designer_model": "the model that wrote the program (null for hand-written ones)",
    "grounding_ref": "reference of the corpus document the program was grounded on",
    "parent_ids": "list of ids this environment was derived from (lineage)",
    "regret": "designer's measurement: max(0, mean reward with hint - without), on the designer's agent",
    "win_rate_hint": "designer's measurement: agent win rate with the privileged hint",
    "win_rate_plain": "designer's measurement: agent win rate without it",
    "acceptance": "JSON list of the acceptance verdicts `{name, ok, detail}` of the exporting registry (a claim: "
                  "spade-envs recomputes them locally on pull)",
    "max_episode_steps": "Gymnasium time limit (null = the default, 100)",
    "created_at": "when the entry was first stored (UTC, ISO 8601)",
    "updated_at": "when its row last changed (UTC, ISO 8601)",
    "tool_specs_vary_by_seed": "true when `reset(seed)` changes the tool set; `tool_specs` then holds seed 0's",
    "parameters": "JSON Schema of the constructor keyword arguments (the program's PARAMETERS), or null",
    "published_in": "the dataset repo the entry was first published in (ids there are permanent)",
}


def card_text(header: dict[str, Any], repo: str | None, generations: list[str]) -> str:
    import yaml

    name = repo or "OWNER/NAME"
    example_gen = generations[-1] if generations else "gen-0001"
    where = (f"This dataset: `{repo}`." if repo else
             "Exported to a local folder; once pushed, replace `OWNER/NAME` below by the dataset's repo id.")
    glossary = "\n".join(f"| `{k}` | {v} |" for k, v in GLOSSARY.items())
    gens = ", ".join(f"`{g}`" for g in generations) or "none"
    body = f"""# spade-envs registry

LLM-synthesized, executable multi-turn training environments after SPADE (Self-Play in
Adaptive Synthetic Executable Environments): a designer model writes each environment as
a Python program, an agent plays it, and the designer is rewarded by the agent's regret.
One row per (environment, version): the program, its tool specs, lineage and scores.
{where}

## Generations, configs and tags

- **Generation** 0 is the hand-written seed suite shipped with spade-envs; every
  self-play round adds one generation. Generations here: {gens}.
- **Config** `all` (the default) holds every row; config `gen-0001` holds only the rows
  *of* generation 1 (`data/gen-0001/*.parquet`).
- **Tag** `gen-0001` is a git tag on the commit that first published generation 1: the
  *whole* registry as it was then (all configs). Tags never move.

## Load it without spade-envs

```python
from datasets import load_dataset

ds = load_dataset("{name}", split="train")                        # every generation
gen = load_dataset("{name}", "{example_gen}", split="train")      # one generation's rows
old = load_dataset("{name}", split="train", revision="{example_gen}")  # the registry as of that tag
row = ds[0]
print(row["env_id"], row["class_name"], row["skill"])
```

Plain Parquet, so `pandas.read_parquet` or `pyarrow` read `data/gen-*/*.parquet` too.

## Run the environments safely

`source` is code written by a language model or by other users: **untrusted**. Do not
`exec` it in your own process. With spade-envs it runs in a process jail (seccomp
allow-list, no network, no files opened for writing, resource limits):

```bash
pip install spade-envs
spade registry pull {name}        # acceptance is re-run locally; failures are quarantined
```

```python
import gymnasium as gym
import spade_envs

env = gym.make("spade/Env-01000")   # sandboxed: the program runs in a jailed worker
obs, info = env.reset(seed=0)
```

Without spade-envs, run a program only inside a disposable container or VM with no
network and no credentials. Acceptance verdicts, generations and scores in this dataset
are the exporter's claims; spade-envs recomputes acceptance on pull and never trusts it.

## Columns

| column | meaning |
|---|---|
{glossary}
"""
    return "---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n\n" + body
