"""Loopback only: refuse every network operation that could leave this machine.

Standard library only, because the same file runs in two places:

- in the pytest process, installed by `tests/conftest.py::pytest_configure` before any fixture
  of any scope exists (imported as `tests.sandbox.netblock`);
- in every Python child process a test starts, installed by `tests/sandbox/sitecustomize.py`
  (`pytest_configure` puts `tests/sandbox/` first on the children's `PYTHONPATH`; imported as
  top-level `netblock`).

What is refused, for any target that is not loopback (127.0.0.0/8, ::1, "localhost" and
`*.localhost`): `socket.connect`/`connect_ex`, `sendto`, `sendmsg` (UDP, including DNS queries
sent by hand), name resolution (`getaddrinfo`, `gethostbyname(_ex)`, `gethostbyaddr`,
`getnameinfo`), on `socket.socket` and on the raw `_socket.socket` type. asyncio
(`loop.sock_connect`, `loop.getaddrinfo`, `open_connection`, datagram endpoints),
`socket.create_connection`, httpx, aiohttp and the SDKs all go through these. A host *name*
other than a loopback one is refused before the C library could resolve it, and loopback names
(`localhost`, `foo.localhost`) and addresses are answered here, never by the system resolver
(which could send a `*.localhost` query or a reverse lookup to a DNS server). Binding (servers)
is always allowed; tests bind to 127.0.0.1.

Every refusal raises `NetworkBlocked` and is also recorded: in `refusals` (this process) and,
when `TESTS_NETBLOCK_LOG` names a file, as one line appended there (children), so the suite
can fail a test whose code swallowed the exception.

Not covered here: processes this file never runs in — non-Python children (curl, …), and
Python children started so that they skip `sitecustomize` (`python -I`, `-S`, `-E`, or an
environment without the suite's `PYTHONPATH`). `.ci/run` closes those off by running the suite
in a network namespace with only loopback up; `tests/unit/test_network_seal.py` shows each of
them failing to get out (see its docstring for what it asserts outside such a namespace).
"""

from __future__ import annotations

import _socket
import ipaddress
import os
import socket
import sys
import types
from typing import Any

LOG_ENV = "TESTS_NETBLOCK_LOG"

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_UNSPECIFIED = {"", "0.0.0.0", "::"}  # wildcard addresses: for bind(), never a destination

# One state per process, even when this file is imported twice under two names (a pytest run
# started by a test: sitecustomize imports `netblock`, the suite's conftest `tests.sandbox.…`).
_state: Any = sys.modules.setdefault(
    "_tests_netblock_state",
    types.SimpleNamespace(  # type: ignore[arg-type]
        refusals=[], installed=False, to_file=True, blocked=RuntimeError
    ),
)
refusals: list[str] = _state.refusals


if _state.blocked is RuntimeError:

    class NetworkBlocked(RuntimeError):
        """A test (or a process it started) tried to reach beyond loopback."""

    _state.blocked = NetworkBlocked
else:
    NetworkBlocked = _state.blocked


def is_loopback_host(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip().rstrip(".").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0].strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _refuse(what: str, target: object) -> None:
    message = f"non-loopback network access in a test: {what}({target!r})"
    refusals.append(message)
    path = os.environ.get(LOG_ENV) if _state.to_file else None
    if path:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"pid {os.getpid()}: {message}\n".encode())
            finally:
                os.close(fd)
        except OSError:
            pass
    raise NetworkBlocked(message)


def _check_address(sock: Any, what: str, address: object) -> None:
    family = getattr(sock, "family", None)
    if family in (socket.AF_INET, socket.AF_INET6):
        host = address[0] if isinstance(address, tuple) and address else address
        if not is_loopback_host(host):
            _refuse(what, address)
    elif family == getattr(socket, "AF_UNIX", object()):
        return
    elif family == getattr(socket, "AF_NETLINK", object()):
        return  # the local kernel
    else:
        _refuse(what, address)


def _check_host(what: str, host: object) -> None:
    if host is None or (isinstance(host, str | bytes) and _as_str(host) in _UNSPECIFIED):
        return
    if not is_loopback_host(host):
        _refuse(what, host)


def _as_str(value: str | bytes) -> str:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def _guard_methods(cls: type, originals: type) -> dict[str, Any]:
    """Methods for `cls` that check the destination, then call `originals`' implementation."""
    real_connect = originals.connect  # type: ignore[attr-defined]
    real_connect_ex = originals.connect_ex  # type: ignore[attr-defined]
    real_sendto = originals.sendto  # type: ignore[attr-defined]
    real_sendmsg = getattr(originals, "sendmsg", None)

    def connect(self: Any, address: Any) -> Any:
        _check_address(self, "connect", address)
        return real_connect(self, address)

    def connect_ex(self: Any, address: Any) -> Any:
        _check_address(self, "connect_ex", address)
        return real_connect_ex(self, address)

    def sendto(self: Any, data: Any, *args: Any) -> Any:
        # sendto(data, address) or sendto(data, flags, address)
        if args:
            _check_address(self, "sendto", args[-1])
        return real_sendto(self, data, *args)

    methods: dict[str, Any] = {"connect": connect, "connect_ex": connect_ex, "sendto": sendto}
    if real_sendmsg is not None:

        def sendmsg(self: Any, buffers: Any, *args: Any) -> Any:
            # sendmsg(buffers[, ancdata[, flags[, address]]])
            if len(args) >= 3 and args[2] is not None:
                _check_address(self, "sendmsg", args[2])
            return real_sendmsg(self, buffers, *args)

        methods["sendmsg"] = sendmsg
    return methods


def install(*, to_file: bool = True) -> None:
    """Patch the socket layer of this process (idempotent). `to_file`: also append refusals to
    `$TESTS_NETBLOCK_LOG` (children); the pytest process keeps them in `refusals` only."""
    _state.to_file = to_file
    if _state.installed:
        return
    _state.installed = True
    raw = _socket.socket

    for name, method in _guard_methods(socket.socket, raw).items():
        setattr(socket.socket, name, method)

    # Code that builds `_socket.socket` directly gets a guarded subclass. (`SocketType` stays the
    # original type: isinstance checks against it must keep working.)
    guarded_raw = type("socket", (raw,), _guard_methods(raw, raw))
    guarded_raw.__module__ = "_socket"
    _socket.socket = guarded_raw  # type: ignore[misc]

    for module in (socket, _socket):
        for name, guard in _RESOLVER_GUARDS.items():
            setattr(module, name, guard(getattr(module, name)))


# ---- name resolution: loopback answered here, everything else refused ------------------------


def _loopback_name(host: object) -> bool:
    """A loopback host given by name (not a numeric address): the system resolver never sees
    it, since a `*.localhost` name would go out as a DNS query."""
    if not is_loopback_host(host):
        return False
    try:
        ipaddress.ip_address(_as_str(host).strip().split("%", 1)[0].strip("[]"))  # type: ignore[arg-type]
    except ValueError:
        return True
    return False


def _guard_getaddrinfo(real: Any) -> Any:
    def getaddrinfo(
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:
        _check_host("getaddrinfo", host)
        if not _loopback_name(host):
            return real(host, port, family, type, proto, flags)
        # The loopback address instead of the name (AI_NUMERICHOST: nothing is looked up), as
        # /etc/hosts gives it: 127.0.0.1 unless IPv6 is asked for or named (ip6-localhost).
        v6 = family == socket.AF_INET6 or _as_str(host).lower().startswith("ip6-")
        if family not in (0, socket.AF_INET6 if v6 else socket.AF_INET):
            raise socket.gaierror(socket.EAI_ADDRFAMILY, f"no such address for {host!r}")
        numeric = "::1" if v6 else "127.0.0.1"
        return real(numeric, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    return getaddrinfo


def _guard_gethostbyname(real: Any) -> Any:
    def gethostbyname(host: Any) -> Any:
        _check_host("gethostbyname", host)
        return "127.0.0.1" if _loopback_name(host) else real(host)

    return gethostbyname


def _guard_gethostbyname_ex(real: Any) -> Any:
    def gethostbyname_ex(host: Any) -> Any:
        _check_host("gethostbyname_ex", host)
        return (_as_str(host), [], ["127.0.0.1"]) if _loopback_name(host) else real(host)

    return gethostbyname_ex


def _guard_gethostbyaddr(real: Any) -> Any:
    """A reverse lookup is a DNS query: loopback is answered here, anything else refused."""

    def gethostbyaddr(host: Any) -> Any:
        if not is_loopback_host(host):  # the wildcard too: it would look up this host's name
            _refuse("gethostbyaddr", host)
        address = "127.0.0.1" if _loopback_name(host) else _as_str(host).strip("[]")
        return ("localhost", [], [address])

    return gethostbyaddr


def _guard_getnameinfo(real: Any) -> Any:
    def getnameinfo(sockaddr: Any, flags: int) -> Any:
        host = sockaddr[0] if isinstance(sockaddr, tuple) and sockaddr else sockaddr
        if not is_loopback_host(host):
            _refuse("getnameinfo", sockaddr)
        if _loopback_name(host):
            return real(sockaddr, flags)  # CPython parses it with AI_NUMERICHOST: no lookup
        numeric_host, service = real(sockaddr, flags | socket.NI_NUMERICHOST)
        return numeric_host if flags & socket.NI_NUMERICHOST else "localhost", service

    return getnameinfo


_RESOLVER_GUARDS = {
    "getaddrinfo": _guard_getaddrinfo,
    "gethostbyname": _guard_gethostbyname,
    "gethostbyname_ex": _guard_gethostbyname_ex,
    "gethostbyaddr": _guard_gethostbyaddr,
    "getnameinfo": _guard_getnameinfo,
}
