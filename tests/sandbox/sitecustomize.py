"""Imported by every Python child process a test starts (`tests/sandbox/` leads the children's
`PYTHONPATH`, set by `tests/conftest.py::pytest_configure`): the same loopback-only network block
as the test process. Then hands over to any other `sitecustomize` further down the path."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import netblock
finally:
    del sys.path[0]

netblock.install()

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None and _spec.origin != os.path.abspath(__file__):
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
