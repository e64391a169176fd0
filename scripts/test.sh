#!/usr/bin/env bash
# Installs everything and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# OCR of scanned PDFs (`baibao ingest --ocr`) runs tesseract with its Chinese data; its test never
# skips in CI (.ci/run runs this script). Installed here when missing and we may (root with
# apt-get); otherwise the OCR test is skipped outside CI and this says how to install it.
if ! command -v tesseract >/dev/null 2>&1 || ! tesseract --list-langs 2>/dev/null | grep -qx chi_sim; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra >/dev/null
  else
    echo "note: OCR needs: apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra" >&2
  fi
fi
exec .venv/bin/python -m pytest -q "$@"
