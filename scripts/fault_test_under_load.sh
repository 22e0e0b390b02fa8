#!/usr/bin/env bash
# Run the cluster fault test N times in a row beside two busy loops (a loaded 2-core machine),
# as issue 16 asked: `bash scripts/fault_test_under_load.sh [RUNS] [PYTEST_K]` (PYTEST_K: a -k
# expression, default extraction).
# The busy loops are this script's own children and stop with it; each run's log is kept in
# a temporary folder whose path is printed.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
select=${2:-extraction}
logs=$(mktemp -d -t fault-under-load-XXXXXX)
python -c "while True: pass" & busy1=$!
python -c "while True: pass" & busy2=$!
trap 'kill $busy1 $busy2 2>/dev/null' EXIT
passed=0
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  python -m pytest -q -p no:cacheprovider tests/test_cluster_jobs.py -k "$select" \
    > "$logs/run-$run.log" 2>&1
  code=$?
  [ $code -eq 0 ] && passed=$((passed + 1))
  echo "run $run: exit $code in $(( $(date +%s) - started )) s: $(tail -1 "$logs/run-$run.log")"
done
echo "$passed of $runs passed; logs in $logs"
