"""SPADE's other released pool layouts, read into the same :class:`~.pool_layout.Pool`.

Besides the games folder layout of :mod:`.pool_layout` (``games/game_*.py`` with
``manifest.jsonl`` and ``checksums.sha256``), SPADE's environments are published as:

- **a manifest-driven folder** (the Qwen3-30B games pool, the generated tool-use
  environments): ``manifest.json`` is the authoritative list, an object whose ``games``
  (or ``environments``) list, or a bare list, holds one entry per environment naming its
  file under ``path_in_dataset`` / ``path`` / ``file`` / ``filename`` (e.g.
  ``games/gen_0003/game_00012_001_spatial_reasoning.py`` or
  ``environments/<source_run>/<file>.py``); the entry's ``skill`` is the skill, the entry
  is kept verbatim as the game's manifest row. An entry naming no readable file refuses
  the pool (naming the entry); a ``sha256`` field, when present, is verified.
- **Parquet rows** (the GPT-5.5 tool-use pool): ``*.parquet`` files (in the folder or its
  ``data/``), one environment per row, its program in ``code`` (or another
  :data:`~.importer.CODE_FIELDS` column), named by ``file_name`` (``game_000000.py``), with
  ``skill`` and ``sha256`` of the code; a row whose digest differs refuses the pool.

Every file is opened through :mod:`.safe_read` (inside the pool, no links, size first,
JSON depth-bounded), as in the games layout. Rows are read in batches; a row's code over
the game size cap is refused unread by the importer.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath
from typing import Any

from .pool_layout import (CHECKSUMS, MAX_GAME_BYTES, MAX_MANIFEST_BYTES, Pool, PoolError, PoolGame, _read,
                          parse_game_name, read_pool, skill_of)
from .safe_read import UnsafePath, checked_path, loads_bounded

MANIFEST_JSON = "manifest.json"
_PATH_KEYS = ("path_in_dataset", "path", "file", "filename", "file_name")
_LIST_KEYS = ("games", "environments", "envs", "items")
_CODE_KEYS = ("code", "source", "env_code", "program")
_NAME_KEYS = ("file_name", "filename", "original_file_name", "game_id")


def read_any_pool(root: str | Path, *, links_into: str | Path | None = None) -> Pool:
    """The pool at ``root`` in whichever released layout it has: the games layout of
    :func:`.pool_layout.read_pool` when it has ``checksums.sha256`` or no other layout's
    marker, else a ``manifest.json`` folder or Parquet rows."""
    root = Path(root)
    links = Path(links_into) if links_into is not None else None
    other = None if os.path.lexists(root / CHECKSUMS) or not root.is_dir() else detect(root)
    if other == "manifest":
        return read_manifest_pool(root, links)
    if other == "parquet":
        return read_parquet_pool(root, links)
    return read_pool(root, links_into=links)


def detect(root: Path) -> str | None:
    """``"manifest"`` or ``"parquet"`` when ``root`` holds one of these layouts, else None."""
    if os.path.lexists(root / MANIFEST_JSON):
        return "manifest"
    if _parquet_files(root):
        return "parquet"
    return None


def _skill(entry: dict[str, Any], name: str) -> str | None:
    raw = entry.get("skill")
    if isinstance(raw, str) and raw.strip() and raw.strip().lower() not in ("unlabelled", "unknown", "none"):
        return raw.replace("_", " ").strip()
    return skill_of(name)


def _game(root: Path, rel: str, entry: dict[str, Any], links: Path | None, seen: set[str], text: str | None = None,
          sha: str | None = None) -> PoolGame:
    name = PurePosixPath(rel.split(":")[0]).name if text is None else str(rel.rsplit(":", 1)[-1])
    if name in seen:  # two runs may reuse a file name: the path keeps them apart
        name = rel.replace("/", "__")
    seen.add(name)
    parsed = parse_game_name(name)
    return PoolGame(name, root / rel.split(":")[0], sha or "", *(parsed[:2] if parsed else (None, None)),
                    skill=_skill(entry, name), manifest=entry, root=root, rel=rel, links_into=links, text=text)


def read_manifest_pool(root: Path, links: Path | None) -> Pool:
    """The games a ``manifest.json`` lists (see the module docstring)."""
    try:
        data = loads_bounded(_read(root, MANIFEST_JSON, MAX_MANIFEST_BYTES, links).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PoolError(f"{MANIFEST_JSON} is not readable JSON ({exc})") from None
    entries = data if isinstance(data, list) else next(
        (data[k] for k in _LIST_KEYS if isinstance(data, dict) and isinstance(data.get(k), list)), None)
    if entries is None:
        raise PoolError(f"{MANIFEST_JSON} holds no list of games (expected 'games': [...])")
    games: list[PoolGame] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise PoolError(f"{MANIFEST_JSON} entry {i} is not an object")
        rel = _entry_path(root, entry, links)
        if rel is None:
            raise PoolError(f"{MANIFEST_JSON} entry {i} names no file of the pool ({_PATH_KEYS[0]}, ...); "
                            "refusing the pool (nothing imported)")
        data_bytes = _read(root, rel, MAX_GAME_BYTES, links) if _small(root / rel) else b""
        sha = hashlib.sha256(data_bytes).hexdigest() if data_bytes else hashlib.sha256(f"oversized:{rel}".encode()).hexdigest()
        want = entry.get("sha256")
        if isinstance(want, str) and data_bytes and want.lower() != sha:
            raise PoolError(f"{rel} does not match its sha256 in {MANIFEST_JSON}; refusing the pool (nothing imported)")
        games.append(_game(root, rel, entry, links, seen, sha=sha))
    if not games:
        raise PoolError(f"{MANIFEST_JSON} lists no games")
    summary = data.get("summary") if isinstance(data, dict) else None
    return Pool(root, games, "manifest sha256" if any("sha256" in (g.manifest or {}) for g in games) else "absent",
                {MANIFEST_JSON: summary} if isinstance(summary, dict) else {},
                hashlib.sha256(_read(root, MANIFEST_JSON, MAX_MANIFEST_BYTES, links)).hexdigest())


def _small(path: Path) -> bool:
    try:
        return os.lstat(path).st_size <= MAX_GAME_BYTES
    except OSError:
        return False


def _entry_path(root: Path, entry: dict[str, Any], links: Path | None) -> str | None:
    for key in _PATH_KEYS:
        value = entry.get(key)
        if not isinstance(value, str) or not value.endswith(".py"):
            continue
        for rel in (value.removeprefix("./"), f"games/{value}"):
            try:
                if checked_path(root, rel, links_into=links).is_file():
                    return rel
            except UnsafePath as exc:
                if "missing" not in str(exc):
                    raise PoolError(f"{MANIFEST_JSON}: {exc}; refusing the pool (nothing imported)") from None
    return None


def _parquet_files(root: Path) -> list[str]:
    out = []
    for sub in ("", "data/"):
        folder = root / sub if sub else root
        if sub and not (folder.is_dir() and not folder.is_symlink()):
            continue
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".parquet"))
        except OSError:
            continue
        out += [sub + n for n in names]
    return out


def read_parquet_pool(root: Path, links: Path | None, batch_rows: int = 256) -> Pool:
    """The rows of the pool's Parquet files (see the module docstring)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise PoolError("reading a Parquet pool needs pyarrow (pip install pyarrow)") from None
    games: list[PoolGame] = []
    seen: set[str] = set()
    digest = hashlib.sha256()
    for rel in _parquet_files(root):
        try:
            path = checked_path(root, rel, links_into=links)
            pf = pq.ParquetFile(path.resolve() if links is not None else path)
            n = 0
            for batch in pf.iter_batches(batch_size=batch_rows):
                for row in batch.to_pylist():
                    n += 1
                    games.append(_row_game(root, rel, n, row, links, seen))
        except UnsafePath as exc:
            raise PoolError(f"{exc}; refusing the pool (nothing imported)") from None
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise PoolError(f"{rel} is not a readable Parquet file ({str(exc)[:200]})") from None
        digest.update(f"{rel}:{n}\n".encode())
    if not games:
        raise PoolError(f"no rows in the Parquet files of {root}")
    for g in games:
        digest.update(g.sha256.encode())
    return Pool(root, games, "row sha256", {}, digest.hexdigest())


def _row_game(root: Path, rel: str, n: int, row: Any, links: Path | None, seen: set[str]) -> PoolGame:
    where = f"{rel}:{n}"
    if not isinstance(row, dict):
        raise PoolError(f"{where} is not a record")
    code = next((row[k] for k in _CODE_KEYS if isinstance(row.get(k), str)), None)
    if code is None:
        raise PoolError(f"{where} has no code column ({', '.join(_CODE_KEYS)})")
    name = next((row[k] for k in _NAME_KEYS if isinstance(row.get(k), str) and row[k].strip()), f"row_{n:06d}")
    name = PurePosixPath(name).name if name.endswith(".py") else f"{name}.py"
    sha = hashlib.sha256(code.encode("utf-8")).hexdigest()
    want = row.get("sha256")
    if isinstance(want, str) and want.lower() != sha:
        raise PoolError(f"{where} ({name}): its code does not match its sha256; refusing the pool (nothing imported)")
    entry = {k: v for k, v in row.items() if k not in _CODE_KEYS}
    if "skill" not in entry and isinstance(row.get("original_file_name"), str):
        entry["skill"] = skill_of(row["original_file_name"].replace("game_", "game_0_", 1)) or None
    return _game(root, f"{where}:{name}", entry, links, seen, text=code, sha=sha)
