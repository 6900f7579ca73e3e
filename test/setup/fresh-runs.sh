#!/usr/bin/env bash
# Issue 41's check: the README's test command from fresh clones, N times in a row, optionally with a
# CPU hog on one core (stress-ng --cpu 1 when installed, else a shell busy loop), as a developer's
# busy laptop runs it. One line per run (wall time, vitest wall time, result) in
# $OUT/summary.txt, each run's whole output in $OUT/run-K.log; stops at the first red run.
#
#   test/setup/fresh-runs.sh [--hog] [--runs N] [--out DIR]   # default: 1 run, no hog, /tmp/tollgate-fresh-runs
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HOG=0 RUNS=1 OUT=/tmp/tollgate-fresh-runs
while (($#)); do
  case $1 in
    --hog) HOG=1 ;;
    --runs) RUNS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--hog] [--runs N] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD)
hog_pid=
stop_hog() { [[ -n $hog_pid ]] && kill "$hog_pid" 2>/dev/null; wait "$hog_pid" 2>/dev/null || true; hog_pid=; }
trap stop_hog EXIT
for k in $(seq 1 "$RUNS"); do
  clone=$(mktemp -d /tmp/tollgate-fresh-XXXX)
  git clone -q "$ROOT" "$clone"
  if ((HOG)); then
    if command -v stress-ng >/dev/null; then stress-ng --cpu 1 --quiet & else (while :; do :; done) & fi
    hog_pid=$!
  fi
  began=$(date +%s)
  set +e
  (cd "$clone" && npx -y pnpm@10.34.9 install --frozen-lockfile && npx -y pnpm@10.34.9 test) >"$OUT/run-$k.log" 2>&1
  code=$?
  set -e
  stop_hog
  wall=$(( $(date +%s) - began ))
  vitest=$(grep -o 'vitest wall time [0-9.]* min' "$OUT/run-$k.log" | tail -1 || true)
  line="run $k/$RUNS commit $COMMIT hog=$HOG: $( ((code == 0)) && echo green || echo "RED (exit $code)"), $((wall / 60)) min $((wall % 60)) s in all, ${vitest:-no vitest time}; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "$line" | tee -a "$OUT/summary.txt"
  rm -rf "$clone"
  ((code == 0)) || exit "$code"
done
