"""``spade registry push`` writes the Hub's environment-repository description
(``environment.yaml``, spec ``hf-env-0.1``) beside the dataset card, and
``datasets.load_dataset`` of the same repo still reads exactly the rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from hub_server import hub  # noqa: F401  (the local-Hub fixture)
from registry_helpers import synthetic_source

from spade_envs.registry import hub_sync
from spade_envs.registry.catalog import seed_records
from spade_envs.registry.hub_export import export
from spade_envs.registry.store import Registry


def _check(doc: dict, generations: list[str]) -> None:
    assert doc["spec_version"] == "hf-env-0.1"
    envs = doc["environments"]
    assert [e["id"] for e in envs] == ["spade-registry", *generations]
    for env in envs:  # required: id, frameworks (one or more); config_name names a card config
        assert env["frameworks"] and env["frameworks"]["verifiers"]["adapter"] == "spade_envs.load_environment"
        assert env["config_name"] in ("all", *generations) and env["splits"] == ["train"]


def test_export_writes_the_manifest_deterministically(tmp_path):
    with Registry.open(tmp_path / "r.sqlite3") as reg:
        reg.add(synthetic_source(1), generation=1)
        recs = reg.list(seeds=True)
    a, b = export(recs, tmp_path / "a"), export(recs, tmp_path / "b")
    assert a["manifest"] == "environment.yaml"
    text = (tmp_path / "a" / "environment.yaml").read_text()
    assert text == (tmp_path / "b" / "environment.yaml").read_text() and a["content_sha256"] == b["content_sha256"]
    _check(yaml.safe_load(text), ["gen-0000", "gen-0001"])


def test_push_publishes_it_and_load_dataset_still_reads_the_rows(tmp_path, hub, monkeypatch):
    with Registry.open(tmp_path / "r.sqlite3") as reg:
        reg.add(synthetic_source(1), generation=1)
        pushed = hub_sync.push(reg.list(seeds=True), "me/envs")
    files = hub.repos["me/envs"].commits[pushed["commit"]]["files"]
    assert "environment.yaml" in files
    _check(yaml.safe_load(files["environment.yaml"]), ["gen-0000", "gen-0001"])
    # a reader of its own (a fresh process: the Hub libraries read HF_ENDPOINT when imported)
    script = (
        "import datasets, json\n"
        "datasets.config.USE_PARQUET_EXPORT = False\n"
        f"c = {str(tmp_path / 'cache')!r}\n"
        "full = datasets.load_dataset('me/envs', split='train', cache_dir=c)\n"
        "gen1 = datasets.load_dataset('me/envs', 'gen-0001', split='train', cache_dir=c)\n"
        "print(json.dumps([len(full), list(gen1['env_id'])]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "0"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [len(seed_records()) + 1, ["spade/Env-01000-v0"]]
    with Registry.open(tmp_path / "fresh.sqlite3") as fresh:  # and pull ignores the file
        assert hub_sync.pull(fresh, "me/envs")["added"] == 1
