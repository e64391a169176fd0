#!/usr/bin/env bash
# The main job on the embedded defaults: no tokens, no servers. Installs, prepares the bundled
# sample corpus into Qdrant Edge under ./data (first run only), then opens the console.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/baibao chat "$@"
