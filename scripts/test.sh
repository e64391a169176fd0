#!/usr/bin/env bash
# Installs everything and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --ocr
exec .venv/bin/python -m pytest -q "$@"
