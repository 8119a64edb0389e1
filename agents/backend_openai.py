"""The ``openai`` backend: any OpenAI-compatible ``/v1/chat/completions`` server
(``vllm serve``, llama.cpp's server, :mod:`spade_envs.agents.server`...).

Spec: ``openai:URL#MODEL``, e.g. ``openai:http://127.0.0.1:8000/v1#smollm2``. The URL may
be the server root, ``.../v1`` or the full ``.../v1/chat/completions``. The API key comes
from ``api_key=`` or ``$OPENAI_API_KEY`` (optional for local servers).

Requests run concurrently (``max_workers``, default 16) with a timeout (``timeout_s``,
default 300). Logprobs are requested and recorded when the server returns them; token
ids too through vLLM's ``return_token_ids`` extension (servers that reject the extension
fields get one retry without them). Tools are sent as ``tools=`` only with
``native_tools=True``; by default the agent lists them in the system prompt (the
fallback format), so the model's text always carries ``<tool_call>`` blocks. Tool calls
that a server parsed out into ``tool_calls`` are turned back into ``<tool_call>`` text.
"""

from __future__ import annotations

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import AgentError
from .api import Backend, Generation


EXTENSIONS: dict[str, Any] = {"logprobs": True, "return_token_ids": True}
"""Optional request fields beyond the core chat completions body (logprobs, vLLM's ids)."""

_REJECTED: dict[str, set[str]] = {}  # endpoint URL -> extension fields its server refused
_REJECTED_LOCK = threading.Lock()


def rejected_extensions(url: str) -> frozenset[str]:
    """The extension fields the server at ``url`` has refused in this process."""
    with _REJECTED_LOCK:
        return frozenset(_REJECTED.get(endpoint_url(url), ()))


def _named_fields(status: int, text: str, sent: list[str]) -> list[str]:
    """The sent extension fields a 4xx answer names (all of them for a bare 400/422)."""
    if not 400 <= status < 500:
        return []
    named = [f for f in sent if re.search(rf"\b{re.escape(f)}\b", text)]
    if named:
        return named
    return list(sent) if status in (400, 422) else []


def endpoint_url(url: str) -> str:
    """The chat completions endpoint for a server URL."""
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


class OpenAIBackend(Backend):
    """Chat completions over HTTP (message level: no local tokenizer)."""

    token_level = False

    def __init__(
        self,
        url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        max_workers: int = 16,
        native_tools: bool = False,
        extensions: bool = True,
        top_p: float | None = None,
    ) -> None:
        import httpx

        if not url.startswith(("http://", "https://")):
            raise AgentError(f"openai backend needs an http(s) URL, got '{url}' (spec openai:URL#MODEL)")
        self.url = endpoint_url(url)
        self.model = model
        self.name = f"openai:{url}#{model}"
        self.tokenizer = None
        self.native_tools = native_tools
        self.extensions = extensions
        self.top_p = top_p
        key = api_key or os.environ.get("OPENAI_API_KEY")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)), headers=headers)
        self._pool = ThreadPoolExecutor(max_workers=max(1, int(max_workers)))

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._client.close()

    def chat(
        self,
        conversations: list[list[dict]],
        *,
        tools: list[list[dict]] | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
    ) -> list[Generation]:
        bodies = []
        for i, messages in enumerate(conversations):
            body: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "max_tokens": int(max_new_tokens),
                "temperature": float(temperature),
            }
            if seed is not None:
                body["seed"] = int(seed)
            if self.top_p is not None:
                body["top_p"] = self.top_p
            if tools and tools[i] and self.native_tools:
                body["tools"] = tools[i]
            bodies.append(body)
        return list(self._pool.map(self._complete, bodies))

    def _complete(self, body: dict[str, Any]) -> Generation:
        while True:
            sent = [] if not self.extensions else [f for f in EXTENSIONS if f not in rejected_extensions(self.url)]
            resp = self._send({**body, **{f: EXTENSIONS[f] for f in sent}})
            refused = _named_fields(resp.status_code, resp.text, sent) if sent else []
            if not refused:
                return parse_response(self._json(resp))
            with _REJECTED_LOCK:  # remembered for this server; retry without the refused fields
                _REJECTED.setdefault(self.url, set()).update(refused)

    def _post(self, body: dict[str, Any]) -> dict:
        """The JSON answer to one request (an :class:`AgentError` for anything else)."""
        return self._json(self._send(body))

    def _send(self, body: dict[str, Any]) -> Any:
        import httpx

        try:
            resp = self._client.post(self.url, content=json.dumps(body))
        except httpx.TimeoutException:
            raise AgentError(f"{self.url} did not answer in time; raise timeout_s or check the server") from None
        except httpx.HTTPError as exc:
            raise AgentError(f"cannot reach {self.url}: {exc}; is the server running?") from None
        return resp

    def _json(self, resp: Any) -> dict:
        if resp.status_code != 200:
            raise AgentError(f"{self.url} answered HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()
        except ValueError:
            raise AgentError(f"{self.url} answered something that is not JSON: {resp.text[:200]!r}") from None


def parse_response(data: dict[str, Any]) -> Generation:
    """A :class:`Generation` from a chat completion response (first choice)."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError):
        raise AgentError(f"not a chat completion response: {str(data)[:200]}") from None
    text = message.get("content") or ""
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) else (args or {})
        except json.JSONDecodeError:
            pass
        text += "<tool_call>" + json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False) + "</tool_call>"
    content = ((choice.get("logprobs") or {}).get("content")) or []
    logprobs = [float(item.get("logprob", 0.0)) for item in content]
    token_ids = [int(t) for t in (choice.get("token_ids") or [])]
    prompt_ids = [int(t) for t in (data.get("prompt_token_ids") or choice.get("prompt_token_ids") or [])]
    if token_ids and len(logprobs) != len(token_ids):
        logprobs = []  # cannot align them
    return Generation(
        text=text, token_ids=token_ids, logprobs=logprobs, prompt_token_ids=prompt_ids,
        finish_reason=choice.get("finish_reason") or "stop",
    )
