"""Publishing the registry as a Hugging Face dataset and loading one back.

``push``: export (:mod:`.hub_export`) to a temporary folder, ``create_repo(repo_type=
"dataset", exist_ok=True)``, then ONE ``create_commit`` with ``parent_commit`` set to the
head of ``main`` that was read first (a concurrent push in between makes the Hub refuse
it: :class:`~spade_envs.errors.RegistryError`, nothing half-written), deleting remote
shards that are gone; then a tag ``gen-NNNN`` on that commit for every published
generation not tagged yet (tags are never moved: ``gen-0003`` pins the registry as of
the push that first published generation 3). huggingface_hub skips files whose content
is unchanged, so re-pushing an unchanged registry makes no commit.

A push never loses remote work: when the remote head is not the one this registry last
synced, every remote row must be in the pushed records (else: pull first).
:func:`push_registry` pushes a store and marks what it pushed as published.

``pull``: ``snapshot_download`` of a revision (branch, tag or commit), then the rows are
merged into the local store like a rebase (:mod:`.sharing`), origin ``hub:REPO@COMMIT``.
Pulled code is untrusted: it only runs in the sandbox, and its acceptance is recomputed.
``huggingface_hub`` is imported lazily.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from ..program import source_sha256
from .catalog import EnvRecord
from .hub_export import LICENSE, export, gen_name, read_rows

REPO_TYPE = "dataset"


def _endpoint(endpoint: str | None) -> str | None:
    """``endpoint``, else ``HF_ENDPOINT`` as set NOW (huggingface_hub reads it only at import)."""
    return endpoint or os.environ.get("HF_ENDPOINT") or None


@contextmanager
def _quiet_hub() -> Iterator[None]:
    """huggingface_hub's own tqdm bars off (the CLI draws one bar; stderr stays one line
    on errors); the previous setting is restored."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


def _api(endpoint: str | None, token: str | None):
    from huggingface_hub import HfApi

    return HfApi(endpoint=_endpoint(endpoint), token=token)


def _hub_error(exc: Exception, repo_id: str) -> RegistryError:
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, RevisionNotFoundError):
        return RegistryError(f"{repo_id}: no such revision on the Hub")
    if isinstance(exc, RepositoryNotFoundError):
        return RegistryError(f"{repo_id}: no such dataset repository (or no access to it)")
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        if status in (409, 412):
            return RegistryError(
                f"{repo_id}: the remote main branch moved since it was read (stale parent commit); "
                "pull, then push again")
        return RegistryError(f"{repo_id}: Hub request failed ({status}): {str(exc).splitlines()[0]}")
    return RegistryError(f"{repo_id}: cannot reach the Hub ({type(exc).__name__}: {exc})")


def _remote_ids(api: Any, repo_id: str, commit: str) -> dict[str, str]:
    """``env_id -> sha256`` of every row the dataset holds at ``commit`` (reads only
    those two columns)."""
    import pyarrow.parquet as pq
    from huggingface_hub import hf_hub_download

    files = [f for f in api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=commit)
             if f.startswith("data/gen-") and f.endswith(".parquet")]
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="spade-check-") as tmp:
        for f in files:
            path = hf_hub_download(repo_id, f, repo_type=REPO_TYPE, revision=commit, local_dir=tmp,
                                   endpoint=api.endpoint, token=api.token)
            table = pq.read_table(path, columns=["env_id", "sha256"]).to_pydict()
            out.update(zip(table["env_id"], table["sha256"]))
    return out


def push(records: Iterable[EnvRecord], repo_id: str, *, generation: int | None = None, endpoint: str | None = None,
         token: str | None = None, private: bool = False, parent_commit: str | None = None,
         base_commit: str | None = None, license: str = LICENSE, progress: Any = None) -> dict[str, Any]:
    """Publish ``records`` (generations up to ``generation``) to the dataset ``repo_id``.

    Nothing on the remote is ever lost: unless ``base_commit`` (the head this registry
    last synced) is the remote head, every row the remote holds must be among
    ``records`` with the same source, else the push is refused (pull first).
    ``parent_commit`` overrides the head read from the Hub (a stale one is refused).
    Returns ``{"repo", "commit", "new_commit", "tags_created", "generations", "rows"}``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api = _api(endpoint, token)
    records = list(records)
    with tempfile.TemporaryDirectory(prefix="spade-push-") as tmp, _quiet_hub():
        summary = export(records, tmp, max_generation=generation, license=license, repo=repo_id, progress=progress)
        try:
            api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=True, private=private)
            refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
            head = next((b.target_commit for b in refs.branches if b.name == "main"), None)
            parent = parent_commit or head
            remote = set(api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=parent)) if parent else set()
            if parent_commit is None and head is not None and base_commit != head and any(
                    f.startswith("data/gen-") for f in remote):
                ours = {str(r.env_id): source_sha256(r.source) for r in records}
                missing = [i for i, sha in _remote_ids(api, repo_id, head).items() if ours.get(i) != sha]
                if missing:
                    raise RegistryError(
                        f"{repo_id} holds {len(missing)} environment(s) this registry does not have as published "
                        f"(e.g. {sorted(missing)[0]}): run `spade registry pull {repo_id}` first (it merges, "
                        "renumbering your unpublished entries), then push again")
            local = {*summary["files"], summary["manifest"]}  # the card, the data, environment.yaml
            ops: list[Any] = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=str(Path(tmp) / f)) for f in sorted(local)]
            ops += [CommitOperationDelete(path_in_repo=f) for f in sorted(remote - local) if f.startswith("data/")]
            gens = ", ".join(gen_name(g) for g in summary["generations"])
            info = api.create_commit(
                repo_id, ops, repo_type=REPO_TYPE, revision="main", parent_commit=parent,
                commit_message=f"spade registry: {summary['rows']} environments ({gens})",
                commit_description=f"content sha256 {summary['content_sha256']}",
            )
            existing = {t.name for t in refs.tags}
            created = []
            for g in summary["generations"]:
                if gen_name(g) not in existing:
                    api.create_tag(repo_id, tag=gen_name(g), revision=info.oid, repo_type=REPO_TYPE,
                                   tag_message=f"spade registry as of generation {g}")
                    created.append(gen_name(g))
        except RegistryError:
            raise
        except Exception as exc:  # huggingface_hub / httpx errors -> one clear line
            raise _hub_error(exc, repo_id) from None
    return {"repo": repo_id, "commit": info.oid, "new_commit": info.oid != head, "tags_created": created,
            "generations": summary["generations"], "rows": summary["rows"]}


def push_registry(registry: Any, repo_id: str, *, generation: int | None = None, progress: Any = None,
                  **kwargs: Any) -> dict[str, Any]:
    """:func:`push` the seed suite and every store entry of ``registry``; afterwards the
    pushed entries are published (their ids are permanent) and the new head is recorded."""
    from .sharing import mark_published

    records = registry.list(seeds=True)
    res = push(records, repo_id, generation=generation, base_commit=registry.remote_commit(repo_id),
               progress=progress, **kwargs)
    mark_published(registry, repo_id, res["commit"],
                   [r.env_id for r in records if not r.trusted and (generation is None or r.generation <= generation)])
    return res


def download(repo_id: str, dest: str | Path, *, revision: str | None = None, endpoint: str | None = None,
             token: str | None = None) -> str:
    """Download the dataset files of ``revision`` into ``dest``; returns the commit sha."""
    from huggingface_hub import snapshot_download

    api = _api(endpoint, token)
    try:
        with _quiet_hub():
            sha = api.repo_info(repo_id, repo_type=REPO_TYPE, revision=revision).sha
            snapshot_download(repo_id, repo_type=REPO_TYPE, revision=sha, local_dir=str(dest),
                              endpoint=_endpoint(endpoint), token=token, allow_patterns=["README.md", "data/**"])
    except Exception as exc:
        raise _hub_error(exc, repo_id) from None
    return sha


def pull(registry, repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
         token: str | None = None, accept: Any = None, progress: Any = None) -> dict[str, Any]:
    """Merge ``repo_id`` at ``revision`` into ``registry`` (a :class:`~.store.Registry`;
    see :mod:`.sharing` for the rules). ``accept(source, name)`` recomputes acceptance
    of every row new to the store (the dataset's verdicts are never used).
    Returns ``{"repo", "commit", "rows", "added", "unchanged", "seeds", "renumbered",
    "deduplicated", "quarantined", "skipped", "acceptance"}``."""
    from .sharing import merge_rows

    with tempfile.TemporaryDirectory(prefix="spade-pull-") as tmp:
        sha = download(repo_id, tmp, revision=revision, endpoint=endpoint, token=token)
        rows = read_rows(tmp)
    if not rows:
        raise RegistryError(f"{repo_id}@{revision or 'main'} holds no registry rows (data/gen-*/*.parquet)")
    for row in rows:
        if not isinstance(row.get("source"), str) or source_sha256(row["source"]) != row.get("sha256"):
            raise RegistryError(f"{repo_id}: row {row.get('env_id')} has a source that does not match its sha256")
    res = merge_rows(registry, rows, repo=repo_id, commit=sha, accept=accept, progress=progress,
                     record_remote=revision in (None, "main"))
    return res.as_json(len(rows))
