"""Which processes can leave this machine? Run as a script (`python -I seal_probe.py`); prints
one JSON object, route → what happened. Standard library only.

Each route is a child process started the way code under test could start one, bypassing the
in-process block (`netblock.py` is installed by `sitecustomize.py`, which these never load):
`python -I`, `python -S -E`, a Python child with an empty environment, and curl; plus the
control, a plain Python child of the suite's environment, which the block does reach.

Every child first reaches a loopback HTTP server this script runs (proof that it started and
can use the network at all, so a broken probe never looks like a sealed network), says whether
the block is installed in it, then tries a public address and reports how that ended:
"unreachable" (the kernel has no route: ENETUNREACH, curl's "Network is unreachable"),
"NetworkBlocked" (the in-process block), "connected", or another error's name.
"""

from __future__ import annotations

import errno
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from typing import Any

# TEST-NET-3 (RFC 5737): assigned to no one, so even a leak reaches nobody. Outside a network
# namespace a machine with a default route does not answer ENETUNREACH for it: only "no route
# at all" does, which is what the test asserts.
PUBLIC = "203.0.113.1"
TIMEOUT_S = 10

CHILD = """
import errno, json, socket, sys
host, port, public = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {"block": "_tests_netblock_state" in sys.modules}
try:
    socket.create_connection((host, port), timeout=10).close()
    out["loopback"] = True
except OSError as exc:
    out["loopback"] = repr(exc)
try:
    with socket.socket() as s:
        s.settimeout(10)
        s.connect((public, 80))
    out["public"] = "connected"
except OSError as exc:
    out["public"] = "unreachable" if exc.errno == errno.ENETUNREACH else repr(exc)
except RuntimeError as exc:  # the block's NetworkBlocked
    out["public"] = type(exc).__name__
print(json.dumps(out))
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"seal-probe"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _python(argv: list[str], env: dict[str, str], port: int) -> dict[str, Any]:
    done = subprocess.run(
        [*argv, "-c", CHILD, "127.0.0.1", str(port), PUBLIC],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr[-500:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _curl(port: int) -> dict[str, Any]:
    curl = shutil.which("curl")
    if curl is None:
        return {"error": "curl is not installed"}
    base = [curl, "-sS", "-v", "--noproxy", "*", "--max-time", str(TIMEOUT_S)]
    local = subprocess.run(
        [*base, f"http://127.0.0.1:{port}/"], capture_output=True, text=True, timeout=60
    )
    # curl is not Python: no block could be installed in it.
    out: dict[str, Any] = {"block": False, "loopback": local.stdout == "seal-probe"}
    if not out["loopback"]:
        out["loopback"] = f"exit {local.returncode}: {local.stderr[-300:]}"
    public = subprocess.run(
        [*base, f"http://{PUBLIC}/"], capture_output=True, text=True, timeout=60
    )
    if public.returncode == 7 and os.strerror(errno.ENETUNREACH) in public.stderr:
        out["public"] = "unreachable"
    elif public.returncode == 0:
        out["public"] = "connected"
    else:
        out["public"] = f"curl exit {public.returncode}: {public.stderr[-300:]}"
    return out


def probe() -> dict[str, dict[str, Any]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    suite_env = dict(os.environ)
    try:
        return {
            "python -I": _python([sys.executable, "-I"], suite_env, port),
            "python -S -E": _python([sys.executable, "-S", "-E"], suite_env, port),
            "python, empty environment": _python([sys.executable], {}, port),
            "curl": _curl(port),
            "python, the suite's environment (control)": _python([sys.executable], suite_env, port),
        }
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    print(json.dumps(probe()))
