"""The console transport: a REPL on stdin/stdout that reaches the same router as the chats.

A terminal cannot attach a file, so a word `@path` stands for one: `/chapter submit
@第三章.txt`, `/chapter revise 3 @第三章.txt`, `/novel blueprint set @世界.json`, `/ingest
@书.pdf 书名 | 作者`. Only for a command that takes a file (where a chat would attach it), one
a line, anywhere after the command; quote a path with spaces (`@"我的 书.pdf"`); `@@word` is
the text `@word`. The file then goes through the router's checks like any upload (its type,
its size); a missing, unreadable or non-file path is refused here, before anything runs.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from bot.actor import Actor
from bot.i18n import T
from bot.registry import Upload, UploadFailed
from bot.render.console import actions, render
from bot.reply import Attachment, Posted, Reply
from bot.router import Invocation, Line, Press, Router
from bot.transports.base import ChatTransport
from kernel.i18n import Lang

PROMPT = "百宝箱> "
_BYE = {"zh": "再见。", "en": "Bye."}
_WELCOME = (
    "百宝箱控制台 · 输入 /help 查看命令，/quit 退出；文件写成 @路径，例如 /chapter submit @第3章.txt。\n"
    "Baibao console · type /help for commands, /quit to leave; a file is @path, e.g."
    " /chapter submit @chapter3.txt."
)
# `@path` as a word of its own (quoted when it has spaces); `@@` escapes it.
_AT_PATH = re.compile(r"""(?<!\S)@(?!@)(?:"([^"]+)"|'([^']+)'|(\S+))""")
_ESCAPED_AT = re.compile(r"(?<!\S)@@")


class LocalFileError(Exception):
    """A `@path` the console cannot attach: the catalogue key and its fields."""

    def __init__(self, key: str, **fields: object) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields


def local_upload(written: str, base: Path | None = None) -> Upload:
    """The file `written` (relative to `base`, else the working directory; `~` expanded) as an
    upload: its name and size now, its bytes when the router reads them. `LocalFileError` when
    it is missing, not a file, or cannot be read."""
    path = Path(os.path.expanduser(written))
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        info = path.stat()
    except FileNotFoundError:
        raise LocalFileError("local_file_missing", path=written) from None
    except OSError as err:
        raise LocalFileError("local_file_unreadable", path=written, why=err.strerror) from None
    if not stat.S_ISREG(info.st_mode):
        raise LocalFileError("local_file_not_file", path=written)
    if not os.access(path, os.R_OK):
        raise LocalFileError("local_file_unreadable", path=written, why=os.strerror(13))

    async def read() -> bytes:
        try:
            return await asyncio.to_thread(path.read_bytes)
        except OSError as err:
            raise UploadFailed(f"{written}: {err.strerror}") from err

    return Upload(path.name, info.st_size, read)


def split_local_file(line: str, base: Path | None = None) -> tuple[str, Upload | None]:
    """The line without its `@path` word (and with `@@` read as `@`), and the file it named;
    `LocalFileError` for two files or one the console cannot attach."""
    found = list(_AT_PATH.finditer(line))
    if len(found) > 1:
        raise LocalFileError("local_file_two")
    upload = None
    if found:
        match = found[0]
        upload = local_upload(next(g for g in match.groups() if g), base)
        line = (line[: match.start()] + line[match.end() :]).strip()
    return _ESCAPED_AT.sub("@", line), upload


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
        cwd: Path | None = None,
    ) -> None:
        super().__init__(router)
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._actor = Actor(
            "console", "console", user, user, is_admin=True, lang=lang, kind="console"
        )
        # Pictures (/graph) go to files here; the console prints their paths.
        self._files = files or Path(tempfile.gettempdir()) / "baibao-console"
        self._cwd = cwd  # where a relative `@path` is read from (None: the working directory)
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
        upload: Upload | None = None
        if line.startswith("/press"):
            choice = line.removeprefix("/press").strip()
            chosen = choice.isdigit() and 1 <= int(choice) <= len(self._last_actions)
            said = Press(self._last_actions[int(choice) - 1] if chosen else "")
        elif await self.router.takes_file(self._actor, line):
            try:
                text, upload = split_local_file(line, self._cwd)
            except LocalFileError as err:
                lang = (await self.router.in_chat_language(self._actor)).lang
                return self._print(
                    Reply.error(T(lang, err.key, **err.fields), lang=lang), whole=True
                )
            said = Line(text)
        printed: list[str] = []

        async def reply_to(reply: Reply) -> Posted:
            printed.append(self._print(reply, whole=True))
            return Posted()

        await self.router.handle(
            Invocation(self._actor, said, upload=upload, progress=self._progress, reply_to=reply_to)
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
