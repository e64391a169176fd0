import socket

import pytest

from tests.conftest import NetworkBlocked


def test_non_loopback_connection_is_refused() -> None:
    with socket.socket() as s, pytest.raises(NetworkBlocked):
        s.connect(("192.0.2.1", 80))


def test_loopback_is_allowed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with server, socket.socket() as client:
        client.connect(server.getsockname())
