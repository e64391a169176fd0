"""The suite's network block (`tests/sandbox/netblock.py`): every primitive is refused for a
public address, allowed for loopback, and a child process inherits the block."""

from __future__ import annotations

import _socket
import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import NetworkBlocked, Refusals
from tests.sandbox import netblock

PUBLIC_V4 = "192.0.2.1"  # TEST-NET-1: never routed, so a leak could not reach anyone anyway
PUBLIC_V6 = "2001:db8::1"
PUBLIC_NAME = "example.com"


@pytest.fixture
def udp_server() -> Iterator[tuple[str, int]]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        yield server.getsockname()


@pytest.fixture
def tcp_server() -> Iterator[tuple[str, int]]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()


def _refused(refused: Refusals, action: Callable[[], object], needle: str) -> None:
    before = len(refused())
    with pytest.raises(NetworkBlocked, match="non-loopback"):
        action()
    after = refused()
    assert len(after) == before + 1 and needle in after[-1], after


@pytest.mark.parametrize("address", [(PUBLIC_V4, 80), (PUBLIC_NAME, 443), ("10.0.0.1", 22)])
def test_tcp_connect_and_connect_ex_are_refused(
    refused_connections: Refusals, address: tuple[str, int]
) -> None:
    with socket.socket() as s:
        _refused(refused_connections, lambda: s.connect(address), "connect(")
        _refused(refused_connections, lambda: s.connect_ex(address), "connect_ex(")


def test_ipv6_connect_is_refused(refused_connections: Refusals) -> None:
    with socket.socket(socket.AF_INET6) as s:
        _refused(refused_connections, lambda: s.connect((PUBLIC_V6, 80, 0, 0)), PUBLIC_V6)


def test_udp_sendto_and_sendmsg_are_refused(refused_connections: Refusals) -> None:
    query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"  # a DNS query header
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        _refused(refused_connections, lambda: s.sendto(query, ("8.8.8.8", 53)), "sendto(")
        _refused(refused_connections, lambda: s.sendto(query, 0, ("1.1.1.1", 53)), "sendto(")
        _refused(
            refused_connections, lambda: s.sendmsg([query], [], 0, ("9.9.9.9", 53)), "sendmsg("
        )


def test_name_resolution_is_refused(refused_connections: Refusals) -> None:
    _refused(refused_connections, lambda: socket.getaddrinfo(PUBLIC_NAME, 443), "getaddrinfo(")
    _refused(refused_connections, lambda: socket.gethostbyname(PUBLIC_NAME), "gethostbyname(")
    _refused(refused_connections, lambda: socket.gethostbyname_ex(PUBLIC_NAME), "gethostbyname")
    _refused(refused_connections, lambda: socket.gethostbyaddr(PUBLIC_V4), "gethostbyaddr(")


def test_reverse_lookups_are_refused(refused_connections: Refusals) -> None:
    """A reverse lookup is a DNS query too (PTR), on either module."""
    _refused(refused_connections, lambda: socket.getnameinfo((PUBLIC_V4, 80), 0), "getnameinfo(")
    _refused(
        refused_connections, lambda: _socket.getnameinfo((PUBLIC_V6, 80, 0, 0), 0), "getnameinfo("
    )
    _refused(refused_connections, lambda: socket.gethostbyaddr("0.0.0.0"), "gethostbyaddr(")
    _refused(refused_connections, lambda: socket.getfqdn(PUBLIC_V4), "gethostbyaddr(")


def test_loopback_names_are_answered_without_the_system_resolver(
    refused_connections: Refusals,
) -> None:
    """`foo.localhost` would go to the DNS server as a query; the block answers it itself."""
    calls: list[tuple[object, ...]] = []

    def system_resolver(host: str, port: object, *rest: int) -> list[object]:
        calls.append((host, *rest))
        return [("answer", host)]

    getaddrinfo = netblock._guard_getaddrinfo(system_resolver)
    assert getaddrinfo("foo.localhost", 80) == [("answer", "127.0.0.1")]
    assert getaddrinfo("LOCALHOST.", 80, socket.AF_INET6) == [("answer", "::1")]
    assert getaddrinfo("a.b.localhost", 80, 0, socket.SOCK_STREAM) == [("answer", "127.0.0.1")]
    assert all(flags & socket.AI_NUMERICHOST for *_, flags in calls), calls  # nothing looked up
    assert getaddrinfo("127.0.0.2", 80) == [("answer", "127.0.0.2")]  # numeric: passed on
    with pytest.raises(socket.gaierror):
        getaddrinfo("ip6-localhost", 80, socket.AF_INET)

    def no_reverse_lookup(*args: object) -> object:
        raise AssertionError(f"system resolver called with {args}")

    assert netblock._guard_gethostbyaddr(no_reverse_lookup)("127.0.0.1") == (
        "localhost",
        [],
        ["127.0.0.1"],
    )
    assert netblock._guard_gethostbyname(no_reverse_lookup)("x.localhost") == "127.0.0.1"
    assert netblock._guard_gethostbyname_ex(no_reverse_lookup)("x.localhost")[2] == ["127.0.0.1"]
    # The installed guards, end to end: the system resolver has no such name.
    assert {a[4][0] for a in socket.getaddrinfo("foo.localhost", 80)} == {"127.0.0.1"}
    assert socket.gethostbyname("api.localhost") == "127.0.0.1"
    assert socket.getnameinfo(("127.0.0.1", 80), socket.NI_NUMERICSERV) == ("localhost", "80")
    assert socket.getnameinfo(("::1", 80, 0, 0), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV) == (
        "::1",
        "80",
    )
    assert refused_connections() == []


def test_raw_socket_type_and_create_connection_are_refused(
    refused_connections: Refusals,
) -> None:
    raw = _socket.socket()
    try:
        _refused(refused_connections, lambda: raw.connect((PUBLIC_V4, 80)), "connect(")
    finally:
        raw.close()
    _refused(
        refused_connections,
        lambda: socket.create_connection((PUBLIC_V4, 80), timeout=1),
        "getaddrinfo(",
    )


async def test_asyncio_paths_are_refused(refused_connections: Refusals) -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(NetworkBlocked):
        await loop.getaddrinfo(PUBLIC_NAME, 443)
    with pytest.raises(NetworkBlocked):
        await asyncio.open_connection(PUBLIC_V4, 80)
    with socket.socket() as s:
        s.setblocking(False)
        with pytest.raises(NetworkBlocked):
            await loop.sock_connect(s, (PUBLIC_V4, 80))
    with pytest.raises(NetworkBlocked):
        await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=("8.8.8.8", 53))
    assert len(refused_connections()) == 4


def test_loopback_is_allowed(
    refused_connections: Refusals, tcp_server: tuple[str, int], udp_server: tuple[str, int]
) -> None:
    with socket.socket() as client:
        client.connect(tcp_server)
    with socket.socket() as client:
        assert client.connect_ex(("localhost", tcp_server[1])) == 0
    with socket.create_connection(tcp_server, timeout=5):
        pass
    raw = _socket.socket()
    try:
        raw.connect(tcp_server)
    finally:
        raw.close()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        assert s.sendto(b"x", udp_server) == 1
        assert s.sendto(b"x", 0, udp_server) == 1
        assert s.sendmsg([b"x"], [], 0, udp_server) == 1
    assert socket.getaddrinfo("localhost", 80)
    assert socket.getaddrinfo("127.0.0.1", 80)
    assert socket.getaddrinfo(None, 0, flags=socket.AI_PASSIVE)  # binding
    assert socket.gethostbyname("localhost").startswith("127.")
    assert refused_connections() == []


async def test_asyncio_loopback_is_allowed(tcp_server: tuple[str, int]) -> None:
    _reader, writer = await asyncio.open_connection(*tcp_server)
    writer.close()
    await writer.wait_closed()
    assert await asyncio.get_running_loop().getaddrinfo("localhost", tcp_server[1])


def test_unix_sockets_are_allowed(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)


CHILD = """
import socket, sys
with socket.socket() as s:
    try:
        s.connect(({public!r}, 80))
    except RuntimeError as exc:
        print("REFUSED", type(exc).__name__)
    else:
        print("CONNECTED")
with socket.socket() as s:
    s.connect(("127.0.0.1", {port}))
    print("LOOPBACK OK")
"""


def test_child_processes_inherit_the_block(
    refused_connections: Refusals, tcp_server: tuple[str, int]
) -> None:
    code = CHILD.format(public=PUBLIC_V4, port=tcp_server[1])
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split("\n")[:2] == ["REFUSED NetworkBlocked", "LOOPBACK OK"]
    [logged] = refused_connections()
    assert logged.startswith("pid ") and f"connect(('{PUBLIC_V4}', 80))" in logged


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def suite_in_a_subprocess(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A separate pytest run that loads this suite's conftest as a plugin."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]]))
    pytester.makeconftest('pytest_plugins = ["tests.conftest"]\n')
    return pytester


def test_a_swallowed_refusal_still_fails_the_test(suite_in_a_subprocess: pytest.Pytester) -> None:
    """`_no_network_attempts` catches code that hides the error (a retry loop, a fallback)."""
    suite_in_a_subprocess.makepyfile(
        """
        import socket

        def test_hides_the_error():
            try:
                socket.create_connection(("192.0.2.1", 80))
            except Exception:
                pass
        """
    )
    result = suite_in_a_subprocess.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_hides_the_error*",
            "network access beyond loopback:",
            "*192.0.2.1*",
        ]
    )


def test_session_fixtures_see_neither_the_callers_env_nor_the_repository(
    suite_in_a_subprocess: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester = suite_in_a_subprocess
    (pytester.path / ".env").write_text("TELEGRAM_TOKEN=from-dotenv\n", encoding="utf-8")
    monkeypatch.setenv("QDRANT_URL", "http://qdrant.example:6333")
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("BAIBAO_SIGKILL_SEED", "7")  # a test knob, not a setting: kept
    pytester.makepyfile(
        f"""
        import os
        from pathlib import Path
        import pytest

        @pytest.fixture(scope="session")
        def seen():
            from bot.settings import load_settings
            s = load_settings()
            return (s.qdrant_url, s.telegram_token, os.environ.get("https_proxy"),
                    Path.cwd(), os.environ.get("BAIBAO_SIGKILL_SEED"))

        def test_session_fixture(seen):
            qdrant, token, proxy, cwd, seed = seen
            assert qdrant is None and token is None and proxy is None and seed == "7"
            assert cwd != Path({str(pytester.path)!r})
            assert not (cwd / ".env").exists()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_the_callers_settings_never_reach_tests() -> None:
    """`pytest_configure` scrubbed them before any fixture ran; each test then gets its own
    working directory and data directory."""
    assert not [k for k in os.environ if k.upper().startswith(("TELEGRAM_", "QDRANT_", "LLM_"))]
    assert Path(os.environ["DATA_DIR"]).parent == Path.cwd()
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0].endswith(os.path.join("tests", "sandbox"))
