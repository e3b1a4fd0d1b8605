"""A tiny OpenAI-compatible chat server on 127.0.0.1 for tests (stdlib only).

``FakeLLM`` serves ``POST /v1/chat/completions`` (and ``/chat/completions``) from a daemon
thread on an ephemeral port, records every request (headers and JSON body), and answers:

1. with the first queued :class:`Reply` whose ``when`` matches the request's
   ``X-BCC-Transition`` (fault injection: status, headers such as ``Retry-After``, a delay,
   a raw body, or just the assistant text), else
2. from the scripted policy: a one-stage workflow (``tests.scripted.one_stage``) chosen by the
   ``X-BCC-Transition`` header, whose action runs ``self.code``.

Every handler returns within its reply's bounded delay; ``stop()`` wakes sleeping handlers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

from tests.scripted import one_stage

__all__ = ["FakeLLM", "Reply", "Request", "scripted_reply"]

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
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


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


def completion(content: str, prompt_chars: int, model: str = "fake-model") -> dict[str, Any]:
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
        self.replies: list[Reply] = []
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
            chars = sum(len(m.get("content") or "") for m in req.messages)
            body = json.dumps(completion(content, chars))
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
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"Content-Type": "application/json"}, error_body(404))
                    return
                status, headers, text, delay = fake._answer(req)
                if delay and fake._stop.wait(delay):
                    return  # shutting down
                self._send(status, headers, text)

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
