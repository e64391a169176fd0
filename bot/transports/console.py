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
from bot.reply import Attachment, Posted, Reply
from bot.router import Invocation, Line, Press, Router
from bot.transports.base import ChatTransport
from kernel.i18n import Lang

PROMPT = "百宝箱> "
_BYE = {"zh": "再见。", "en": "Bye."}
_WELCOME = (
    "百宝箱控制台 · 输入 /help 查看命令，/quit 退出。\n"
    "Baibao console · type /help for commands, /quit to leave."
)


class ConsoleTransport(ChatTransport[bool]):
    """The outlet is whether the reply answers the operator's own line (its text attachments
    are printed whole, a picture's file path shown) or was sent unasked (named only)."""

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
        self._actor = Actor("console", "console", user, user, is_admin=True, lang=lang)
        # Pictures (/graph) go to files here; the console prints their paths.
        self._files = files or Path(tempfile.gettempdir()) / "baibao-console"
        self._last_actions: list[str] = []
        self._stopped = asyncio.Event()

    async def _start(self) -> None:
        self._write(_WELCOME)

    async def stop(self) -> None:
        self._stopped.set()

    async def send(self, target: Actor, reply: Reply) -> Posted:
        return await self.post(False, reply)

    async def post(self, outlet: bool, reply: Reply) -> Posted:
        """Printed: nothing on a terminal can be edited later."""
        self._print(reply, whole=outlet)
        return Posted()

    def _print(self, reply: Reply, *, whole: bool) -> str:
        self._last_actions = actions(reply) or self._last_actions
        text = render(reply, reply.lang)
        if whole:
            text += self._attached(reply)
        self._write(text)
        return text

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
        """One line of the operator's, answered; what was printed ("" when nothing was)."""
        said: Line | Press = Line(line)
        if line.startswith("/press"):
            choice = line.removeprefix("/press").strip()
            chosen = choice.isdigit() and 1 <= int(choice) <= len(self._last_actions)
            said = Press(self._last_actions[int(choice) - 1] if chosen else "")
        printed: list[str] = []

        async def reply_to(reply: Reply) -> Posted:
            printed.append(self._print(reply, whole=True))
            return Posted()

        await self.router.handle(
            Invocation(self._actor, said, progress=self._progress, reply_to=reply_to)
        )
        return "".join(printed)

    def _attached(self, reply: Reply) -> str:
        text = ""
        for attachment in reply.attachments:
            if attachment.mime.startswith("text/"):
                text += f"\n{attachment.data.decode('utf-8', errors='replace')}"
            else:  # a picture on a terminal: written to a file, its path shown
                text += f"\n{self._save(attachment)}"
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
