"""The Hugging Face dataset layout of a registry (DESIGN.md section 7).

``export(records, DIR)`` writes::

    DIR/README.md                                   dataset card: YAML configs, license, provenance
    DIR/environment.yaml                            the Hub's environment description (hub_env_manifest)
    DIR/data/gen-0000/train-00000-of-00001.parquet  one folder per generation (0 = seed suite)
    DIR/data/gen-0001/...

The card's YAML lists one config per generation plus ``all`` (the default), so
``datasets.load_dataset(DIR)``, ``load_dataset(DIR, "gen-0001")`` and
``load_dataset("parquet", data_dir=DIR)`` read it with no code of ours. The output is
a pure function of the records (no timestamps of its own), so exporting an unchanged
registry twice gives identical bytes — which is what lets a re-push make no commit.
``pyarrow`` and ``yaml`` are imported lazily.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from .catalog import EnvRecord
from .rows import export_row

FORMAT_VERSION = 1
LICENSE = "apache-2.0"


def _schema():
    import pyarrow as pa

    s, i, f = pa.string(), pa.int64(), pa.float64()
    return pa.schema([
        ("id", s), ("env_id", s), ("seq", i), ("version", i), ("generation", i), ("status", s),
        ("status_reason", s), ("class_name", s), ("skill", s), ("description", s), ("tags", pa.list_(s)),
        ("source", s), ("sha256", s), ("tool_specs", s), ("metadata", s), ("designer_model", s),
        ("grounding_ref", s), ("parent_ids", pa.list_(s)), ("regret", f), ("win_rate_hint", f),
        ("win_rate_plain", f), ("acceptance", s), ("max_episode_steps", i), ("created_at", s), ("updated_at", s),
        ("parent", s), ("params", s),  # variants: parent id, fixed kwargs as a JSON object
    ] + _sharing_fields(pa))


def _sharing_fields(pa) -> list:  # the sharing issue's columns, kept apart
    return [("tool_specs_vary_by_seed", pa.bool_()), ("parameters", pa.string()), ("published_in", pa.string())]


def gen_name(generation: int) -> str:
    return f"gen-{generation:04d}"


def content_digest(rows: list[dict[str, Any]]) -> str:
    """sha256 over every exported row (order-independent of dict key order)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, default=str).encode())
    return h.hexdigest()


def card_header(groups: dict[int, list[dict[str, Any]]], digest: str, *, license: str = LICENSE,
                origin: str | None = None) -> dict[str, Any]:
    from .. import __version__

    configs = [{"config_name": "all", "default": True,
                "data_files": [{"split": "train", "path": "data/gen-*/*.parquet"}]}]
    configs += [{"config_name": gen_name(g), "data_files": [{"split": "train", "path": f"data/{gen_name(g)}/*.parquet"}]}
                for g in sorted(groups)]
    total = sum(len(v) for v in groups.values())
    return {
        "license": license,
        "pretty_name": "spade-envs registry",
        "tags": ["spade", "reinforcement-learning", "synthetic-environments", "gymnasium"],
        "size_categories": ["n<1K" if total < 1000 else "1K<n<10K" if total < 10_000 else "10K<n<100K"
                            if total < 100_000 else "100K<n<1M" if total < 1_000_000 else "1M<n<10M"],
        "configs": configs,
        "spade": {
            "format_version": FORMAT_VERSION,
            "exported_by": f"spade-envs {__version__}",
            "environments": total,
            "generations": {gen_name(g): len(v) for g, v in sorted(groups.items())},
            "content_sha256": digest,
            "origin": origin or "local",
            "generation_0": "hand-written seed suite shipped with spade-envs",
        },
    }


def card_text(groups: dict[int, list[dict[str, Any]]], digest: str, *, license: str = LICENSE,
              origin: str | None = None, repo: str | None = None) -> str:
    from .hub_card import card_text as render

    return render(card_header(groups, digest, license=license, origin=origin), repo,
                  [gen_name(g) for g in sorted(groups)])


def export(records: Iterable[EnvRecord], out_dir: str | Path, *, max_generation: int | None = None,
           license: str = LICENSE, origin: str | None = None, repo: str | None = None,
           progress: Any = None) -> dict[str, Any]:
    """Write the dataset layout for ``records`` (generations up to ``max_generation``)
    under ``out_dir``; stale generation folders there are removed. ``repo``: the dataset
    repo id it is for (named in the card). ``progress(n)`` is called per exported row.
    Raises :class:`~spade_envs.errors.RegistryError` when ``out_dir`` cannot be a folder.
    Returns a summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RegistryError(f"{out} is a file; export writes a folder (README.md + data/): give a folder path")
    groups: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        if max_generation is None or rec.generation <= max_generation:
            groups.setdefault(rec.generation, []).append(export_row(rec, repo=repo))
            if progress is not None:
                progress(1)
    for rows in groups.values():
        rows.sort(key=lambda r: (r["seq"], r["version"]))
    data = out / "data"
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RegistryError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    keep = {gen_name(g) for g in groups}
    for stale in data.glob("gen-*"):
        if stale.name not in keep:
            for f in stale.glob("*"):
                f.unlink()
            stale.rmdir()
    files = []
    schema = _schema()
    for g, rows in sorted(groups.items()):
        folder = data / gen_name(g)
        folder.mkdir(exist_ok=True)
        for old in folder.glob("*.parquet"):
            old.unlink()
        path = folder / "train-00000-of-00001.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, compression="zstd")
        files.append(str(path.relative_to(out)))
    digest = content_digest([r for g in sorted(groups) for r in groups[g]])
    (out / "README.md").write_text(card_text(groups, digest, license=license, origin=origin, repo=repo), encoding="utf-8")
    from .hub_env_manifest import FILENAME as MANIFEST
    from .hub_env_manifest import manifest_text

    total = sum(map(len, groups.values()))
    (out / MANIFEST).write_text(manifest_text([gen_name(g) for g in sorted(groups)], total), encoding="utf-8")
    return {"dir": str(out), "generations": sorted(groups), "rows": total,
            "files": ["README.md", *files], "manifest": MANIFEST, "content_sha256": digest}


def read_rows(folder: str | Path) -> list[dict[str, Any]]:
    """Rows of every ``data/gen-*/*.parquet`` under ``folder`` (an export or a download)."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for path in sorted(Path(folder).glob("data/gen-*/*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows
