"""A Bot API stand-in for python-telegram-bot: a `BaseRequest` whose `do_request` answers the
methods the transport uses, records every call, and can be told to fail (e.g. flood control).

PTB's own code builds the requests (parameters, files, parse modes) and parses the answers, so
the tests exercise the library, not a mock of it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from telegram.request import BaseRequest, RequestData

BOT_ID = 777000
BOT_USERNAME = "baibao_bot"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    files: dict[str, Any] = field(default_factory=dict)


class TelegramStub(BaseRequest):
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.files: dict[str, bytes] = {}  # file_id -> content, for getFile + download
        self.member_status: dict[tuple[int, int], str] = {}
        # method -> list of queued failures: (status, body) answered before the normal result
        self.failures: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self._ids = itertools.count(1000)
        self._polls = itertools.count(1)

    # --- BaseRequest -------------------------------------------------------------------------
    @property
    def read_timeout(self) -> float | None:
        return 5.0

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = None,
        write_timeout: Any = None,
        connect_timeout: Any = None,
        pool_timeout: Any = None,
    ) -> tuple[int, bytes]:
        if "/file/bot" in url:  # a file download
            file_path = url.rsplit("/", 1)[-1]
            return 200, self.files.get(file_path, b"")
        name = url.rsplit("/", 1)[-1]
        params = dict(request_data.parameters) if request_data else {}
        files = dict(request_data.multipart_data) if request_data else {}
        self.calls.append(Call(name, params, files))
        queued = self.failures.get(name)
        if queued:
            status, body = queued.pop(0)
            return status, json.dumps(body).encode()
        if name == "getUpdates":
            await asyncio.sleep(0.05)
        result = self._answer(name, params)
        return 200, json.dumps({"ok": True, "result": result}).encode()

    # --- helpers -----------------------------------------------------------------------------
    def flood(self, method: str, retry_after: int = 1) -> None:
        self.failures.setdefault(method, []).append(
            (
                429,
                {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {retry_after}",
                    "parameters": {"retry_after": retry_after},
                },
            )
        )

    def named(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def _message(self, params: dict[str, Any], **extra: Any) -> dict[str, Any]:
        chat_id = int(params.get("chat_id", 0))
        return {
            "message_id": next(self._ids),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "百宝箱"},
            **extra,
        }

    def _answer(self, name: str, params: dict[str, Any]) -> Any:
        if name == "getMe":
            return {
                "id": BOT_ID,
                "is_bot": True,
                "first_name": "百宝箱",
                "username": BOT_USERNAME,
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        if name == "getUpdates":
            return []
        if name in ("sendMessage", "editMessageText"):
            return self._message(params, text=str(params.get("text", "")))
        if name == "sendDocument":
            return self._message(
                params, document={"file_id": "doc1", "file_unique_id": "u-doc1", "file_size": 1}
            )
        if name == "sendPhoto":
            size = {"file_id": "ph1", "file_unique_id": "u-ph1", "width": 1, "height": 1}
            return self._message(params, photo=[size])
        if name == "sendPoll":
            options = params.get("options", [])
            poll_id = f"poll{next(self._polls)}"
            return self._message(
                params,
                poll={
                    "id": poll_id,
                    "question": params.get("question", ""),
                    "options": [
                        {"text": o, "voter_count": 0, "persistent_id": f"p{i}"}
                        for i, o in enumerate(options)
                    ],
                    "total_voter_count": 0,
                    "is_closed": False,
                    "is_anonymous": bool(params.get("is_anonymous", True)),
                    "type": "regular",
                    "allows_multiple_answers": False,
                    "allows_revoting": True,
                    "members_only": False,
                },
            )
        if name == "getChatAdministrators":
            chat_id = int(params["chat_id"])
            return [
                self._member(user_id, status)
                for (chat, user_id), status in self.member_status.items()
                if chat == chat_id and status in ("creator", "administrator")
            ]
        if name == "getChatMember":
            key = (int(params["chat_id"]), int(params["user_id"]))
            return self._member(key[1], self.member_status.get(key, "member"))
        if name == "getFile":
            file_id = str(params["file_id"])
            return {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "file_size": len(self.files.get(file_id, b"")),
                "file_path": file_id,
            }
        return True  # setMyCommands, answerCallbackQuery, sendChatAction, deleteWebhook …

    @staticmethod
    def _member(user_id: int, status: str) -> dict[str, Any]:
        user = {"id": user_id, "is_bot": False, "first_name": "U"}
        member: dict[str, Any] = {"status": status, "user": user}
        if status == "administrator":
            member.update(
                {
                    "can_be_edited": False,
                    "is_anonymous": False,
                    "can_manage_chat": True,
                    "can_delete_messages": True,
                    "can_manage_video_chats": True,
                    "can_restrict_members": True,
                    "can_promote_members": False,
                    "can_change_info": True,
                    "can_invite_users": True,
                    "can_post_stories": False,
                    "can_edit_stories": False,
                    "can_delete_stories": False,
                }
            )
        elif status == "creator":
            member["is_anonymous"] = False
        return member


# ---- update builders ------------------------------------------------------------------------

_update_ids = itertools.count(1)


def _user(user_id: int, lang: str = "zh-hans", name: str = "林远") -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": name, "language_code": lang}


def _chat(chat_id: int) -> dict[str, Any]:
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": "林远"}
    return {"id": chat_id, "type": "supergroup", "title": "读经小组"}


def command_update(
    text: str, *, chat_id: int = 42, user_id: int = 42, lang: str = "zh-hans"
) -> dict[str, Any]:
    """A text message; a leading `/word` is marked as a bot command, as Telegram does."""
    head = text.split(" ", 1)[0]
    message: dict[str, Any] = {
        "message_id": next(_update_ids),
        "date": int(time.time()),
        "chat": _chat(chat_id),
        "from": _user(user_id, lang),
        "text": text,
    }
    if head.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(head)}]
    return {"update_id": next(_update_ids), "message": message}


def document_update(
    caption: str,
    file_id: str,
    size: int,
    *,
    chat_id: int = 42,
    user_id: int = 42,
    file_name: str = "blueprint.json",
    lang: str = "zh-hans",
) -> dict[str, Any]:
    return {
        "update_id": next(_update_ids),
        "message": {
            "message_id": next(_update_ids),
            "date": int(time.time()),
            "chat": _chat(chat_id),
            "from": _user(user_id, lang),
            "caption": caption,
            "document": {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "file_name": file_name,
                "mime_type": "application/json",
                "file_size": size,
            },
        },
    }


def callback_update(data: str, *, chat_id: int = 42, user_id: int = 42) -> dict[str, Any]:
    return {
        "update_id": next(_update_ids),
        "callback_query": {
            "id": f"cq{next(_update_ids)}",
            "from": _user(user_id),
            "chat_instance": "ci1",
            "data": data,
            "message": {
                "message_id": 5,
                "date": int(time.time()),
                "chat": _chat(chat_id),
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "百宝箱"},
                "text": "选择",
            },
        },
    }


def poll_answer_update(poll_id: str, option: int, *, user_id: int = 42) -> dict[str, Any]:
    return {
        "update_id": next(_update_ids),
        "poll_answer": {
            "poll_id": poll_id,
            "user": _user(user_id),
            "option_ids": [option],
            "option_persistent_ids": [f"p{option}"],
        },
    }


Predicate = Callable[[], bool]
