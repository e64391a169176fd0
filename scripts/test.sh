#!/usr/bin/env bash
# Installs everything and runs the whole test suite, on every core.
#
# Two pytest runs with the same arguments (tests/parallel.py): every test not marked `serial`,
# spread over one pytest-xdist worker per core (TEST_WORKERS=N to choose), then the `serial`
# ones, one at a time, alone on the machine. Seeds: both runs take the same
# `-p randomly --randomly-seed=N` (the one given, else one picked and printed here), and any
# `--hypothesis-seed=N`; add `-n 0` to replay the parallel part in one process, in that order.
#
# OMP_NUM_THREADS=1 in the parallel run: one worker per core already uses every core; the e5
# model's OpenMP threads on top of it only spin against the other worker (its CPU time doubled
# in the quality tests on a busy machine, bench/results/suite-time.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --ocr
pytest=(.venv/bin/python -m pytest -q)
args=("$@")
# One seed for both runs, printed (pytest -q does not print pytest-randomly's header line).
if [[ " $* " != *"no:randomly"* && " $* " != *"--randomly-seed"* ]]; then
  seed=$(.venv/bin/python -c 'import random; print(random.randrange(2**32))')
  args=(-p randomly --randomly-seed="$seed" "${args[@]}")
  echo "random order, seed $seed: replay with bash scripts/test.sh -p randomly --randomly-seed=$seed"
fi
parallel=0
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
  "${pytest[@]}" -n "${TEST_WORKERS:-auto}" --dist loadgroup --without-serial "${args[@]}" || parallel=$?
apart=0
"${pytest[@]}" -n 0 --only-serial "${args[@]}" || apart=$?
# Exit 5 is pytest's "no tests collected": fine for one of the two runs (a file without a
# serial test), not for both.
if [ "$parallel" = 5 ] && [ "$apart" = 5 ]; then
  exit 5
fi
if [ "$parallel" != 0 ] && [ "$parallel" != 5 ]; then
  exit "$parallel"
fi
if [ "$apart" != 0 ] && [ "$apart" != 5 ]; then
  exit "$apart"
fi
exit 0
