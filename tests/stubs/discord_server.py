"""A loopback Discord (aiohttp): the REST API and the gateway websocket that discord.py's own HTTP
and gateway code talk to.

Every Discord end-to-end test runs in SimCord (`tests/discord_sim.py`). This stub is kept only
for what SimCord cannot do:

1. discord.py's own HTTP client and gateway. SimCord replaces `HTTPClient.request`, the webhook
   adapter and the websocket with in-process fakes and logs the client in itself, so a login
   with the token over HTTP, request headers and content types, the gateway handshake (HELLO →
   IDENTIFY with the token → READY, heartbeats) and `DiscordTransport.start()` / `stop()` from
   settings alone (`baibao run`) run only here (`test_discord_stub.py`, `test_run.py`).
2. 429 rate limits. SimCord's `inject_error` raises the error from its fake client, so
   discord.py's own 429 handling (wait `retry_after`, send the same request again) never runs
   there (`rate_limit_once` here).
3. A stale copy of a command. SimCord registers exactly what the bot syncs and its client-side
   option check refuses to send a command without a required option, so Discord's copy of a
   command can never lag the bot's, and the "command was updated" notice
   (`CommandSignatureMismatch`) can be provoked only here.
4. Whether an attachment was downloaded. SimCord serves `Attachment.read()` from an in-memory
   CDN without a record; here every `GET /cdn/…` is a `Call` (an oversized upload must never
   be read).
5. Command registration rules. SimCord's sync accepts any payload; here `PUT …/commands` is
   refused as Discord refuses it: an invalid or duplicate command or option name, a description
   of the wrong length, a required option after an optional one, too many options or choices
   (50035 with the per-field errors).

Fail closed: a request this stub cannot handle (an exception inside it) is answered 500 and
recorded as a refused `Call`, so the fixture fails the test at teardown, like every request
Discord would refuse.

Point the library at it with `discord.http.Route.BASE = server.api` and
`DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(server.gateway)` (the `discord_wire` fixture does).

The gateway speaks the real sequence: HELLO (heartbeat interval) → IDENTIFY (the token is
checked; a sharded client names its shard, which READY says back, and the shard hears only the
guild it owns) → READY → GUILD_CREATE (roles and a channel), heartbeats acknowledged; a test sends an
interaction with `await server.interact(payload)`, which arrives as an `INTERACTION_CREATE`
dispatch with the next sequence number; `await server.post_message(text)` posts a message (in a DM
by default) as a MESSAGE_CREATE dispatch. Member payloads carry role ids and permissions, and the
guild's roles carry names, so permission checks (Manage Server, `NOVEL_ADMIN_ROLE`) are real.

REST requests are checked and refused with Discord's error bodies:

- `Authorization: Bot <token>` on bot routes (401 `{"message": "401: Unauthorized", "code": 0}`);
- the interaction id and token of a callback (10062 "Unknown interaction"); an acknowledgement
  3 s or more after the interaction arrived, by the server's virtual clock (`server.clock`,
  moved by the test: `server.clock.elapse(s)` stands for work that takes time), is 10062 too;
  a second acknowledgement (40060 "Interaction has already been acknowledged."); followups and
  edits of `@original` before the acknowledgement (10015 "Unknown Webhook") or 15 minutes
  after the interaction (50027 "Invalid Webhook Token");
- after a deferral, while the "thinking…" message is loading, the first followup is its answer
  (it edits that message and keeps its visibility, whatever its own flags say); a followup or
  an edit after that loading message was deleted is 10008 "Unknown Message";
- message content over 2,000 characters, embed limits, button/custom_id limits and a custom_id
  used twice in one message (50035 "Invalid Form Body" with the per-field errors);
- command registrations Discord refuses (see 5. above);
- request bodies that are neither `application/json` nor multipart; unknown routes
  (404 `{"message": "404: Not Found", "code": 0}`); unknown channels (10003).

Every request is recorded as a `Call`; `wait_for` waits on a condition, never on time. The
server's own answers carry `Content-Type: application/json` exactly, as discord.py requires.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.stubs.loopback import LoopbackServer

APP_ID = "900000000000000001"
BOT_ID = APP_ID
GUILD_ID = "800000000000000001"
CHANNEL_ID = "700000000000000001"
USER_ID = "600000000000000001"
NOVEL_ROLE_ID = "810000000000000001"
NOVEL_ROLE_NAME = "小说管理员"
MOD_ROLE_ID = "810000000000000002"  # a role that grants Manage Server
TOKEN = "stub-token"

CONTENT_LIMIT = 2000
ACK_WINDOW_S = 3.0  # an interaction must be acknowledged within this (server clock)
TOKEN_LIFETIME_S = 15 * 60  # then its followups and edits, within this
# A command or option name: lowercase where the script has case (Discord's CHAT_INPUT rule).
NAME = re.compile(r"[-_\w]{1,32}")
MANAGE_GUILD = 1 << 5
ADMINISTRATOR = 1 << 3
MESSAGE_CONTENT_INTENT = 1 << 15

_ids = itertools.count(500000000000000001)


def snowflake() -> str:
    return str(next(_ids))


class DiscordError(Exception):
    def __init__(self, status: int, message: str, code: int, errors: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.errors = errors

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors is not None:
            body["errors"] = self.errors
        return body


def not_found() -> DiscordError:
    return DiscordError(404, "404: Not Found", 0)


def invalid_form(errors: dict[str, Any]) -> DiscordError:
    return DiscordError(400, "Invalid Form Body", 50035, errors)


def _field_error(code: str, message: str) -> dict[str, Any]:
    return {"_errors": [{"code": code, "message": message}]}


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    json: Any = None
    files: dict[str, bytes] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    error: Any = None  # Discord's error body, for a refused request
    expected: bool = False  # provoked on purpose (rate limits, expect_errors)
    interaction: str | None = None  # the interaction a callback / webhook request answers


class VirtualClock:
    """The server's time in seconds; only the test moves it (`elapse`): nothing here waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def elapse(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class _Interaction:
    id: str
    token: str
    kind: int
    created: float  # by the server's clock
    acked: int | None = None  # the callback type that acknowledged it
    original: str | None = None  # the message id of @original
    original_flags: int = 0
    loading: bool = False  # deferred: the "thinking…" message awaits its answer
    gone: bool = False  # that loading message was deleted: nothing may follow
    followups: set[str] = field(default_factory=set)


def _user(user_id: str = USER_ID, name: str = "linyuan", bot: bool = False) -> dict[str, Any]:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


def _role(role_id: str, name: str, permissions: int, position: int) -> dict[str, Any]:
    return {
        "id": role_id,
        "name": name,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "position": position,
        "permissions": str(permissions),
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


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


def guild_payload() -> dict[str, Any]:
    return {
        "id": GUILD_ID,
        "name": "读经小组",
        "icon": None,
        "owner_id": "600000000000000999",
        "unavailable": False,
        "member_count": 3,
        "large": False,
        "features": [],
        "emojis": [],
        "stickers": [],
        "roles": [
            _role(GUILD_ID, "@everyone", 0, 0),  # @everyone's id is the guild's
            _role(NOVEL_ROLE_ID, NOVEL_ROLE_NAME, 0, 1),
            _role(MOD_ROLE_ID, "版主", MANAGE_GUILD, 2),
        ],
        "channels": [channel_payload()],
        "threads": [],
        "members": [],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "preferred_locale": "zh-CN",
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "system_channel_flags": 0,
        "afk_timeout": 300,
        "joined_at": "2024-01-01T00:00:00+00:00",
    }


class DiscordServer(LoopbackServer):
    """The REST API, the gateway and the CDN on loopback (`async with` serves them)."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.attachments: dict[str, bytes] = {}
        # message id → (channel id, flags) of what the bot posted, for channel message edits
        self.sent: dict[str, tuple[str, int]] = {}
        self.gateway_frames: list[dict[str, Any]] = []  # what the client sent on the gateway
        # path fragment → retry_after seconds: the next matching request gets one 429.
        self.rate_limit_once: dict[str, float] = {}
        self.channels = {CHANNEL_ID}
        self.clock = VirtualClock()
        self.identified = asyncio.Event()
        self.intents = 0  # the gateway intents the client identified with
        self._interactions: dict[str, _Interaction] = {}
        self._by_token: dict[str, _Interaction] = {}
        self._ws: web.WebSocketResponse | None = None
        self._seq = 0
        self._changed = asyncio.Condition()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.base}/api/v10"

    @property
    def gateway(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/cdn/{name}", self._cdn)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._api)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    async def _stop_serving(self) -> None:
        if self._ws is not None:
            await self._ws.close()

    # ---- what a test does -------------------------------------------------------------------

    def find(self, method: str, fragment: str) -> list[Call]:
        """Successful requests of `method` whose path contains `fragment`, in order."""
        return [
            c for c in self.calls if c.method == method and fragment in c.path and c.status < 300
        ]

    def answers(
        self, payload: dict[str, Any], method: str | None = None, fragment: str = ""
    ) -> list[Call]:
        """The successful callback / webhook requests that answered this interaction."""
        return [
            c
            for c in self.calls
            if c.interaction == payload["id"]
            and c.status < 300
            and (method is None or c.method == method)
            and fragment in c.path
        ]

    async def wait_answers(
        self, payload: dict[str, Any], method: str, fragment: str = "", count: int = 1
    ) -> list[Call]:
        await self.wait_until(lambda: len(self.answers(payload, method, fragment)) >= count)
        return self.answers(payload, method, fragment)

    def errors(self) -> list[Call]:
        return [c for c in self.calls if c.status >= 400]

    def expect_errors(self) -> list[Call]:
        """The refusals so far that the test provoked on purpose."""
        taken = [c for c in self.errors() if not c.expected]
        for call in taken:
            call.expected = True
        return taken

    async def wait_for(
        self, method: str, fragment: str, count: int = 1, where: Callable[[Call], bool] = bool
    ) -> list[Call]:
        def found() -> list[Call]:
            return [c for c in self.find(method, fragment) if where(c)]

        await self.wait_until(lambda: len(found()) >= count)
        return found()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        try:
            async with asyncio.timeout(60), self._changed:  # a hang guard, not a time limit
                await self._changed.wait_for(predicate)
        except TimeoutError:
            raise AssertionError(f"never happened; requests: {self.calls}") from None

    def followups(self) -> list[Call]:
        return self.find("POST", f"/webhooks/{APP_ID}/")

    def contents(self) -> str:
        """Every content the bot posted or edited in, in order, one per line."""
        return "\n".join(
            str(c.json.get("content") or "")
            for c in self.calls
            if c.status < 300 and isinstance(c.json, dict) and c.method in ("POST", "PATCH")
        )

    async def interact(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send an interaction as an INTERACTION_CREATE gateway dispatch; returns it."""
        await self.wait_until(lambda: self._ws is not None and self.identified.is_set())
        interaction = _Interaction(
            payload["id"], payload["token"], payload["type"], created=self.clock.now
        )
        self._interactions[interaction.id] = interaction
        self._by_token[interaction.token] = interaction
        await self._dispatch("INTERACTION_CREATE", payload)
        return payload

    async def post_message(
        self,
        content: str,
        *,
        dm: bool = True,
        user_id: str = USER_ID,
        name: str = "linyuan",
        bot: bool = False,
        channel_id: str | None = None,
    ) -> dict[str, Any]:
        """Someone posts a message: a MESSAGE_CREATE dispatch as Discord sends it, in a DM
        channel with the bot (`dm=True`, a fresh DM channel unless `channel_id`) or in the
        server's channel. As on Discord, a server message reaches a bot without the privileged
        MESSAGE_CONTENT intent with an empty `content` unless it mentions the bot; a DM always
        carries its content. Returns the payload."""
        await self.wait_until(lambda: self._ws is not None and self.identified.is_set())
        message = self._message_object({"content": content}, snowflake())
        message["author"] = _user(user_id, name, bot=bot)
        mentioned = f"<@{BOT_ID}>" in content
        if dm:
            message["channel_id"] = channel_id or snowflake()
            self.channels.add(message["channel_id"])  # the bot may answer in it
        else:
            message["channel_id"] = channel_id or CHANNEL_ID
            message["guild_id"] = GUILD_ID
            message["member"] = {
                "roles": [],
                "joined_at": "2024-01-01T00:00:00+00:00",
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
            if not (self.intents & MESSAGE_CONTENT_INTENT) and not mentioned:
                message["content"] = ""
        if mentioned:
            message["mentions"] = [_user(BOT_ID, "baibao", bot=True)]
        await self._dispatch("MESSAGE_CREATE", message)
        return message

    def posted_in(self, channel_id: str) -> list[str]:
        """The contents the bot POSTed to a channel (not interaction answers), in order."""
        return [
            str((c.json or {}).get("content") or "")
            for c in self.find("POST", f"/channels/{channel_id}/messages")
        ]

    # ---- gateway ----------------------------------------------------------------------------

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        assert self._ws is not None
        self._seq += 1
        await self._ws.send_str(json.dumps({"op": 0, "t": event, "s": self._seq, "d": data}))

    def _crashed(self, call: Call, exc: Exception) -> web.Response:
        """Fail closed: what the stub cannot handle is a refused request the test must see."""
        call.status = 500
        call.error = {"message": f"the stub failed: {exc!r}", "code": 0}
        return self._json(call.error, status=500)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        try:
            await self._serve_gateway(ws)
        except Exception as exc:
            call = Call("GATEWAY", "/gateway", {})
            self.calls.append(call)
            self._crashed(call, exc)
            await self._notify()
            await ws.close(code=4000)
        if self._ws is ws:
            self._ws = None
        return ws

    async def _serve_gateway(self, ws: web.WebSocketResponse) -> None:
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 45000}}))
        async for msg in ws:
            frame = json.loads(msg.data)
            self.gateway_frames.append(frame)
            op = frame.get("op")
            if op == 2:  # IDENTIFY
                self.intents = int(frame.get("d", {}).get("intents") or 0)
                if frame.get("d", {}).get("token") != self.token:
                    await ws.close(code=4004, message=b"Authentication failed.")
                    break
                self._ws = ws
                self._seq = 0
                # A sharded IDENTIFY names [shard, count]; READY says it back, and the shard
                # hears only its own guilds (Discord's rule: (guild id >> 22) % count).
                shard = frame.get("d", {}).get("shard") or [0, 1]
                ours = (int(GUILD_ID) >> 22) % shard[1] == shard[0]
                ready = {
                    "v": 10,
                    "user": _user(BOT_ID, "baibao", bot=True),
                    "guilds": [{"id": GUILD_ID, "unavailable": True}] if ours else [],
                    "session_id": "session-1",
                    "resume_gateway_url": self.gateway,
                    "application": {"id": APP_ID, "flags": 0},
                    "shard": shard,
                }
                await self._dispatch("READY", ready)
                if ours:
                    await self._dispatch("GUILD_CREATE", guild_payload())
                self.identified.set()
                await self._notify()
            elif op == 1:  # heartbeat
                await ws.send_str(json.dumps({"op": 11}))

    # ---- HTTP -------------------------------------------------------------------------------

    @staticmethod
    def _json(data: Any, status: int = 200) -> web.Response:
        # discord.py checks the header exactly: no "; charset=…"
        return web.Response(
            status=status,
            body=json.dumps(data).encode(),
            headers={"Content-Type": "application/json"},
        )

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _unknown(self, request: web.Request) -> web.Response:
        return self._json(not_found().body(), status=404)

    async def _cdn(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        call = Call("GET", f"/cdn/{name}", dict(request.query))
        self.calls.append(call)
        await self._notify()
        if name not in self.attachments:
            call.status = 404
            return web.Response(status=404)
        return web.Response(body=self.attachments[name])

    async def _read(self, request: web.Request) -> tuple[Any, dict[str, bytes]]:
        if request.content_type.startswith("multipart/"):
            body: Any = None
            files: dict[str, bytes] = {}
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                data = await part.read()  # type: ignore[union-attr]
                if part.name == "payload_json":  # type: ignore[union-attr]
                    body = json.loads(data)
                else:
                    files[part.filename or part.name or "?"] = bytes(data)  # type: ignore[union-attr]
            return body, files
        raw = await request.read()
        if not raw:
            return None, {}
        if request.content_type != "application/json":
            raise DiscordError(400, "400: Bad Request", 0)
        return json.loads(raw), {}

    async def _api(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        call = Call(request.method, path, dict(request.query), headers=dict(request.headers))
        self.calls.append(call)
        try:
            call.json, call.files = await self._read(request)
            call.interaction = self._interaction_of(path)
            limited = self._rate_limited(path)
            if limited is not None:
                call.status, call.expected = 429, True
                return limited
            result, status = self._route(request.method, path, call)
        except DiscordError as err:
            call.status, call.error = err.status, err.body()
            return self._json(err.body(), status=err.status)
        except Exception as exc:
            return self._crashed(call, exc)
        finally:
            await self._notify()
        call.status = status
        if status == 204:
            return web.Response(status=204)
        return self._json(result, status=status)

    def _interaction_of(self, path: str) -> str | None:
        parts = path.strip("/").split("/")
        if parts[0] == "interactions" and len(parts) > 1:
            return parts[1]
        if parts[0] == "webhooks" and len(parts) > 2 and parts[2] in self._by_token:
            return self._by_token[parts[2]].id
        return None

    def _rate_limited(self, path: str) -> web.Response | None:
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
        return None

    def _authorized(self, call: Call) -> None:
        if call.headers.get("Authorization") != f"Bot {self.token}":
            raise DiscordError(401, "401: Unauthorized", 0)

    def _route(self, method: str, path: str, call: Call) -> tuple[Any, int]:
        parts = path.strip("/").split("/")
        if parts[0] == "interactions" and len(parts) == 4 and parts[3] == "callback":
            return self._callback(parts[1], parts[2], call)
        if parts[0] == "webhooks":
            return self._webhook(method, parts[1:], call)
        if not self._known(method, path, parts):
            raise not_found()
        self._authorized(call)
        if path == "/users/@me" and method == "GET":
            return _user(BOT_ID, "baibao", bot=True), 200
        if path == "/oauth2/applications/@me" and method == "GET":
            return {
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
            }, 200
        if path in ("/gateway/bot", "/gateway") and method == "GET":
            return {
                "url": self.gateway,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 1000,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }, 200
        if parts[0] == "applications" and parts[-1] == "commands" and method == "PUT":
            if parts[1] != APP_ID:
                raise DiscordError(403, "Missing Access", 50001)
            refused = command_errors(call.json)
            if refused:
                raise invalid_form(refused)
            return [
                {**c, "id": snowflake(), "application_id": APP_ID, "version": "1"}
                for c in call.json or []
            ], 200
        if parts[0] == "channels" and len(parts) >= 2:
            if parts[1] not in self.channels:
                raise DiscordError(404, "Unknown Channel", 10003)
            if len(parts) == 2 and method == "GET":
                return channel_payload(parts[1]), 200
            if parts[2:] == ["messages"] and method == "POST":
                return self._message(call.json or {}, call.files, channel=parts[1]), 200
            if len(parts) == 4 and parts[2] == "messages" and method == "PATCH":
                # The bot edits its own message; an ephemeral one does not exist in the channel.
                posted = self.sent.get(parts[3])
                if posted is None or posted[0] != parts[1] or posted[1] & 64:
                    raise DiscordError(404, "Unknown Message", 10008)
                body = call.json or {}
                self._validate_message(body)
                return self._message_object(body, parts[3], channel=parts[1]), 200
        raise not_found()

    @staticmethod
    def _known(method: str, path: str, parts: list[str]) -> bool:
        return (
            (method == "GET" and path in ("/users/@me", "/oauth2/applications/@me"))
            or (method == "GET" and path in ("/gateway/bot", "/gateway"))
            or (method == "PUT" and parts[0] == "applications" and parts[-1] == "commands")
            or (method == "GET" and parts[0] == "channels" and len(parts) == 2)
            or (method == "POST" and parts[0] == "channels" and parts[2:] == ["messages"])
            or (method == "PATCH" and parts[0] == "channels" and len(parts) == 4)
        )

    def _callback(self, interaction_id: str, token: str, call: Call) -> tuple[Any, int]:
        interaction = self._interactions.get(interaction_id)
        if interaction is None or interaction.token != token:
            raise DiscordError(404, "Unknown interaction", 10062)
        if interaction.acked is not None:
            raise DiscordError(400, "Interaction has already been acknowledged.", 40060)
        if self.clock.now - interaction.created >= ACK_WINDOW_S:  # too late: Discord forgot it
            raise DiscordError(404, "Unknown interaction", 10062)
        body = call.json or {}
        kind = body.get("type")
        allowed = {2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}[interaction.kind]
        if kind not in allowed:
            raise invalid_form({"type": _field_error("INTERACTION_RESPONSE_TYPE_INVALID", "bad")})
        data = body.get("data") or {}
        if kind in (4, 7):
            self._validate_message(data)
        if kind == 8:
            choices = data.get("choices", [])
            if len(choices) > 25:
                raise invalid_form(
                    {
                        "data": {
                            "choices": _field_error(
                                "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                            )
                        }
                    }
                )
        interaction.acked = kind
        if kind in (4, 5):
            interaction.original = snowflake()
            interaction.original_flags = int(data.get("flags") or 0)
            interaction.loading = kind == 5
            self.sent[interaction.original] = (CHANNEL_ID, interaction.original_flags)
        response: dict[str, Any] = {
            "interaction": {
                "id": interaction_id,
                "type": interaction.kind,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(data.get("flags", 0) & 64),
            }
        }
        if call.query.get("with_response") in ("True", "true", "1"):
            resource: dict[str, Any] = {"type": kind}
            if kind in (4, 5):
                resource["message"] = self._message_object(data, interaction.original)
            response["resource"] = resource
            return response, 200
        return None, 204

    def _webhook(self, method: str, parts: list[str], call: Call) -> tuple[Any, int]:
        if len(parts) < 2 or parts[0] != APP_ID or parts[1] not in self._by_token:
            raise DiscordError(404, "Unknown Webhook", 10015)
        interaction = self._by_token[parts[1]]
        if interaction.acked is None:
            raise DiscordError(404, "Unknown Webhook", 10015)
        if self.clock.now - interaction.created >= TOKEN_LIFETIME_S:
            raise DiscordError(401, "Invalid Webhook Token", 50027)
        if interaction.gone:  # the loading message was deleted: nothing can answer it now
            raise DiscordError(404, "Unknown Message", 10008)
        rest = parts[2:]
        if not rest and method == "POST":  # a followup
            if interaction.loading:  # the answer to "thinking…": that message, as it was sent
                return self._answer_loading(interaction, call), 200
            message = self._message(call.json or {}, call.files, webhook=True)
            interaction.followups.add(message["id"])
            return message, 200
        if len(rest) == 2 and rest[0] == "messages":
            target = rest[1]
            if target == "@original":
                if interaction.original is None and interaction.acked not in (6, 7):
                    raise DiscordError(404, "Unknown Message", 10008)
            elif target not in interaction.followups:
                raise DiscordError(404, "Unknown Message", 10008)
            if method == "PATCH":
                body = call.json or {}
                self._validate_message(body)
                if target == "@original":
                    interaction.loading = False
                return self._message_object(body, interaction.original or snowflake()), 200
            if method == "DELETE":
                if target == "@original":
                    interaction.gone = interaction.loading
                    interaction.original = None
                else:
                    interaction.followups.discard(target)
                return None, 204
            if method == "GET":
                return self._message_object({}, interaction.original or target), 200
        raise not_found()

    def _answer_loading(self, interaction: _Interaction, call: Call) -> dict[str, Any]:
        """The first followup after a deferral edits the loading message; that message keeps
        the visibility the deferral gave it (discord-api-docs #2742)."""
        body = dict(call.json or {})
        self._validate_message(body)
        if not (body.get("content") or body.get("embeds") or call.files or body.get("components")):
            raise DiscordError(400, "Cannot send an empty message", 50006)
        interaction.loading = False
        body["flags"] = interaction.original_flags
        message = self._message_object(body, interaction.original)
        message["webhook_id"] = APP_ID
        return message

    # ---- messages ---------------------------------------------------------------------------

    @staticmethod
    def _validate_message(body: dict[str, Any]) -> None:
        errors: dict[str, Any] = {}
        content = body.get("content")
        if content is not None and len(str(content)) > CONTENT_LIMIT:
            errors["content"] = _field_error(
                "BASE_TYPE_MAX_LENGTH", f"Must be {CONTENT_LIMIT} or fewer in length."
            )
        embeds = body.get("embeds") or []
        if len(embeds) > 10:
            errors["embeds"] = _field_error(
                "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."
            )
        total = 0
        for i, embed in enumerate(embeds):
            limits = {"title": 256, "description": 4096}
            for key, limit in limits.items():
                size = len(str(embed.get(key) or ""))
                total += size
                if size > limit:
                    errors.setdefault("embeds", {}).setdefault(str(i), {})[key] = _field_error(
                        "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length."
                    )
            fields = embed.get("fields") or []
            if len(fields) > 25:
                errors.setdefault("embeds", {}).setdefault(str(i), {})["fields"] = _field_error(
                    "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            for j, fld in enumerate(fields):
                for key, limit in (("name", 256), ("value", 1024)):
                    size = len(str(fld.get(key) or ""))
                    total += size
                    if size > limit or size == 0:
                        errors.setdefault("embeds", {}).setdefault(str(i), {}).setdefault(
                            "fields", {}
                        ).setdefault(str(j), {})[key] = _field_error(
                            "BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {limit} in length."
                        )
            footer = len(str((embed.get("footer") or {}).get("text") or ""))
            author = len(str((embed.get("author") or {}).get("name") or ""))
            total += footer + author
            if footer > 2048 or author > 256:
                errors.setdefault("embeds", {}).setdefault(str(i), {})["footer"] = _field_error(
                    "BASE_TYPE_MAX_LENGTH", "Must be 2048 or fewer in length."
                )
        if total > 6000:
            errors.setdefault("embeds", {})["_errors"] = [
                {
                    "code": "MAX_EMBED_SIZE_EXCEEDED",
                    "message": "Embed size exceeds maximum size of 6000",
                }
            ]
        rows = body.get("components") or []
        if len(rows) > 5:
            errors["components"] = _field_error(
                "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length."
            )
        custom_ids: set[str] = set()
        for r, row in enumerate(rows):
            buttons = row.get("components") or []
            if len(buttons) > 5:
                errors.setdefault("components", {})[str(r)] = _field_error(
                    "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length."
                )
            for b, button in enumerate(buttons):
                custom_id = str(button.get("custom_id") or "")
                label = str(button.get("label") or "")
                if button.get("style") != 5 and not 1 <= len(custom_id) <= 100:
                    errors.setdefault("components", {}).setdefault(str(r), {}).setdefault(
                        "components", {}
                    ).setdefault(str(b), {})["custom_id"] = _field_error(
                        "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                    )
                if custom_id and custom_id in custom_ids:
                    errors.setdefault("components", {}).setdefault(str(r), {}).setdefault(
                        "components", {}
                    ).setdefault(str(b), {})["custom_id"] = _field_error(
                        "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated"
                    )
                custom_ids.add(custom_id)
                if len(label) > 80:
                    errors.setdefault("components", {}).setdefault(str(r), {}).setdefault(
                        "components", {}
                    ).setdefault(str(b), {})["label"] = _field_error(
                        "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length."
                    )
        if errors:
            raise invalid_form(errors)

    def _message(
        self,
        body: dict[str, Any],
        files: dict[str, bytes],
        *,
        webhook: bool = False,
        channel: str = CHANNEL_ID,
    ) -> dict[str, Any]:
        self._validate_message(body)
        if not (body.get("content") or body.get("embeds") or files or body.get("components")):
            raise DiscordError(400, "Cannot send an empty message", 50006)
        message = self._message_object(body, snowflake(), channel=channel)
        if webhook:
            message["webhook_id"] = APP_ID
        self.sent[message["id"]] = (channel, int(body.get("flags") or 0))
        return message

    @staticmethod
    def _message_object(
        body: dict[str, Any], message_id: str | None, channel: str = CHANNEL_ID
    ) -> dict[str, Any]:
        return {
            "id": message_id or snowflake(),
            "channel_id": channel,
            "type": 0,
            "content": body.get("content") or "",
            "author": _user(BOT_ID, "baibao", bot=True),
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "mentions": [],
            "mention_roles": [],
            "mention_everyone": False,
            "pinned": False,
            "tts": False,
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "edited_timestamp": None,
            "flags": body.get("flags", 0),
            "components": [],
        }


# ---- command registration ---------------------------------------------------------------------


def command_errors(commands: Any) -> dict[str, Any]:
    """What Discord says about a bulk command registration (`PUT …/commands`): {} when it
    accepts it, else the per-field errors of its 50035 answer."""
    if not isinstance(commands, list):
        return {"_errors": [{"code": "LIST_TYPE_CONVERT", "message": "Must be a list."}]}
    errors: dict[str, Any] = {}
    seen: set[str] = set()
    for i, command in enumerate(commands):
        found = _option_errors(command)
        name = str(command.get("name", ""))
        if name in seen:
            found["name"] = _field_error(
                "APPLICATION_COMMANDS_DUPLICATE_NAME",
                f"Application command names must be unique: {name}",
            )
        seen.add(name)
        if found:
            errors[str(i)] = found
    return errors


def _option_errors(option: dict[str, Any]) -> dict[str, Any]:
    """One command or option (type 1/2 options nest further), checked as Discord checks it."""
    errors: dict[str, Any] = {}
    name = str(option.get("name", ""))
    if not NAME.fullmatch(name) or name != name.lower():
        errors["name"] = _field_error("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
    if not 1 <= len(str(option.get("description", ""))) <= 100:
        errors["description"] = _field_error(
            "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
        )
    choices = option.get("choices") or []
    if len(choices) > 25:
        errors["choices"] = _field_error("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
    options = option.get("options") or []
    if not options:
        return errors
    nested: dict[str, Any] = {}
    if len(options) > 25:
        nested["_errors"] = [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 25 or fewer in length."}
        ]
    names = [str(o.get("name", "")) for o in options]
    if len(set(names)) != len(names):
        nested.setdefault("_errors", []).append(
            {
                "code": "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS",
                "message": "Option names must be unique",
            }
        )
    required = [bool(o.get("required")) for o in options if o.get("type") not in (1, 2)]
    if any(later and not earlier for earlier, later in itertools.pairwise(required)):
        nested.setdefault("_errors", []).append(
            {
                "code": "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                "message": "Required options must be placed before non-required options",
            }
        )
    for j, child in enumerate(options):
        found = _option_errors(child)
        if found:
            nested[str(j)] = found
    if nested:
        errors["options"] = nested
    return errors


# ---- interaction payloads -------------------------------------------------------------------


def _base(
    kind: int,
    data: dict[str, Any],
    *,
    locale: str = "zh-CN",
    permissions: int | None = None,
    roles: tuple[str, ...] = (),
    user_id: str = USER_ID,
    guild: bool = True,
) -> dict[str, Any]:
    """`permissions` (the member's resolved permissions in the channel) defaults to what the
    `roles` grant, as Discord computes it; pass it to model channel overwrites."""
    if permissions is None:
        granted = {role["id"]: int(role["permissions"]) for role in guild_payload()["roles"]}
        permissions = 0
        for role_id in roles:
            permissions |= granted[role_id]
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
            "roles": list(roles),
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


def attachment(
    server: DiscordServer, filename: str, data: bytes, size: int | None = None
) -> tuple[str, dict[str, Any]]:
    """Register an upload on the CDN; returns (id, the `resolved.attachments` entry)."""
    att_id = snowflake()
    server.attachments[filename] = data
    return att_id, {
        att_id: {
            "id": att_id,
            "filename": filename,
            "size": len(data) if size is None else size,
            "url": f"{server.base}/cdn/{filename}",
            "proxy_url": f"{server.base}/cdn/{filename}",
            "content_type": "application/json" if filename.endswith(".json") else "text/plain",
        }
    }
