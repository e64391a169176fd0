"""A loopback Discord: the REST routes and a minimal gateway that discord.py's own HTTP and
websocket code talk to. Every request is recorded; interaction payloads are built here too.

Point the library at it with `discord.http.Route.BASE = stub.api` and
`DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(stub.gateway)`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

APP_ID = "900000000000000001"
BOT_ID = APP_ID
GUILD_ID = "800000000000000001"
CHANNEL_ID = "700000000000000001"
USER_ID = "600000000000000001"

_ids = itertools.count(500000000000000001)


def snowflake() -> str:
    return str(next(_ids))


def _user(user_id: str = USER_ID, name: str = "linyuan", bot: bool = False) -> dict[str, Any]:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    json: Any = None
    files: dict[str, bytes] = field(default_factory=dict)


class DiscordStub:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.attachments: dict[str, bytes] = {}
        self.gateway_frames: list[dict[str, Any]] = []
        # path fragment -> retry_after seconds: the next matching request gets one 429.
        self.rate_limit_once: dict[str, float] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.base}/api/v10"

    @property
    def gateway(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    async def start(self) -> None:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_get("/gateway", self._ws)
        app.router.add_get("/cdn/{name}", self._cdn)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._api)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- queries ----------------------------------------------------------------------------

    def find(self, method: str, fragment: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and fragment in c.path]

    async def wait_for(self, method: str, fragment: str, count: int = 1) -> list[Call]:
        for _ in range(500):
            found = self.find(method, fragment)
            if len(found) >= count:
                return found
            await asyncio.sleep(0.01)
        raise AssertionError(f"{method} …{fragment} not seen {count}×; calls: {self.calls}")

    # ---- HTTP -------------------------------------------------------------------------------

    @staticmethod
    def _json(data: Any, status: int = 200) -> web.Response:
        # discord.py checks the header exactly: no "; charset=…"
        return web.Response(
            status=status,
            body=json.dumps(data).encode(),
            headers={"Content-Type": "application/json"},
        )

    async def _cdn(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.calls.append(Call("GET", f"/cdn/{name}", dict(request.query)))
        return web.Response(body=self.attachments.get(name, b""))

    async def _read(self, request: web.Request) -> tuple[Any, dict[str, bytes]]:
        if request.content_type.startswith("multipart/"):
            body: Any = None
            files: dict[str, bytes] = {}
            reader = await request.multipart()
            while True:
                part = await reader.next()
                if part is None:
                    break
                data = await part.read()  # type: ignore[union-attr]
                if part.name == "payload_json":  # type: ignore[union-attr]
                    body = json.loads(data)
                else:
                    files[part.filename or part.name or "?"] = bytes(data)  # type: ignore[union-attr]
            return body, files
        raw = await request.read()
        return (json.loads(raw) if raw else None), {}

    def message(self, content: str = "", **extra: Any) -> dict[str, Any]:
        return {
            "id": snowflake(),
            "channel_id": CHANNEL_ID,
            "type": 0,
            "content": content,
            "author": _user(BOT_ID, "baibao", bot=True),
            "attachments": [],
            "embeds": [],
            "mentions": [],
            "mention_roles": [],
            "mention_everyone": False,
            "pinned": False,
            "tts": False,
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "edited_timestamp": None,
            "flags": 0,
            "components": [],
            **extra,
        }

    async def _api(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body, files = await self._read(request)
        self.calls.append(Call(request.method, path, dict(request.query), body, files))
        method = request.method
        for fragment, retry_after in list(self.rate_limit_once.items()):
            if fragment in path:
                del self.rate_limit_once[fragment]
                response = self._json(
                    {
                        "message": "You are being rate limited.",
                        "retry_after": retry_after,
                        "global": False,
                    },
                    status=429,
                )
                response.headers.update(
                    {
                        "X-RateLimit-Limit": "5",
                        "X-RateLimit-Remaining": "0",
                        "X-RateLimit-Reset-After": str(retry_after),
                        "X-RateLimit-Bucket": "stub-bucket",
                        "X-RateLimit-Scope": "user",
                        "Retry-After": str(retry_after),
                        # discord.py treats a 429 without Via as a Cloudflare ban, not a limit.
                        "Via": "1.1 google",
                    }
                )
                return response
        if path == "/users/@me":
            return self._json(_user(BOT_ID, "baibao", bot=True))
        if path == "/oauth2/applications/@me":
            return self._json(
                {
                    "id": APP_ID,
                    "name": "百宝箱",
                    "description": "",
                    "icon": None,
                    "bot_public": True,
                    "bot_require_code_grant": False,
                    "owner": _user(),
                    "verify_key": "00",
                    "flags": 0,
                    "summary": "",
                    "team": None,
                }
            )
        if path == "/gateway/bot":
            return self._json(
                {
                    "url": self.gateway,
                    "shards": 1,
                    "session_start_limit": {
                        "total": 1000,
                        "remaining": 1000,
                        "reset_after": 0,
                        "max_concurrency": 1,
                    },
                }
            )
        if path == "/gateway":
            return self._json({"url": self.gateway})
        if path.endswith("/commands") and method == "PUT":
            out = []
            for command in body or []:
                out.append(
                    {
                        **command,
                        "id": snowflake(),
                        "application_id": APP_ID,
                        "version": "1",
                        "description": command.get("description", ""),
                    }
                )
            return self._json(out)
        if path.startswith("/interactions/") and path.endswith("/callback"):
            interaction_id = path.split("/")[2]
            data = (body or {}).get("data") or {}
            return self._json(
                {
                    "interaction": {
                        "id": interaction_id,
                        "type": 2,
                        "response_message_loading": body.get("type") == 5,
                        "response_message_ephemeral": bool(data.get("flags", 0) & 64),
                    },
                    "resource": {"type": body.get("type")},
                }
            )
        if path.startswith("/webhooks/"):
            if method == "DELETE":
                return web.Response(status=204)
            payload = body or {}
            return self._json(
                self.message(
                    payload.get("content") or "",
                    flags=payload.get("flags", 0),
                    webhook_id=APP_ID,
                    components=[],
                )
            )
        if path.startswith("/channels/") and path.endswith("/messages") and method == "POST":
            return self._json(self.message((body or {}).get("content") or ""))
        if path.startswith("/channels/") and method == "GET":
            return self._json(channel_payload(path.split("/")[2]))
        return self._json({"message": "404: Not Found", "code": 0}, status=404)

    # ---- gateway ----------------------------------------------------------------------------

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 45000}}))
        seq = 0
        async for msg in ws:
            frame = json.loads(msg.data)
            self.gateway_frames.append(frame)
            if frame.get("op") == 2:  # IDENTIFY
                seq += 1
                ready = {
                    "v": 10,
                    "user": _user(BOT_ID, "baibao", bot=True),
                    "guilds": [],
                    "session_id": "session-1",
                    "resume_gateway_url": self.gateway,
                    "application": {"id": APP_ID, "flags": 0},
                }
                await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": seq, "d": ready}))
            elif frame.get("op") == 1:  # heartbeat
                await ws.send_str(json.dumps({"op": 11}))
        return ws


# ---- interaction payloads -------------------------------------------------------------------


def channel_payload(channel_id: str = CHANNEL_ID) -> dict[str, Any]:
    return {
        "id": channel_id,
        "type": 0,
        "guild_id": GUILD_ID,
        "name": "读经",
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
    }


def _base(
    kind: int,
    data: dict[str, Any],
    *,
    locale: str = "zh-CN",
    permissions: int = 0,
    user_id: str = USER_ID,
    guild: bool = True,
) -> dict[str, Any]:
    interaction_id = snowflake()
    payload: dict[str, Any] = {
        "id": interaction_id,
        "application_id": APP_ID,
        "type": kind,
        "token": f"token-{interaction_id}",
        "version": 1,
        "channel_id": CHANNEL_ID,
        "locale": locale,
        "app_permissions": "0",
        "entitlements": [],
        "attachment_size_limit": 10 * 1024 * 1024,
        "authorizing_integration_owners": {},
        "data": data,
    }
    if guild:
        payload["guild_id"] = GUILD_ID
        payload["guild_locale"] = "zh-CN"
        payload["channel"] = channel_payload()
        payload["member"] = {
            "user": _user(user_id),
            "roles": [],
            "joined_at": "2024-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "flags": 0,
            "permissions": str(permissions),
        }
    else:
        payload["user"] = _user(user_id)
    return payload


def slash(
    name: str,
    options: dict[str, Any] | None = None,
    *,
    sub: str | None = None,
    attachments: dict[str, dict[str, Any]] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """A slash-command interaction: `/name [sub] option:value …`."""
    types = {bool: 5, int: 4, str: 3}
    opts = []
    for key, value in (options or {}).items():
        if isinstance(value, tuple) and value[0] == "attachment":
            opts.append({"name": key, "type": 11, "value": value[1]})
        else:
            opts.append({"name": key, "type": types[type(value)], "value": value})
    if sub is not None:
        opts = [{"name": sub, "type": 1, "options": opts}]
    data: dict[str, Any] = {"id": snowflake(), "name": name, "type": 1, "options": opts}
    if attachments:
        data["resolved"] = {"attachments": attachments}
    return _base(2, data, **kw)


def button_click(
    custom_id: str, buttons: list[tuple[str, str]] | None = None, **kw: Any
) -> dict[str, Any]:
    """A click on `custom_id`; the message carries `buttons` (label, custom_id) as sent."""
    payload = _base(3, {"custom_id": custom_id, "component_type": 2}, **kw)
    payload["message"] = {
        "id": snowflake(),
        "channel_id": CHANNEL_ID,
        "type": 0,
        "content": "投票",
        "author": _user(BOT_ID, "baibao", bot=True),
        "attachments": [],
        "embeds": [],
        "mentions": [],
        "mention_roles": [],
        "mention_everyone": False,
        "pinned": False,
        "tts": False,
        "timestamp": "2024-01-01T00:00:00+00:00",
        "edited_timestamp": None,
        "flags": 0,
        "components": [
            {
                "type": 1,
                "components": [
                    {"type": 2, "style": 2, "label": label, "custom_id": cid}
                    for label, cid in (buttons or [("选择", custom_id)])
                ],
            }
        ],
    }
    return payload


def autocomplete(name: str, option: str, current: str, **kw: Any) -> dict[str, Any]:
    data = {
        "id": snowflake(),
        "name": name,
        "type": 1,
        "options": [{"name": option, "type": 3, "value": current, "focused": True}],
    }
    return _base(4, data, **kw)
