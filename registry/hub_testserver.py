"""A small in-memory Hugging Face Hub-compatible HTTP server, for trying ``spade registry
push|pull`` offline and for the tests (127.0.0.1 only; nothing is written to disk, no
authentication: any token is accepted).

    python -m spade_envs.registry.hub_testserver --port 8765
    export HF_ENDPOINT=http://127.0.0.1:8765 HF_TOKEN=hf_local HF_HUB_DISABLE_XET=1

Implements what huggingface_hub 1.x calls for dataset repos with regular (non-LFS,
non-Xet) uploads: ``POST /api/repos/create``, ``POST /api/validate-yaml``,
``GET /api/datasets/R[/revision/REV]``, ``POST .../preupload/REV``, ``POST .../commit/REV``
(ndjson, ``parentCommit`` checked: a stale parent gets 412), ``POST .../tag/REV``,
``GET .../refs``, ``GET .../tree/REV[/PATH]``, ``POST .../paths-info/REV`` and
``HEAD|GET /datasets/R/resolve/REV/PATH`` (missing entries: 404 with
``X-Error-Code: EntryNotFound``), plus ``GET /health``. Revisions are branches, tags or
full commit shas. Hence ``HF_HUB_DISABLE_XET=1``: hf_xet would switch uploads to Xet.

In Python: ``with HubServer() as hub: os.environ["HF_ENDPOINT"] = hub.url`` (a free
port unless ``port=`` is given). ``hub.commits(repo)`` counts commits on main.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    commits: dict[str, dict] = field(default_factory=dict)  # sha -> {"files": {path: bytes}, "parent": sha|None}
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def commit(self, files: dict[str, bytes], parent: str | None, message: str) -> str:
        h = hashlib.sha1(f"{parent}|{message}|{len(self.commits)}".encode())
        for path in sorted(files):
            h.update(path.encode() + git_blob_sha1(files[path]).encode())
        sha = h.hexdigest()
        self.commits[sha] = {"files": dict(files), "parent": parent, "message": message}
        return sha

    def resolve(self, rev: str) -> str | None:
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        return rev if rev in self.commits else None


class HubServer:
    """Starts on a free port in a daemon thread; ``url`` is its endpoint."""

    def __init__(self, port: int = 0) -> None:
        self.repos: dict[str, Repo] = {}
        self.lock = threading.Lock()
        self.requests: list[str] = []
        handler = type("Handler", (_Handler,), {"hub": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "HubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def commits(self, repo_id: str) -> int:
        repo = self.repos[repo_id]
        n, sha = 0, repo.branches.get("main")
        while sha is not None:
            n, sha = n + 1, repo.commits[sha]["parent"]
        return n


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------
    def _send(self, status: int, body: bytes | dict | list = b"", headers: dict | None = None,
              head: bool = False) -> None:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, head: bool = False) -> None:
        self._send(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message}, head=head)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        self.hub.requests.append(f"{method} {url.path}")
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        query = parse_qs(url.query)
        with self.hub.lock:
            try:
                self._dispatch(method, parts, query)
            except Exception as exc:  # pragma: no cover - a bug in the test server
                self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    do_GET = lambda self: self._route("GET")  # noqa: E731
    do_HEAD = lambda self: self._route("HEAD")  # noqa: E731
    do_POST = lambda self: self._route("POST")  # noqa: E731

    # -- endpoints ---------------------------------------------------------------
    def _dispatch(self, method: str, parts: list[str], query: dict) -> None:
        head = method == "HEAD"
        if parts == ["health"]:
            return self._send(200, {"status": "ok"}, head=head)
        if parts[:3] == ["api", "repos", "create"]:
            return self._create(json.loads(self._body()))
        if parts[:2] == ["api", "validate-yaml"]:
            self._body()
            return self._send(200, {"errors": [], "warnings": []})
        if len(parts) >= 4 and parts[0] == "api" and parts[1] in ("datasets", "models"):
            repo_id, rest = f"{parts[2]}/{parts[3]}", parts[4:]
            repo = self.hub.repos.get(repo_id)
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            return self._api(method, repo_id, repo, rest, query)
        if len(parts) >= 6 and parts[0] == "datasets" and parts[3] == "resolve":
            repo = self.hub.repos.get(f"{parts[1]}/{parts[2]}")
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found", head)
            sha = repo.resolve(parts[4])
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {parts[4]}", head)
            path = "/".join(parts[5:])
            data = repo.commits[sha]["files"].get(path)
            if data is None:
                return self._error(404, "EntryNotFound", f"{path} does not exist at {sha}", head)
            etag = f'"{git_blob_sha1(data)}"'
            return self._send(200, data, {"X-Repo-Commit": sha, "ETag": etag, "Content-Type": "application/octet-stream"},
                              head=head)
        return self._send(404, {"error": f"no route {method} /{'/'.join(parts)}"})

    def _create(self, payload: dict) -> None:
        repo_id = f"{payload.get('organization') or 'user'}/{payload['name']}"
        url = f"{self.hub.url}/datasets/{repo_id}"
        if repo_id in self.hub.repos:
            return self._send(409, {"error": "You already created this dataset repo", "url": url})
        repo = Repo()
        repo.branches["main"] = repo.commit({".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"},
                                            None, "initial commit")
        self.hub.repos[repo_id] = repo
        self._send(200, {"url": url, "name": repo_id})

    def _entries(self, files: dict[str, bytes], paths) -> list[dict]:
        out, dirs = [], set()
        for path in sorted(paths):
            if path in files:
                out.append({"type": "file", "path": path, "size": len(files[path]), "oid": git_blob_sha1(files[path])})
            parts = path.split("/")
            dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest()} for d in sorted(dirs)] + out

    def _api(self, method: str, repo_id: str, repo: Repo, rest: list[str], query: dict) -> None:
        action = rest[0] if rest else "revision"
        rev = rest[1] if len(rest) > 1 else "main"
        if action == "refs":
            ref = lambda kind, items: [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": s}  # noqa: E731
                                       for n, s in sorted(items.items())]
            return self._send(200, {"branches": ref("heads", repo.branches), "tags": ref("tags", repo.tags),
                                    "converts": []})
        sha = repo.resolve(rev)
        if sha is None:
            self._body()
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        files = repo.commits[sha]["files"]
        if action == "revision" and method == "GET":
            return self._send(200, {"id": repo_id, "sha": sha, "private": False, "tags": [], "downloads": 0,
                                    "likes": 0, "siblings": [{"rfilename": p} for p in sorted(files)]})
        if action == "preupload":
            req = json.loads(self._body())["files"]
            return self._send(200, {"files": [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                 "oid": git_blob_sha1(files[f["path"]]) if f["path"] in files else None} for f in req]})
        if action == "commit":
            return self._commit(repo_id, repo, rev, sha, self._body())
        if action == "tag":
            payload = json.loads(self._body())
            if payload["tag"] in repo.tags:
                return self._error(409, "TagExists", f"tag {payload['tag']} already exists")
            repo.tags[payload["tag"]] = sha
            return self._send(200, {})
        if action == "tree":
            prefix = "/".join(rest[2:])
            recursive = query.get("recursive", ["False"])[0].lower() == "true"
            entries = [e for e in self._entries(files, files)
                       if (not prefix or e["path"].startswith(prefix + "/"))
                       and (recursive or "/" not in e["path"][len(prefix) + bool(prefix):])]
            return self._send(200, entries)
        if action == "paths-info":
            form = parse_qs(self._body().decode())
            want = form.get("paths", [])
            return self._send(200, [e for e in self._entries(files, files) if e["path"] in want])
        return self._send(404, {"error": f"no route for {action}"})

    def _commit(self, repo_id: str, repo: Repo, rev: str, head: str, body: bytes) -> None:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = lines[0]["value"]
        parent = header.get("parentCommit")
        if parent is not None and parent != head:
            return self._error(412, "StaleParent", "A commit has happened since. Please refresh and try again.")
        files = dict(repo.commits[head]["files"])
        for item in lines[1:]:
            key, value = item["key"], item["value"]
            if key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key == "deletedFolder":
                files = {p: d for p, d in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
            else:
                return self._send(400, {"error": f"unsupported commit operation {key} (LFS/Xet not implemented)"})
        sha = repo.commit(files, head, header["summary"])
        repo.branches[rev] = sha
        self._send(200, {"commitUrl": f"{self.hub.url}/datasets/{repo_id}/commit/{sha}", "commitOid": sha,
                         "success": True, "pullRequestUrl": None})


def main(argv: list[str] | None = None) -> int:
    """Serve on 127.0.0.1:PORT until interrupted; prints the environment to export."""
    parser = argparse.ArgumentParser(prog="python -m spade_envs.registry.hub_testserver",
                                     description="In-memory Hub-compatible server on 127.0.0.1 (for offline tries).")
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0 = any free one)")
    args = parser.parse_args(argv)
    try:
        hub = HubServer(port=args.port)
    except OSError as exc:
        print(f"hub_testserver: error: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc})", file=sys.stderr)
        return 1
    print(f"Hub test server on {hub.url} (in memory; stop with Ctrl-C). In your shell:\n"
          f"  export HF_ENDPOINT={hub.url} HF_TOKEN=hf_local HF_HUB_DISABLE_XET=1", flush=True)
    try:
        hub.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        hub.httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
