"""A loopback server that speaks the Anthropic Messages and OpenAI Chat Completions wire formats.

Each endpoint has its own script queue; each request pops the next `Scripted` answer:
plain JSON, an SSE stream (correct `event:`/`data:` framing, `data: [DONE]` for OpenAI),
an error status with the provider's error body (and `retry-after`), a delay longer than the
client's timeout, or malformed JSON. Every request is recorded (path, headers, JSON body) so
tests can assert what the SDKs actually sent.

    async with LLMStubServer() as server:
        server.anthropic.append(Scripted.json(anthropic_message([("hello", [])])))
        llm = ClaudeLLM("key", base_url=server.url)
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.stubs.loopback import LoopbackServer

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"


@dataclass
class Scripted:
    """One scripted answer. Build with the classmethods."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # SSE: (event name or None, data) pairs; data dicts are JSON-encoded, strings sent as is.
    events: list[tuple[str | None, Any]] | None = None
    event_gap_s: float = 0.0
    stall: bool = False  # never answer: the client's own timeout has to end the request
    hold: asyncio.Event | None = None  # answer only once the test sets it

    @classmethod
    def json(cls, payload: Any, status: int = 200, **headers: str) -> Scripted:
        return cls(status=status, body=json.dumps(payload).encode(), headers=dict(headers))

    @classmethod
    def sse(cls, events: list[tuple[str | None, Any]], gap_s: float = 0.0) -> Scripted:
        return cls(content_type="text/event-stream", events=events, event_gap_s=gap_s)

    @classmethod
    def error(
        cls, status: int, payload: Any, retry_after: float | None = None, delay_s: float = 0.0
    ) -> Scripted:
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return cls(
            status=status, body=json.dumps(payload).encode(), headers=headers, delay_s=delay_s
        )

    @classmethod
    def slow(cls, payload: Any, delay_s: float) -> Scripted:
        return cls(body=json.dumps(payload).encode(), delay_s=delay_s)

    @classmethod
    def held(cls, payload: Any, gate: asyncio.Event) -> Scripted:
        """Answer `payload`, but only once the test sets `gate` (no real delay to tune)."""
        return cls(body=json.dumps(payload).encode(), hold=gate)

    @classmethod
    def stalled(cls) -> Scripted:
        """No answer at all, until the server shuts down (a hung provider)."""
        return cls(stall=True)

    @classmethod
    def malformed(cls) -> Scripted:
        return cls(body=b'{"id": "msg_broken", "content": [ {"type": "text", "text": ')


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Any], "Scripted | Awaitable[Scripted]"]


class LLMStubServer(LoopbackServer):
    """The Anthropic and OpenAI chat endpoints on loopback (`async with` serves them).

    Scripted answers are popped from `anthropic` / `openai`; when a queue is empty, that
    provider's responder (if set) builds the answer from the request body — a model whose
    reply depends on the prompt. A responder may be async (e.g. to hold an answer back until
    the test releases it)."""

    def __init__(self) -> None:
        self.anthropic: deque[Scripted] = deque()
        self.openai: deque[Scripted] = deque()
        self.anthropic_responder: Responder | None = None
        self.openai_responder: Responder | None = None
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests being answered at once
        self._closing = asyncio.Event()
        self._changed = asyncio.Condition()  # a request arrived or was answered

    @property
    def url(self) -> str:
        """Base URL for the Anthropic SDK (it appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """Base URL for the OpenAI SDK (it appends /chat/completions)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def requests_to(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` holds, checked whenever a request arrives or ends."""
        try:
            async with asyncio.timeout(60), self._changed:  # a hang guard, not a time limit
                await self._changed.wait_for(predicate)
        except TimeoutError:
            raise AssertionError(f"never happened; in flight: {self.in_flight}") from None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(ANTHROPIC_PATH, self._anthropic)
        app.router.add_post(OPENAI_PATH, self._openai)
        return app

    async def _stop_serving(self) -> None:
        self._closing.set()

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(
            request, self.anthropic, self.anthropic_responder, done_marker=False
        )

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, self.openai, self.openai_responder, done_marker=True)

    async def _answer(
        self,
        request: web.Request,
        queue: deque[Scripted],
        responder: Responder | None,
        *,
        done_marker: bool,
    ) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer_one(request, queue, responder, done_marker=done_marker)
        finally:
            self.in_flight -= 1
            await self._notify()

    async def _answer_one(
        self,
        request: web.Request,
        queue: deque[Scripted],
        responder: Responder | None,
        *,
        done_marker: bool,
    ) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.received.append(Received(request.path, dict(request.headers), body))
        await self._notify()
        if queue:
            item = queue.popleft()
        elif responder is not None:
            answer = responder(body)
            item = await answer if inspect.isawaitable(answer) else answer
        else:
            return web.json_response(
                {"type": "error", "error": {"type": "api_error", "message": "script empty"}},
                status=500,
            )
        if item.stall:
            await self._closing.wait()
            raise web.HTTPServiceUnavailable()
        if item.hold is not None:  # the gate, or the server shutting down
            waits = [asyncio.ensure_future(e.wait()) for e in (item.hold, self._closing)]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if not item.hold.is_set():
                raise web.HTTPServiceUnavailable()
        if item.delay_s:
            await asyncio.sleep(item.delay_s)
        if item.events is None:
            return web.Response(
                status=item.status,
                body=item.body,
                headers={"Content-Type": item.content_type, **item.headers},
            )
        response = web.StreamResponse(
            status=item.status,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
        await response.prepare(request)
        for name, data in item.events:
            payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            await response.write(frame.encode("utf-8"))
            if item.event_gap_s:
                await asyncio.sleep(item.event_gap_s)
        if done_marker:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


# ---- Anthropic wire format ----------------------------------------------------------------

Cite = tuple[int, str]  # (0-based document_index, cited_text)


def anthropic_citation(
    document_index: int, cited_text: str, kind: str = "char_location"
) -> dict[str, Any]:
    if kind == "content_block_location":
        return {
            "type": "content_block_location",
            "cited_text": cited_text,
            "document_index": document_index,
            "document_title": f"doc {document_index}",
            "start_block_index": 0,
            "end_block_index": 1,
        }
    return {
        "type": "char_location",
        "cited_text": cited_text,
        "document_index": document_index,
        "document_title": f"doc {document_index}",
        "start_char_index": 0,
        "end_char_index": len(cited_text),
    }


def anthropic_message(
    segments: list[tuple[str, list[Cite]]], model: str = "claude-sonnet-5-5"
) -> dict[str, Any]:
    content = []
    for text, cites in segments:
        block: dict[str, Any] = {"type": "text", "text": text}
        if cites:
            block["citations"] = [anthropic_citation(i, t) for i, t in cites]
        content.append(block)
    return {
        "id": "msg_stub_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 321, "output_tokens": 45},
    }


def anthropic_stream(
    segments: list[tuple[str, list[Cite]]], model: str = "claude-sonnet-5-5", piece: int = 4
) -> list[tuple[str | None, Any]]:
    """The event sequence the Messages API streams for these text blocks."""
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stub_02",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 321, "output_tokens": 1},
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, (text, cites) in enumerate(segments):
        start_block: dict[str, Any] = {"type": "text", "text": ""}
        if cites:
            start_block["citations"] = []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start_block},
            )
        )
        for doc, cited in cites:
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "citations_delta",
                            "citation": anthropic_citation(doc, cited),
                        },
                    },
                )
            )
        for start in range(0, len(text), piece):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": text[start : start + piece]},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 45},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(kind: str = "rate_limit_error", message: str = "slow down") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# ---- OpenAI wire format -------------------------------------------------------------------


def openai_completion(text: str, model: str = "gpt-6-luna") -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub01",
        "object": "chat.completion",
        "created": 1_790_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    }


def openai_stream(
    text: str, model: str = "gpt-6-luna", piece: int = 4
) -> list[tuple[str | None, Any]]:
    base = {
        "id": "chatcmpl-stub02",
        "object": "chat.completion.chunk",
        "created": 1_790_000_000,
        "model": model,
    }
    events: list[tuple[str | None, Any]] = [
        (
            None,
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            },
        )
    ]
    for start in range(0, len(text), piece):
        events.append(
            (
                None,
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": text[start : start + piece]},
                            "finish_reason": None,
                        }
                    ],
                },
            )
        )
    events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    events.append(
        (
            None,
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
            },
        )
    )
    return events


def openai_error(kind: str = "rate_limit_exceeded", message: str = "slow down") -> dict[str, Any]:
    return {"error": {"message": message, "type": "requests", "param": None, "code": kind}}
