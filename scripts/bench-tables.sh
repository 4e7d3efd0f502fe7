#!/usr/bin/env bash
# Prints one Markdown row per `surge bench --out FILE.json` result in DIR (default docs/bench), the
# figures docs/BENCHMARKS.md's tables are made of: scenario and parameters, requests/s and ops/s,
# latency p50 / p95 / p99, failures, steal, machine stalls and the verdict; for `kv --find-max` the
# highest rate whose probe passed, with its p99. docs/bench/README.md says which file is which row.
#
# Usage: scripts/bench-tables.sh [DIR]     (needs jq)
set -euo pipefail
dir=${1:-docs/bench}
echo "| file | scenario | parameters | requests/s | ops/s | p50 / p95 / p99 ms | failed | steal | stalled | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for f in "$dir"/*.json; do
  [ -e "$f" ] || continue
  jq -r --arg file "$(basename "$f")" '
    def r(n): (n * 100 | round) / 100;
    def pct(x): if x == null then "—" else "\(r(x * 100))%" end;
    ([.kv.probes[]? | select(.pass)] | max_by(.rate)) as $best
    | [ $file,
        .scenario,
        ([(.params.extra // {}) | to_entries[] | select(.key != "run_id") | "\(.key)=\(.value)"]
          + ["vus=\(.params.vus)", "duration=\(.params.duration_s)s"] | join(" ")),
        (if $best != null then "\(r($best.achieved_rps)) (find-max: p99 \(r($best.p99_ms)) ms at \($best.rate)/s)"
         else "\(r(.totals.requests_per_s))" end),
        (if .totals.ops_name then "\(r(.totals.ops_per_s)) \(.totals.ops_name)" else "" end),
        "\(r(.latency_ms.med)) / \(r(.latency_ms.p95)) / \(r(.latency_ms.p99))",
        "\(.totals.failed)",
        pct(.machine_cpu.steal),
        pct(.machine_stalls.stalled_share),
        (if .verdict then "\(if .verdict.pass then "PASS" else "FAIL" end): \(.verdict.detail)" else "" end)
      ]
    | "| " + (map(tostring | gsub("\\|"; "\\|")) | join(" | ")) + " |"' "$f"
done
