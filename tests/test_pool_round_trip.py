"""Issue 39 point 12: one near-duplicate rule at add and import, and what a registry holds
round-trips. docs/hub.md's Relay and Tally (two different games written from one habit:
code similarity 0.70, descriptions disjoint) are both added to a home, exported with
``spade registry export-pool`` and imported into a fresh home, where both come back."""

from __future__ import annotations

import json
from pathlib import Path

from registry_helpers import spade_home  # noqa: F401 - fixture
from test_registry_pool_import import _run

from spade_envs.designer.novelty import Signature, is_duplicate

DOC = (Path(__file__).parent.parent / "docs" / "hub.md").read_text()


def _doc_file(name: str) -> str:
    return DOC.split(f"<!-- doc-test: file {name}_env.py -->\n```python\n")[1].split("```")[0]


def test_relay_and_tally_are_distinct_by_the_one_rule():
    code, text = Signature.of(_doc_file("relay")).similarity(Signature.of(_doc_file("tally")))
    assert code >= 0.68 and text is not None and text < 0.1  # the old rule merged them on code alone
    assert not is_duplicate(code, text)


def test_add_export_import_round_trips(spade_home, capsys, tmp_path, monkeypatch):  # noqa: F811
    sources = {}
    for name in ("relay", "tally"):
        path = tmp_path / f"{name}_env.py"
        path.write_text(_doc_file(name))
        code, out, err = _run(capsys, ["registry", "add", str(path), "--generation", "1", "--json"])
        assert code == 0, (name, out, err)
        sources[name] = _doc_file(name)
    exported = tmp_path / "exported"
    code, out, err = _run(capsys, ["registry", "export-pool", str(exported), "--json"])
    assert code == 0 and json.loads(out)["games"] == 2, err
    assert all(f.read_text().startswith('"""SPADE self-play generated game"""\n\n')
               for f in (exported / "games").glob("game_*.py"))
    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "fresh"))
    code, out, err = _run(capsys, ["registry", "import-pool", str(exported), "--json", "--jobs", "1"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["registered"] == 2 and summary["duplicates"] == 0, summary
    back = set()
    for env_id in summary["ids"]:
        _, shown, _ = _run(capsys, ["registry", "show", env_id, "--json"])
        back.add(json.loads(shown)["source"])
    assert back == set(sources.values())
