#!/usr/bin/env bash
# The README's test command three times beside a CPU hog (two busy loops), each run with a new
# printed seed: pass/fail, wall and CPU time per run (bench/suite_run.py; issue 40).
#   bash scripts/hog-test.sh                       # 3 runs, 2 busy loops
#   RUNS=1 HOG=0 bash scripts/hog-test.sh          # one run without the hog
#   bash scripts/hog-test.sh -- -x                 # extra arguments for scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --ocr
[ "${1:-}" = "--" ] && shift
exec .venv/bin/python bench/suite_run.py --runs "${RUNS:-3}" --hog "${HOG:-2}" \
  --logs "${LOGS:-/tmp/baibao-hog-runs}" -- "$@"
