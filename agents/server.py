"""A small OpenAI-compatible HTTP server for a :class:`Backend` (loopback by default).

Endpoints: ``POST /v1/chat/completions`` (non-streaming; ``logprobs`` and vLLM's
``return_token_ids`` extension supported), ``GET /v1/models``, ``GET /health``.
Concurrent requests are micro-batched: a worker thread collects the requests that
arrive within ``batch_wait_s`` of each other and sends requests with equal sampling
settings to the backend in one ``chat`` call.

    handle = serve(load_backend("transformers:tiny-random"), port=0)
    ... OpenAIBackend(handle.url, "tiny-random") ...
    handle.close()

Or from a shell: ``python -m spade_envs.agents.server transformers:default --port 8000``.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .api import Backend, Generation


@dataclass
class _Request:
    messages: list[dict]
    tools: list[dict] | None
    max_tokens: int
    temperature: float
    seed: int | None
    future: Future


class _Batcher:
    def __init__(self, backend: Backend, batch_wait_s: float, max_batch: int) -> None:
        self.backend = backend
        self.batch_wait_s = batch_wait_s
        self.max_batch = max_batch
        self.queue: queue.Queue[_Request | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="spade-server-batcher", daemon=True)
        self.thread.start()

    def submit(self, req: _Request) -> Generation:
        self.queue.put(req)
        return req.future.result()

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.max_batch:
                try:
                    item = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    self.queue.put(None)
                    break
                batch.append(item)
            groups: dict[tuple, list[_Request]] = {}
            for req in batch:
                groups.setdefault((req.max_tokens, req.temperature), []).append(req)
            for (max_tokens, temperature), reqs in groups.items():
                seeds = [r.seed for r in reqs if r.seed is not None]
                seed = min(seeds) if seeds else None  # one sampling stream per batch
                try:
                    gens = self.backend.chat(
                        [r.messages for r in reqs], tools=[r.tools or [] for r in reqs],
                        max_new_tokens=max_tokens, temperature=temperature, seed=seed,
                    )
                except Exception as exc:  # report to every waiting request
                    for r in reqs:
                        r.future.set_exception(exc)
                    continue
                for r, gen in zip(reqs, gens):
                    r.future.set_result(gen)


def completion_response(gen: Generation, model: str, *, logprobs: bool, token_ids: bool, tokenizer: Any) -> dict:
    """The chat completion JSON for one generation."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": gen.text},
        "finish_reason": gen.finish_reason,
    }
    if logprobs and gen.logprobs:
        pieces = tokenizer.convert_ids_to_tokens(gen.token_ids) if tokenizer is not None else [""] * len(gen.token_ids)
        choice["logprobs"] = {"content": [
            {"token": str(piece), "logprob": lp, "bytes": None, "top_logprobs": []}
            for piece, lp in zip(pieces, gen.logprobs)
        ]}
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": len(gen.prompt_token_ids),
            "completion_tokens": len(gen.token_ids),
            "total_tokens": len(gen.prompt_token_ids) + len(gen.token_ids),
        },
    }
    if token_ids:
        body["prompt_token_ids"] = list(gen.prompt_token_ids)
        choice["token_ids"] = list(gen.token_ids)
    return body


def _handler(batcher: _Batcher, model_name: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/health", "/v1/health"):
                self._send(200, {"status": "ok"})
            elif self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "spade"}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                messages = body["messages"]
                if not isinstance(messages, list) or not messages:
                    raise ValueError("'messages' must be a non-empty list")
                if body.get("stream"):
                    raise ValueError("streaming is not supported by this server")
                req = _Request(
                    messages=[{"role": m["role"], "content": m.get("content") or ""} for m in messages],
                    tools=body.get("tools"),
                    max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 256),
                    temperature=float(body.get("temperature", 1.0)),
                    seed=body.get("seed"),
                    future=Future(),
                )
            except (ValueError, KeyError, TypeError) as exc:
                self._error(400, f"bad request: {exc}")
                return
            try:
                gen = batcher.submit(req)
            except Exception as exc:  # the backend failed
                self._error(500, f"{type(exc).__name__}: {exc}")
                return
            self._send(200, completion_response(
                gen, body.get("model") or model_name, logprobs=bool(body.get("logprobs")),
                token_ids=bool(body.get("return_token_ids")), tokenizer=batcher.backend.tokenizer,
            ))

    return Handler


class ServerHandle:
    """A running server: ``url`` (``http://127.0.0.1:PORT/v1``) and ``close()``."""

    def __init__(self, httpd: ThreadingHTTPServer, batcher: _Batcher, thread: threading.Thread) -> None:
        self.httpd, self.batcher, self.thread = httpd, batcher, thread
        host, port = httpd.server_address[:2]
        self.port = int(port)
        self.url = f"http://{host}:{port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.batcher.stop()
        self.thread.join(timeout=5)

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(backend: Backend, *, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None,
          batch_wait_s: float = 0.02, max_batch: int = 64) -> ServerHandle:
    """Serve ``backend`` in a background thread (``port=0`` picks a free port)."""
    batcher = _Batcher(backend, batch_wait_s, max_batch)
    httpd = ThreadingHTTPServer((host, port), _handler(batcher, model_name or backend.name))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="spade-server", daemon=True)
    thread.start()
    return ServerHandle(httpd, batcher, thread)


def main(argv: list[str] | None = None) -> None:
    import argparse

    from . import load_backend

    parser = argparse.ArgumentParser(description="Serve a spade backend as an OpenAI-compatible API.")
    parser.add_argument("spec", help="backend spec, e.g. transformers:default")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    handle = serve(load_backend(args.spec), host=args.host, port=args.port, model_name=args.spec.split(":", 1)[1])
    print(f"serving {args.spec} at {handle.url}", flush=True)
    try:
        handle.thread.join()
    except KeyboardInterrupt:
        handle.close()


if __name__ == "__main__":
    main()
