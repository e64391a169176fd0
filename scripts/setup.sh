#!/usr/bin/env bash
# Create .venv and install the project with its dev extra; re-installs only when pyproject changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.baibao-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  echo "$want" > "$stamp"
fi
# With --ocr (test.sh and CI): OCR of scanned PDFs (`baibao ingest --ocr`) runs tesseract with its
# Chinese data, and its test never skips in CI. Installed when missing and we may (root with
# apt-get), here rather than in test.sh because CI runs setup before it seals the tests off the
# network; otherwise the OCR test is skipped outside CI and this says how to install it.
[ "${1:-}" = "--ocr" ] || exit 0
if ! command -v tesseract >/dev/null 2>&1 || ! tesseract --list-langs 2>/dev/null | grep -qx chi_sim; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra >/dev/null
  else
    echo "note: OCR needs: apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra" >&2
  fi
fi
