"""Suite-wide fixtures. Every test runs with the network closed except loopback."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest


class NetworkBlocked(RuntimeError):
    pass


def _allowed(address: object) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: object) -> None:
        if not _allowed(address):
            raise NetworkBlocked(f"non-loopback connection attempted in a test: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    def connect_ex(self: socket.socket, address: object) -> int:
        if not _allowed(address):
            raise NetworkBlocked(f"non-loopback connection attempted in a test: {address!r}")
        return real_connect_ex(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's .env or tokens; each gets its own data directory."""
    import os

    for key in list(os.environ):
        if key.startswith(
            (
                "DISCORD_",
                "TELEGRAM_",
                "ANTHROPIC_",
                "OPENAI_",
                "LLM_",
                "EMBEDDING_",
                "QDRANT_",
                "BAIBAO_",
                "NOVEL_",
                "RATE_LIMIT_",
                "DATA_DIR",
            )
        ):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
