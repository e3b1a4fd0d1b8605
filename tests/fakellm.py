"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests (stdlib only).

``FakeLLM`` serves ``POST /v1/chat/completions`` (and ``/chat/completions``), Anthropic's
``POST /v1/messages``, and ``GET /v1/models`` (bcc's key check, recorded in ``key_checks``), from a daemon thread on an ephemeral port, records every request
(headers and JSON body), and answers:

1. with the first queued :class:`Reply` whose ``when`` matches the request's
   ``X-BCC-Transition`` (fault injection: status, headers such as ``Retry-After``, a delay,
   a raw body, or just the assistant text), else
2. from the scripted policy: a one-stage workflow (``tests.scripted.one_stage``) chosen by the
   ``X-BCC-Transition`` header, whose action runs ``self.code``.

Every handler returns within its reply's bounded delay; ``stop()`` wakes sleeping handlers.

Usage counts four characters a token and plays a provider's prompt cache
(:class:`PromptCache`): an OpenAI request reports the tokens of its longest prefix shared with
an earlier request (``prompt_tokens_details.cached_tokens``, from 1,024 tokens on, in steps of
128, as OpenAI does); an Anthropic request reads the longest prefix up to a ``cache_control``
mark that an earlier request wrote, and writes the rest up to its last mark
(``cache_read_input_tokens``, ``cache_creation_input_tokens``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

from tests.scripted import one_stage

__all__ = ["FakeLLM", "Reply", "Request", "each_behavior", "scripted_reply"]

MAX_DELAY_S = 30.0


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    at: float

    @property
    def transition(self) -> str:
        return self.headers.get("x-bcc-transition", "")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def last_user(self) -> str:
        users = [_text(m.get("content")) for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def system(self) -> str:
        """The system prompt's text, in either format (Anthropic's is the body's ``system``)."""
        if "system" in self.body:
            return _text(self.body["system"])
        return "".join(_text(m.get("content")) for m in self.messages if m["role"] == "system")


@dataclass
class Reply:
    """One injected response. ``content`` None means: the policy's text for the transition."""

    status: int = 200
    content: str | None = None
    body: str | None = None  # raw body text; wins over everything else
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    when: str | None = None  # only for this X-BCC-Transition (None: the next request)


def scripted_reply(transition: str, code: str, artifact: str = "result") -> str:
    """The one-stage workflow's reply for ``transition``; the action runs ``code``."""
    obs = SimpleNamespace(event=transition, behaviors_in_step=0, artifacts=())
    return one_stage(obs, lambda o: code, complete_when=lambda o: True, artifact=artifact)


def _text(content: Any) -> str:
    """A message's or system block's text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


class PromptCache:
    """What a provider's prompt cache would serve, in tokens of four characters."""

    def __init__(self) -> None:
        self.sent: list[str] = []  # OpenAI: every prompt, for the longest shared prefix
        self.written: set[str] = set()  # Anthropic: prefixes up to a cache_control mark

    def openai(self, messages: list[dict[str, Any]]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of a chat request."""
        text = "".join(_text(m.get("content")) for m in messages)
        shared = max((len(os.path.commonprefix([text, t])) for t in self.sent), default=0)
        self.sent.append(text)
        tokens = shared // 4
        return max(1, len(text) // 4), (tokens // 128) * 128 if tokens >= 1024 else 0

    def anthropic(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(uncached input tokens, cache read tokens, cache write tokens) of a messages request."""
        system = body.get("system") or []
        blocks = [{"text": system}] if isinstance(system, str) else list(system)
        for m in body.get("messages", []):
            content = m.get("content")
            blocks += [{"text": content}] if isinstance(content, str) else list(content or [])
        text, marks = "", []
        for block in blocks:
            text += block.get("text", "")
            if block.get("cache_control"):
                marks.append(text)
        read = max((len(m) for m in marks if m in self.written), default=0)
        written = len(marks[-1]) - read if marks and len(marks[-1]) > read else 0
        self.written.update(marks)
        return (len(text) - read - written) // 4, read // 4, written // 4


def anthropic_message(content: str, usage: tuple[int, int, int], model: str) -> dict[str, Any]:
    uncached, read, written = usage
    return {
        "id": f"msg_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, uncached),
            "output_tokens": max(1, len(content) // 4),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        },
    }


def completion(
    content: str, prompt_chars: int, model: str = "fake-model", cached: int = 0
) -> dict[str, Any]:
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(content) // 4)
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def error_body(status: int) -> str:
    kind = _ERROR_TYPES.get(status, "server_error")
    return json.dumps({"error": {"message": f"fake {status}", "type": kind, "code": kind}})


class FakeLLM:
    def __init__(self, code: str = "result = 42", policy: Callable[[Request], str] | None = None):
        self.code = code
        self.policy = policy or (lambda req: scripted_reply(req.transition, self.code))
        self.requests: list[Request] = []
        #: ``GET /models``: bcc's key check at the start of a run (not a model call); it is
        #: answered 401 or 403 when the next queued reply for the first call is one
        self.key_checks: list[Request] = []
        self.serves_models = True  # False: GET /models is a 404, as on servers without it
        self.replies: list[Reply] = []
        self.cache = PromptCache()
        self.usages: list[dict[str, Any]] = []  # the usage of every 200 reply, as sent
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Reply) -> FakeLLM:
        with self._lock:
            self.replies.extend(replies)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def by(self, transition: str) -> list[Request]:
        return [r for r in self.requests if r.transition == transition]

    # -- serving ----------------------------------------------------------------------------
    def _take(self, transition: str) -> Reply | None:
        with self._lock:
            for i, reply in enumerate(self.replies):
                if reply.when is None or reply.when == transition:
                    return self.replies.pop(i)
        return None

    def _answer(self, req: Request) -> tuple[int, dict[str, str], str, float]:
        reply = self._take(req.transition) or Reply()
        headers = {"Content-Type": "application/json", **reply.headers}
        if reply.body is not None:
            body = reply.body
        elif reply.status != 200:
            body = error_body(reply.status)
        else:
            content = reply.content if reply.content is not None else self.policy(req)
            model = str(req.body.get("model", "fake-model"))
            if req.path.rstrip("/").endswith("/messages"):
                with self._lock:
                    usage = self.cache.anthropic(req.body)
                answer = anthropic_message(content, usage, model)
            else:
                with self._lock:
                    tokens, cached = self.cache.openai(req.messages)
                answer = completion(content, tokens * 4, model, cached)
            with self._lock:
                self.usages.append(answer["usage"])
            body = json.dumps(answer)
        return reply.status, headers, body, min(reply.delay, MAX_DELAY_S)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                req = Request(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with fake._lock:
                    fake.requests.append(req)
                if not self.path.rstrip("/").endswith(("/chat/completions", "/messages")):
                    self._send(404, {"Content-Type": "application/json"}, error_body(404))
                    return
                status, headers, text, delay = fake._answer(req)
                if delay and fake._stop.wait(delay):
                    return  # shutting down
                self._send(status, headers, text)

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.key_checks.append(Request(self.path, headers, {}, time.monotonic()))
                    head = next(
                        (r for r in fake.replies if r.when in (None, "START_WORKFLOW")), None
                    )
                json_type = {"Content-Type": "application/json"}
                if not fake.serves_models or not self.path.rstrip("/").endswith("/models"):
                    self._send(404, json_type, error_body(404))
                elif head is not None and head.status in (401, 403):
                    self._send(head.status, json_type, error_body(head.status))
                else:
                    self._send(200, json_type, json.dumps({"object": "list", "data": []}))

            def _send(self, status: int, headers: dict[str, str], text: str) -> None:
                data = text.encode("utf-8")
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout): nothing to do
                    pass

        return Handler


def each_behavior(codes: list[str]) -> Callable[[Request], str]:
    """A policy: the one-stage workflow whose behaviors' actions run ``codes`` in turn (the
    last one again once they run out): an escape attempt per behavior, then honest work."""
    count = {"START_BEHAVIOR": 0, "COMPLETE_ACTION": 0}

    def answer(req: Request) -> str:
        if req.transition in count:
            count[req.transition] += 1
        n = count["START_BEHAVIOR"]
        obs = SimpleNamespace(event=req.transition, behaviors_in_step=n - 1, artifacts=())
        code = codes[min(count["COMPLETE_ACTION"], len(codes)) - 1]
        return one_stage(obs, lambda o: code)

    return answer
