"""Publishing the registry as a Hugging Face dataset and loading one back.

``push``: export (:mod:`.hub_export`) to a temporary folder, ``create_repo(repo_type=
"dataset", exist_ok=True)``, then ONE ``create_commit`` with ``parent_commit`` set to the
head of ``main`` that was read first (a concurrent push in between makes the Hub refuse
it: :class:`~spade_envs.errors.RegistryError`, nothing half-written), deleting remote
shards that are gone; then a tag ``gen-NNNN`` on that commit for every published
generation not tagged yet (tags are never moved: ``gen-0003`` pins the registry as of
the push that first published generation 3). huggingface_hub skips files whose content
is unchanged, so re-pushing an unchanged registry makes no commit.

``pull``: ``snapshot_download`` of a revision (branch, tag or commit), then the rows go
into the local store with their ids (:meth:`~.store.Registry.import_rows`), origin
``hub:REPO@COMMIT``. Pulled code is untrusted: it only runs in the sandbox.
``huggingface_hub`` is imported lazily.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from ..program import source_sha256
from .catalog import EnvRecord
from .hub_export import export, gen_name, read_rows

REPO_TYPE = "dataset"


def _endpoint(endpoint: str | None) -> str | None:
    """``endpoint``, else ``HF_ENDPOINT`` as set NOW (huggingface_hub reads it only at import)."""
    return endpoint or os.environ.get("HF_ENDPOINT") or None


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


def push(records: Iterable[EnvRecord], repo_id: str, *, generation: int | None = None, endpoint: str | None = None,
         token: str | None = None, private: bool = False, parent_commit: str | None = None) -> dict[str, Any]:
    """Publish ``records`` (generations up to ``generation``) to the dataset ``repo_id``.

    ``parent_commit`` overrides the head read from the Hub (for callers that hold an
    earlier head; a stale one is refused). Returns ``{"repo", "commit", "new_commit",
    "tags_created", "generations", "rows"}``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api = _api(endpoint, token)
    with tempfile.TemporaryDirectory(prefix="spade-push-") as tmp:
        summary = export(records, tmp, max_generation=generation)
        try:
            api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=True, private=private)
            refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
            head = next((b.target_commit for b in refs.branches if b.name == "main"), None)
            parent = parent_commit or head
            remote = set(api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=parent)) if parent else set()
            local = set(summary["files"])
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


def download(repo_id: str, dest: str | Path, *, revision: str | None = None, endpoint: str | None = None,
             token: str | None = None) -> str:
    """Download the dataset files of ``revision`` into ``dest``; returns the commit sha."""
    from huggingface_hub import snapshot_download

    api = _api(endpoint, token)
    try:
        sha = api.repo_info(repo_id, repo_type=REPO_TYPE, revision=revision).sha
        snapshot_download(repo_id, repo_type=REPO_TYPE, revision=sha, local_dir=str(dest), endpoint=_endpoint(endpoint),
                          token=token, allow_patterns=["README.md", "data/**"])
    except Exception as exc:
        raise _hub_error(exc, repo_id) from None
    return sha


def pull(registry, repo_id: str, *, revision: str | None = None, endpoint: str | None = None,
         token: str | None = None) -> dict[str, Any]:
    """Load ``repo_id`` at ``revision`` into ``registry`` (a :class:`~.store.Registry`).
    Generation-0 rows (the seed suite) come from the installed package and are skipped.
    Returns ``{"repo", "commit", "added", "unchanged", "seeds", "rows"}``."""
    with tempfile.TemporaryDirectory(prefix="spade-pull-") as tmp:
        sha = download(repo_id, tmp, revision=revision, endpoint=endpoint, token=token)
        rows = read_rows(tmp)
    if not rows:
        raise RegistryError(f"{repo_id}@{revision or 'main'} holds no registry rows (data/gen-*/*.parquet)")
    for row in rows:
        if not isinstance(row.get("source"), str) or source_sha256(row["source"]) != row.get("sha256"):
            raise RegistryError(f"{repo_id}: row {row.get('env_id')} has a source that does not match its sha256")
        row["origin"] = f"hub:{repo_id}@{sha}"
    counts = registry.import_rows(rows)
    return {"repo": repo_id, "commit": sha, **counts, "rows": len(rows)}
