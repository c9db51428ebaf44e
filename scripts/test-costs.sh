#!/bin/bash
# Rewrites tests/test_costs.txt from the durations CTest measured in the last full run of
# scripts/test.sh (BUILD_DIR/Testing/Temporary/CTestCostData.txt), longest first.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${BUILD_DIR:-build}/Testing/Temporary/CTestCostData.txt"
[ -f "$data" ] || { echo "test-costs.sh: no $data: run scripts/test.sh first" >&2; exit 2; }
{
  sed -n '1,/^[^#]/{/^#/p}' tests/test_costs.txt
  sed '/^---/,$d' "$data" | awk '{printf "%s %.1f\n", $1, $3}' | sort -k2,2 -g -r
} > tests/test_costs.txt.new
mv tests/test_costs.txt.new tests/test_costs.txt
