"""The Hub's environment-repository description of an exported registry: ``environment.yaml``.

The Hub reads ``environment.yaml`` at a dataset repository's root (the ``hf-env-0.1``
proposal: an Environment badge, framework chips, usage snippets, and
``/api/datasets/{repo}/environments``). :func:`manifest` writes, of that spec:

- ``spec_version: hf-env-0.1`` and ``environments`` (required): one declaration for the
  whole registry (``id: spade-registry``, ``config_name: all``) and one per generation
  (``id`` and ``config_name`` ``gen-NNNN``), each with ``splits: [train]`` (the dataset
  card's configs, so ``datasets.load_dataset(repo, config_name)`` reads the same rows);
- ``title``, and ``frameworks`` (required, one or more): ``verifiers`` with ``min_version``
  (the tested release) and ``adapter: spade_envs.load_environment`` (the Environments
  Hub entry point spade-envs answers; the rows are environment *programs*, not prompt
  rows, so verifiers reads them through spade-envs);
- ``runtime`` (``isolation: sandbox``, ``network: false``: programs from a pulled repo
  run in spade's sandbox, without network) and ``reward`` (``scalar``: the episode
  return in [-1, 1]).

Not written: ``openenv`` (the spec wants a Space or container image, which a dataset
export has none of: ``spade serve`` serves the pulled registry instead), ``harbor`` (no
task bundles), and ``dataset`` locations (``config_name`` already names them). The file is
a pure function of the generations (no timestamps), like the rest of the export.
"""

from __future__ import annotations

from typing import Any

SPEC_VERSION = "hf-env-0.1"
FILENAME = "environment.yaml"
VERIFIERS_MIN = ">=0.1.10"


def _decl(env_id: str, title: str, config: str) -> dict[str, Any]:
    return {
        "id": env_id, "title": title, "config_name": config, "splits": ["train"],
        "frameworks": {"verifiers": {"min_version": VERIFIERS_MIN, "adapter": "spade_envs.load_environment"}},
        "runtime": {"isolation": "sandbox", "network": False},
        "reward": "scalar",
    }


def manifest(generations: list[str], total: int) -> dict[str, Any]:
    """The ``environment.yaml`` document for an export of these generation names."""
    envs = [_decl("spade-registry", f"spade-envs registry ({total} environments)", "all")]
    envs += [_decl(g, f"spade-envs registry, generation {int(g.split('-')[1])}", g) for g in generations]
    return {"spec_version": SPEC_VERSION, "environments": envs}


def manifest_text(generations: list[str], total: int) -> str:
    import yaml

    return yaml.safe_dump(manifest(generations, total), sort_keys=False)
