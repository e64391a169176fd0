"""Secrets never reach logs, replies, user-visible errors or the Docker image."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.logs import configure_logging
from bot.router import Invocation, Line
from retrieval.fakes import HashEmbedder
from tests.reliability.helpers.stack import DOC, settings
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_error

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-SECRET-4242-abcdef"
TG_TOKEN = "123456789:AAH-SECRET-telegram-token"
QDRANT_KEY = "qk-SECRET-9999"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Everything the process logs, through configure_logging's scrubbing handler."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    configure_logging("DEBUG", [KEY, TG_TOKEN, QDRANT_KEY])
    stream = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    yield stream
    root.handlers[:], _ = saved
    root.setLevel(saved[1])


async def test_key_echoed_by_a_401_never_leaks(tmp_path: Path, captured: io.StringIO) -> None:
    async with LLMStubServer() as server:
        s = settings(
            tmp_path / "data",
            llm_provider="openai",
            llm_base_url=server.openai_url,
            openai_api_key=KEY,
            telegram_token=TG_TOKEN,
            llm_model="stub-model",
        )
        assert set(s.secrets()) >= {KEY, TG_TOKEN}
        body = openai_error("invalid_api_key", f"Incorrect API key provided: {KEY}.")
        async with App(s, embedder=HashEmbedder(64)) as app:
            from ingest.pipeline import Pipeline

            (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
            await Pipeline(app.indexer).ingest_paths([tmp_path / "doc.md"])
            server.openai.append(Scripted.error(401, body))
            reply = await app.router.answer(
                Invocation(Actor("telegram", "g", "u"), Line("/ask 神圣的分赐？"))
            )
            assert reply is not None
            shown = reply.plain() + repr(reply)
            server.openai.append(Scripted.error(401, body))
            admin = Actor("telegram", "g", "a", is_admin=True)
            for line in ("/chapter next", "/chapter propose 夜渡", "/chapter close"):
                await app.router.answer(Invocation(admin, Line(line)))
            failed = await app.router.answer(Invocation(admin, Line("/chapter close")))
            assert failed is not None
            shown += failed.plain()
    # the SDK did send the key (so the test is meaningful) …
    assert any(KEY in r.headers.get("Authorization", "") for r in server.received)
    logged = captured.getvalue()
    assert "401" in logged or "unavailable" in logged, logged[-2000:]
    for secret in (KEY, TG_TOKEN):
        assert secret not in shown
        assert secret not in logged


def test_transport_errors_with_the_token_in_the_url_are_scrubbed(captured: io.StringIO) -> None:
    import httpx
    from telegram.error import NetworkError

    url = f"https://api.telegram.org/bot{TG_TOKEN}/getUpdates"
    log = logging.getLogger("telegram.ext.Updater")
    try:
        raise NetworkError(f"httpx.ConnectError: {url}")
    except NetworkError:
        log.exception("Exception happened while polling for updates.")
    try:
        httpx.get(url.replace("https://api.telegram.org", "http://127.0.0.1:9"), timeout=0.5)
    except httpx.HTTPError as err:
        logging.getLogger("bot.transports.telegram").error("polling failed: %s (%r)", err, err)
    logging.getLogger("qdrant").warning("connecting with api-key %s", QDRANT_KEY)
    logged = captured.getvalue()
    assert "polling" in logged and "***" in logged
    for secret in (TG_TOKEN, QDRANT_KEY):
        assert secret not in logged


def test_docker_image_gets_no_env_file() -> None:
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ".env" in ignore
    dockerfile = (ROOT / "Dockerfile").read_text()
    for line in dockerfile.splitlines():
        words = line.split()
        if words and words[0].upper() in ("COPY", "ADD"):
            assert not any(w.startswith(".env") for w in words[1:]), line
            assert words[1:2] != ["."], f"copies the whole context: {line}"


def test_docker_image_can_read_scanned_pages() -> None:
    """README: `baibao ingest --ocr` works inside the image (tesseract + chi_sim / chi_tra)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = [line for line in dockerfile.splitlines() if "tesseract-ocr" in line]
    assert installs, "the image installs no tesseract"
    for package in ("tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra"):
        assert package in dockerfile, package
