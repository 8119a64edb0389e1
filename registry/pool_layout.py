"""SPADE's released pool layout: reading (verified first) and writing it.

A pool is a folder (or a Hugging Face dataset at a pinned revision) holding::

    games/game_<rollout:05d>_<index:03d>_<skill_slug>.py   each opens with a docstring line
    manifest.jsonl              optional: one JSON object per line, naming its game file
    validation_manifest.jsonl   optional: the same, with validation results
    validation_summary.json     optional
    snapshot_summary.json       optional
    checksums.sha256            optional: ``sha256sum`` format, paths relative to the folder
    README.md                   optional

Reading (:func:`read_pool`): when ``checksums.sha256`` exists it is verified before any
other file is read: a malformed line, a path outside the folder, a listed file that is
missing or whose digest differs, or a ``games/game_*.py`` that is not listed raises
:class:`PoolError` naming the file, and nothing is returned. Every ``game_*.py`` of
``games/`` (or of the folder itself, for a bare SPADE run folder) is a game, as SPADE's
loader globs them; the skill comes from the file name (``logical_deduction`` ->
``logical deduction``). Manifest rows are matched to games by any string field whose
last path component is the game's file name, and kept verbatim.

Sources: a stored game's source is the file without SPADE's header line
(:data:`SPADE_HEADER`, exactly as SPADE's ``save_game_file`` writes it, or the older
:data:`SPARE_HEADER`; removed once); :func:`file_text` is the inverse used on export
(SPADE's header, then the source), so a pool round-trips file for file and a registry
source for source.

Untrusted folder (DESIGN.md section 8): every file read goes through
:mod:`.safe_read`: inside the pool, no symbolic links followed (a linked ``games/``
folder, ``game_*.py``, manifest or checksums file refuses the pool with
:class:`PoolError` naming it; the Hub cache's own links into its ``blobs/`` are the
caller-named exception), sizes checked with ``fstat`` before reading (a game over
:data:`MAX_GAME_BYTES` is refused unread), and JSON parsed with a depth bound.

Writing (:func:`write_pool`) produces the same layout, ``checksums.sha256`` last, covering
every other file. :func:`fetch_pool` resolves ``PATH`` or ``OWNER/NAME[@REVISION]`` (a Hub
dataset, downloaded with ``huggingface_hub.snapshot_download``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import RegistryError
from .safe_read import UnsafePath, checked_path, loads_bounded, read_inside

SPADE_HEADER = '"""SPADE self-play generated game"""\n\n'
SPARE_HEADER = '"""SPARE self-play generated game"""\n\n'
HEADERS = (SPADE_HEADER, SPARE_HEADER)
CHECKSUMS = "checksums.sha256"
MANIFESTS = ("manifest.jsonl", "validation_manifest.jsonl")
SUMMARIES = ("validation_summary.json", "snapshot_summary.json")
POOL_PATTERNS = ["games/*", *MANIFESTS, *SUMMARIES, CHECKSUMS, "README.md",
                 # the other layouts (:mod:`.pool_layouts`): manifest.json folders, Parquet rows
                 "manifest.json", "environments/*", "*.parquet", "data/*.parquet"]

_GAME_NAME = re.compile(r"^game_(\d+)_(\d+)_(.+)\.py$")
_SUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")
_HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")
MAX_GAME_BYTES = 1 << 20
MAX_MANIFEST_BYTES = 256 << 20  # a manifest row per game: ~1 KB each
MAX_META_BYTES = 16 << 20  # summaries, README.md, checksums.sha256


class PoolError(RegistryError):
    """A pool that cannot be read or does not verify (the message names the file)."""


def parse_game_name(name: str) -> tuple[int, int, str] | None:
    """``(rollout, index, skill slug)`` of SPADE's ``game_<rollout>_<index>_<slug>.py``."""
    m = _GAME_NAME.match(name)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def skill_of(name: str) -> str | None:
    """The skill of a game file name (``game_00012_003_logical_deduction.py`` -> ``logical deduction``)."""
    parsed = parse_game_name(name)
    if parsed is None:
        return None
    return parsed[2].replace("_", " ").strip() or None


def skill_slug(skill: str | None) -> str:
    """SPADE's file-name slug of a skill (lower case, spaces to ``_``); ``general`` when none."""
    slug = re.sub(r"[^a-z0-9_-]+", "_", (skill or "").lower().replace(" ", "_")).strip("_")
    return slug or "general"


def source_of(text: str) -> str:
    """The program of a saved game file: the text without SPADE's (or SPARE's) header line."""
    for header in HEADERS:
        if text.startswith(header):
            return text[len(header):]
    return text


def file_text(source: str) -> str:
    """The saved game file of a stored source: SPADE's header line, then the source
    (inverse of :func:`source_of`, whatever the source opens with)."""
    return SPADE_HEADER + source


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class PoolGame:
    """One ``game_*.py`` of a pool."""

    name: str  # file name, e.g. game_00001_000_mathematical_reasoning.py
    path: Path
    sha256: str  # of the file
    rollout: int | None = None
    index: int | None = None
    skill: str | None = None
    manifest: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    root: Path | None = None  # the pool folder and the path inside it, for the checked read
    rel: str = ""
    links_into: Path | None = None
    text: str | None = None  # a Parquet row's code (the row is the file)


@dataclass
class Pool:
    """A verified pool folder: its games (sorted by name) and summaries."""

    root: Path
    games: list[PoolGame]
    checksums: str  # "verified" | "absent"
    summaries: dict[str, Any] = field(default_factory=dict)
    checksums_sha256: str | None = None  # digest of checksums.sha256 itself (a local revision)


def _read(root: Path, rel: str, cap: int, links_into: Path | None) -> bytes:
    try:
        return read_inside(root, rel, cap, links_into=links_into)
    except UnsafePath as exc:
        raise PoolError(f"{exc}; refusing the pool (nothing imported)") from None


def _text(root: Path, rel: str, cap: int, links_into: Path | None) -> str:
    try:
        return _read(root, rel, cap, links_into).decode("utf-8")
    except UnicodeDecodeError:
        raise PoolError(f"{rel} is not UTF-8 text; refusing the pool") from None


def verify_checksums(root: Path, links_into: Path | None = None) -> dict[str, str]:
    """``relative path -> sha256`` of ``checksums.sha256``, every listed file verified."""
    lines = _text(root, CHECKSUMS, MAX_META_BYTES, links_into).splitlines()
    listed: dict[str, str] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        m = _SUM_LINE.match(line)
        if not m:
            raise PoolError(f"{CHECKSUMS}:{lineno} is not a sha256sum line ('<64 hex digits>  <path>'); refusing the pool")
        rel = m.group(2).removeprefix("./")
        listed[rel] = m.group(1).lower()
    for rel, want in listed.items():
        try:
            checked_path(root, rel, links_into=links_into)
        except UnsafePath as exc:
            if "missing" in str(exc):
                raise PoolError(f"{rel} is listed in {CHECKSUMS} but missing; refusing the pool (nothing imported)") from None
            raise PoolError(f"{CHECKSUMS} lists {exc}; refusing the pool") from None
        if _is_game(rel) and not _size_ok(root / rel):
            continue  # never read: the import refuses this one game as too big, unread
        cap = MAX_GAME_BYTES if _is_game(rel) else MAX_MANIFEST_BYTES
        if hashlib.sha256(_read(root, rel, cap, links_into)).hexdigest() != want:
            raise PoolError(f"{rel} does not match its sha256 in {CHECKSUMS}; refusing the pool (nothing imported)")
    return listed


def _game_files(root: Path, links_into: Path | None) -> tuple[str, list[str]]:
    """``(folder, relative paths of its game_*.py)``; a link among them refuses the pool."""
    prefix = ""
    if os.path.lexists(root / "games"):
        try:
            checked_path(root, "games", links_into=links_into)
        except UnsafePath as exc:
            raise PoolError(f"{exc}; refusing the pool (nothing imported)") from None
        if (root / "games").is_dir():
            prefix = "games/"
    folder = root / prefix if prefix else root
    try:
        names = sorted(e.name for e in os.scandir(folder) if fnmatch.fnmatchcase(e.name, "game_*.py"))
    except OSError as exc:
        raise PoolError(f"cannot list {folder}: {exc.strerror}") from None
    rels = []
    for name in names:
        try:
            path = checked_path(root, prefix + name, links_into=links_into)
        except UnsafePath as exc:
            raise PoolError(f"{exc}; refusing the pool (nothing imported)") from None
        if path.is_file():
            rels.append(prefix + name)
    return prefix.rstrip("/") or ".", rels


def _read_manifest(root: Path, rel: str, names: set[str], links_into: Path | None) -> dict[str, dict[str, Any]]:
    """``game file name -> row`` of a JSONL manifest (rows naming no game are ignored)."""
    out: dict[str, dict[str, Any]] = {}
    for lineno, line in enumerate(_text(root, rel, MAX_MANIFEST_BYTES, links_into).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads_bounded(line)
        except ValueError as exc:
            raise PoolError(f"{rel}:{lineno} is not valid JSON ({exc})") from None
        if not isinstance(row, dict):
            raise PoolError(f"{rel}:{lineno} is not a JSON object")
        for value in row.values():
            if isinstance(value, str) and value.endswith(".py") and PurePosixPath(value).name in names:
                out.setdefault(PurePosixPath(value).name, row)
                break
    return out


def read_pool(root: str | Path, *, links_into: str | Path | None = None) -> Pool:
    """The games and metadata of the pool at ``root`` (checksums verified first).
    ``links_into``: a folder (named by the caller) that links may point into."""
    root = Path(root)
    links = Path(links_into) if links_into is not None else None
    if not root.is_dir():
        raise PoolError(f"{root} is not a folder (expected SPADE's pool layout: games/game_*.py, checksums.sha256, ...)")
    listed: dict[str, str] | None = None
    digest = None
    if os.path.lexists(root / CHECKSUMS):
        listed = verify_checksums(root, links)
        digest = hashlib.sha256(_read(root, CHECKSUMS, MAX_META_BYTES, links)).hexdigest()
    folder, rels = _game_files(root, links)
    if not rels:
        raise PoolError(f"no game_*.py files in {root / folder}")
    games = []
    for rel in rels:
        if listed is not None and rel not in listed:
            raise PoolError(f"{rel} is not listed in {CHECKSUMS}; refusing the pool (nothing imported)")
        name = PurePosixPath(rel).name
        parsed = parse_game_name(name)
        if listed is not None:
            sha = listed[rel]
        elif _size_ok(root / rel):
            sha = hashlib.sha256(_read(root, rel, MAX_GAME_BYTES, links)).hexdigest()
        else:  # never read: refused as too big when the import reads it
            sha = hashlib.sha256(f"oversized:{rel}".encode()).hexdigest()
        games.append(PoolGame(name, root / rel, sha, *(parsed[:2] if parsed else (None, None)), skill=skill_of(name),
                              root=root, rel=rel, links_into=links))
    names = {g.name for g in games}
    found = {m: _read_manifest(root, m, names, links) for m in MANIFESTS if os.path.lexists(root / m)}
    for g in games:
        g.manifest = found.get("manifest.jsonl", {}).get(g.name)
        g.validation = found.get("validation_manifest.jsonl", {}).get(g.name)
    summaries = {}
    for name in SUMMARIES:
        if os.path.lexists(root / name):
            try:
                summaries[name] = loads_bounded(_text(root, name, MAX_META_BYTES, links))
            except ValueError as exc:
                raise PoolError(f"{name} is not readable JSON ({exc})") from None
    return Pool(root, games, "verified" if listed is not None else "absent", summaries, digest)


def _is_game(rel: str) -> bool:
    return fnmatch.fnmatchcase(PurePosixPath(rel).name, "game_*.py")


def _size_ok(path: Path) -> bool:
    """Whether an unlisted game is small enough to hash (a big one is refused at read)."""
    try:
        return os.lstat(path).st_size <= MAX_GAME_BYTES
    except OSError:
        return False


def read_game(game: PoolGame) -> str:
    """The text of a game file (size-capped UTF-8, checked read; :class:`PoolError` otherwise)."""
    if game.text is not None:
        if len(game.text.encode("utf-8", "surrogatepass")) > MAX_GAME_BYTES:
            raise PoolError(f"{game.name}: its code is larger than the {MAX_GAME_BYTES}-byte cap")
        return game.text
    try:
        if game.root is not None:
            data = read_inside(game.root, game.rel, MAX_GAME_BYTES, links_into=game.links_into)
        else:
            data = read_inside(game.path.parent, game.path.name, MAX_GAME_BYTES)
    except UnsafePath as exc:
        raise PoolError(f"{game.name}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PoolError(f"{game.name} is not UTF-8 text") from None


def fetch_pool(spec: str) -> tuple[Path, str, str | None]:
    """``(folder, pool name, revision)`` of a local folder or ``OWNER/NAME[@REVISION]``
    (a Hub dataset, downloaded into the Hugging Face cache; revision = its commit)."""
    local = Path(spec).expanduser()
    if local.exists():
        return local.resolve(), local.resolve().name, None
    if not _HF_REPO.match(spec):
        raise PoolError(f"{spec} is neither a folder nor a Hub dataset OWNER/NAME[@REVISION]")
    repo, _, revision = spec.partition("@")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise PoolError("downloading a pool needs huggingface_hub (pip install huggingface_hub)") from None
    try:
        path = snapshot_download(repo, repo_type="dataset", revision=revision or None, allow_patterns=POOL_PATTERNS)
    except Exception as exc:  # noqa: BLE001 - HTTP, network (httpx), cache and not-found errors alike
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        raise PoolError(f"cannot download the dataset {repo}@{revision or 'main'}: {first}") from None
    folder = Path(path)
    commit = folder.name if re.fullmatch(r"[0-9a-f]{40}", folder.name) else (revision or None)
    return folder, repo, commit


def hub_blobs(snapshot: Path) -> Path:
    """The ``blobs/`` folder of a Hugging Face cache snapshot (``.../snapshots/<commit>``):
    the one place a downloaded pool's links may point."""
    return Path(snapshot).parent.parent / "blobs"


# -- writing -------------------------------------------------------------------------------
@dataclass
class ExportGame:
    """One game to write: its file name, stored source and manifest rows."""

    name: str
    source: str
    manifest: dict[str, Any]
    validation: dict[str, Any]


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in rows)


def write_pool(folder: str | Path, games: list[ExportGame], *, summary: dict[str, Any], readme: str) -> dict[str, Any]:
    """Write ``games`` in the pool layout into ``folder`` (new or empty); returns counts."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise PoolError(f"{folder} exists and is not an empty folder; choose a new one")
    if len({g.name for g in games}) != len(games):
        raise PoolError("two games would share one file name")
    try:
        (folder / "games").mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        for g in games:
            files[f"games/{g.name}"] = file_text(g.source)
        files["manifest.jsonl"] = _jsonl([g.manifest for g in games])
        files["validation_manifest.jsonl"] = _jsonl([g.validation for g in games])
        accepted = sum(1 for g in games if g.validation.get("accepted", True))
        files["validation_summary.json"] = json.dumps(
            {"games": len(games), "accepted": accepted,
             "unverified": sum(1 for g in games if g.validation.get("verified") is False)}, indent=2) + "\n"
        files["snapshot_summary.json"] = json.dumps({"games": len(games), **summary}, indent=2, default=str) + "\n"
        files["README.md"] = readme
        sums = []
        for rel in sorted(files):
            data = files[rel].encode("utf-8")
            (folder / rel).write_bytes(data)
            sums.append(f"{hashlib.sha256(data).hexdigest()}  {rel}\n")
        (folder / CHECKSUMS).write_text("".join(sums), encoding="utf-8")
    except OSError as exc:
        raise PoolError(f"cannot write the pool into {folder}: {exc}") from None
    return {"games": len(games), "files": len(files) + 1}
