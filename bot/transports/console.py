"""The console transport: a REPL on stdin/stdout that reaches the same router as the chats."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from bot.actor import Actor
from bot.render.console import actions, render
from bot.reply import Attachment, Reply
from bot.router import Router
from bot.transports.base import ChatTransport, Posted
from retrieval.i18n import Lang

PROMPT = "百宝箱> "
_BYE = {"zh": "再见。", "en": "Bye."}
_WELCOME = (
    "百宝箱控制台 · 输入 /help 查看命令，/quit 退出。\n"
    "Baibao console · type /help for commands, /quit to leave."
)


class ConsoleTransport(ChatTransport[None]):
    name = "console"

    def __init__(
        self,
        router: Router,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        lang: Lang = "zh",
        user: str = "console",
        files: Path | None = None,
    ) -> None:
        super().__init__(router)
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._actor = Actor(
            "console", "console", user, user, is_admin=True, lang=lang, kind="console"
        )
        # Pictures (/graph) go to files here; the console prints their paths.
        self._files = files or Path(tempfile.gettempdir()) / "baibao-console"
        self._last_actions: list[str] = []
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        self._write(_WELCOME)

    async def stop(self) -> None:
        self._stopped.set()

    async def send(self, target: Actor, reply: Reply) -> None:
        await self.deliver(target, reply, None)

    async def _post(self, outlet: None, reply: Reply) -> Posted:
        """Printed: nothing on a terminal can be edited later."""
        self._last_actions = actions(reply) or self._last_actions
        self._write(render(reply, reply.lang))
        return Posted()

    async def serve(self) -> None:
        """Read lines until /quit, EOF or stop()."""
        while not self._stopped.is_set():
            self._out.write(PROMPT)
            self._out.flush()
            line = await asyncio.to_thread(self._in.readline)
            if line == "":  # EOF
                break
            line = line.strip()
            if not line:
                continue
            if line in ("/quit", "/exit", "/q"):
                self._write(_BYE[self._actor.lang])
                break
            await self.handle_line(line)

    async def handle_line(self, line: str) -> str:
        if line.startswith("/press"):
            choice = line.removeprefix("/press").strip()
            if choice.isdigit() and 1 <= int(choice) <= len(self._last_actions):
                reply = await self.router.press(self._actor, self._last_actions[int(choice) - 1])
            else:
                reply = await self.router.press(self._actor, "")
        else:
            got = await self.router.handle_text(self._actor, line, progress=self._progress)
            if got is None:
                return ""
            reply = got
        self._last_actions = actions(reply) or self._last_actions
        text = render(reply, reply.lang)
        for attachment in reply.attachments:
            if attachment.mime.startswith("text/"):
                text += f"\n{attachment.data.decode('utf-8', errors='replace')}"
            else:  # a picture on a terminal: written to a file, its path shown
                text += f"\n{self._save(attachment)}"
        self._write(text)
        return text

    async def _progress(self, partial: str) -> None:
        # A terminal shows the final answer; partial text would only be printed twice.
        return None

    def _save(self, attachment: Attachment) -> Path:
        self._files.mkdir(parents=True, exist_ok=True)
        stem, dot, suffix = attachment.filename.rpartition(".")
        fd, name = tempfile.mkstemp(
            prefix=f"{stem or 'file'}-", suffix=dot + suffix, dir=self._files
        )
        with os.fdopen(fd, "wb") as out:
            out.write(attachment.data)
        return Path(name)

    def _write(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()
