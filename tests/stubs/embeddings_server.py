"""A loopback OpenAI-compatible embeddings server: POST /v1/embeddings with the real request
and response JSON (float lists or base64 float32, `dimensions`, `usage`, error bodies).

Vectors come from `retrieval.fakes.HashEmbedder` (similar texts are near). Script failures
with `fail_next` (HTTP statuses served in order before normal answers).
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from retrieval.fakes import HashEmbedder

DEFAULT_DIM = 48


@dataclass
class EmbeddingsServer:
    default_dim: int = DEFAULT_DIM
    fail_next: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
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

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.fail_next:
            status = self.fail_next.pop(0)
            headers = {"retry-after-ms": "5"} if status == 429 else {}
            code = "rate_limit_exceeded" if status == 429 else "server_error"
            return web.json_response(
                {
                    "error": {
                        "message": f"scripted {status}",
                        "type": code,
                        "param": None,
                        "code": code,
                    }
                },
                status=status,
                headers=headers,
            )
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(t, str) and t for t in inputs)
        ):
            return web.json_response(
                {
                    "error": {
                        "message": "'input' must be a non-empty string or array of non-empty strings",
                        "type": "invalid_request_error",
                        "param": "input",
                        "code": None,
                    }
                },
                status=400,
            )
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
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", ""),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )
