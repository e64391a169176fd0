"""A loopback OpenAI-compatible embeddings server: POST /v1/embeddings with the real request
and response JSON (float lists or base64 float32, `dimensions`, `usage`, error bodies).

Vectors come from `retrieval.fakes.HashEmbedder` (similar texts are near), of the size asked
for (`dimensions`) or `default_dim`. What it can be told to do:

- `fail_next`: HTTP statuses served in order before normal answers (a 429 carries
  `retry_after_s` in the `retry_after_header`: `retry-after-ms` or `retry-after` in seconds);
- `delay_s`: answer each request after this long (`sleep`: real time for a benchmark, a
  virtual clock's sleep in tests), as a remote model takes time per batch;
- `max_in_flight`: a rate limit: a request arriving while that many are being answered gets
  429 with `retry-after`, as a server at its limit answers;
- `hold`: awaited with each request's body before it is answered (a test holds the batches it
  picks, to stop a client at a point of its choosing);
- `mangle`: turns the answer's JSON into what is sent instead (a string goes as it is), for
  tests of what a client does with a malformed answer.

`in_flight` / `peak_in_flight` count the requests being answered (the most at once).

Run as a process for a benchmark (`bench/bench_embed_server.py`):
`python -m tests.stubs.embeddings_server --delay 0.2 --dim 1024` prints `URL http://…/v1`,
serves until its standard input closes, then prints one JSON line of what it served.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import resource
import struct
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from retrieval.fakes import HashEmbedder

DEFAULT_DIM = 48
MAX_INPUTS = 2048  # OpenAI's limit on inputs per request


def _error(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None
) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status)


@dataclass
class EmbeddingsServer:
    default_dim: int = DEFAULT_DIM
    fail_next: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    max_in_flight: int | None = None
    hold: Callable[[dict[str, Any]], Awaitable[object]] | None = None
    mangle: Callable[[dict[str, Any]], object] | None = None
    retry_after_s: float = 0.005
    retry_after_header: str = "retry-after-ms"
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    in_flight: int = 0
    peak_in_flight: int = 0
    rate_limited: int = 0  # 429s answered for `max_in_flight`
    _runner: web.AppRunner | None = None

    async def __aenter__(self) -> EmbeddingsServer:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def _too_many(self, status: int = 429) -> web.Response:
        seconds = self.retry_after_s
        if self.retry_after_header == "retry-after-ms":
            value = f"{seconds * 1000:g}"
        else:
            value = str(math.ceil(seconds))
        kind = "rate_limit_exceeded"
        response = _error(status, f"rate limited ({status})", kind, code=kind)
        response.headers[self.retry_after_header] = value
        return response

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.fail_next:
            status = self.fail_next.pop(0)
            if status == 429:
                return self._too_many()
            return _error(status, f"scripted {status}", "server_error", code="server_error")
        if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
            self.rate_limited += 1
            return self._too_many()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay_s > 0:
                await self.sleep(self.delay_s)
            if self.hold is not None:
                await self.hold(body)
            return self._answer(body)
        finally:
            self.in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> web.Response:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(t, str) and t for t in inputs)
        ):
            message = "'input' must be a non-empty string or array of non-empty strings"
            return _error(400, message, "invalid_request_error", "input")
        if len(inputs) > MAX_INPUTS:
            message = f"'input' must have at most {MAX_INPUTS} items, got {len(inputs)}"
            return _error(400, message, "invalid_request_error", "input")
        dim = int(body.get("dimensions") or self.default_dim)
        model = HashEmbedder(dim)
        data = []
        for i, text in enumerate(inputs):
            vec = model._embed(text)
            if body.get("encoding_format") == "base64":
                value: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
            else:
                value = vec
            data.append({"object": "embedding", "index": i, "embedding": value})
        tokens = sum(len(t) for t in inputs)
        answer = {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        if self.mangle is None:
            return web.json_response(answer)
        sent = self.mangle(answer)
        if isinstance(sent, str):
            return web.Response(text=sent, content_type="application/json")
        return web.json_response(sent)


async def _serve(args: argparse.Namespace) -> None:
    server = EmbeddingsServer(
        default_dim=args.dim,
        delay_s=args.delay,
        max_in_flight=args.max_in_flight,
        retry_after_s=args.retry_after,
        retry_after_header="retry-after",
    )
    async with server:
        print(f"URL {server.base_url}", flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the parent closes our standard input
    usage = resource.getrusage(resource.RUSAGE_SELF)
    stats = {
        "requests": len(server.requests),
        "inputs": sum(len(r.get("input") or ()) for r in server.requests),
        "peak_in_flight": server.peak_in_flight,
        "rate_limited": server.rate_limited,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
    }
    print(json.dumps(stats), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description="loopback OpenAI-compatible embeddings server")
    ap.add_argument("--dim", type=int, default=DEFAULT_DIM, help="vector size when not asked")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    ap.add_argument("--max-in-flight", type=int, default=None, help="429 beyond this many")
    ap.add_argument("--retry-after", type=float, default=1.0, help="seconds a 429 asks for")
    asyncio.run(_serve(ap.parse_args()))


if __name__ == "__main__":
    main()
