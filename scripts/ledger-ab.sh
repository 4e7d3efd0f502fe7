#!/usr/bin/env bash
# Alternating A/B runs of the ledger load, each on a fresh server: for every LABEL:BINARY:SERVE_FLAGS
# argument, start BINARY serve with SERVE_FLAGS on an empty data directory, run `surge bench transfer`
# for SECS seconds (BENCHFLAGS, default --vus 100), and print the rate, p95, the server's CPU per
# request (setup included) and the machine's steal, idle and iowait over the run. Give the binaries
# in ABBA order: this VM's speed drifts within minutes, so only back-to-back pairs compare.
#
# Usage: [OUT=DIR] scripts/ledger-ab.sh SECS LABEL:BINARY:SERVE_FLAGS ...
#   e.g. scripts/ledger-ab.sh 30 "old:/tmp/surge-old:--shards 1" "new:/tmp/surge-new:--shards 1" \
#        "new:/tmp/surge-new:--shards 1" "old:/tmp/surge-old:--shards 1"
#   BENCHFLAGS="--vus 4 --batch 8190" for the batch route (the rate is then requests/s).
#   OUT=DIR also writes each run's result to DIR/LABEL.json (surge bench compare, bench-tables.sh).
set -euo pipefail
secs=$1; shift
addr=127.0.0.1:18410
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
for spec in "$@"; do
  IFS=: read -r label bin flags <<< "$spec"
  # shellcheck disable=SC2086 # flags are words
  "$bin" serve --data "$out/data" --addr "$addr" $flags > "$out/serve.log" 2>&1 &
  pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  st0=$(head -1 /proc/stat)
  # shellcheck disable=SC2086
  res=$("$bin" bench transfer --target "http://$addr" ${BENCHFLAGS:---vus 100} --duration "${secs}s" ${OUT:+--out "$OUT/$label.json"} 2>&1 || true)
  st1=$(head -1 /proc/stat)
  ticks=$(cpu_ticks "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$out/data"
  n=$(echo "$res" | awk '/http_reqs/ {print $2}')
  machine=$(printf "%s\n%s\n" "$st0" "$st1" | awk 'NR==1{for(i=2;i<=11;i++)a[i]=$i} NR==2{t=0;for(i=2;i<=11;i++){d[i]=$i-a[i];t+=d[i]} printf "steal %.1f%% idle %.1f%% iowait %.1f%%", 100*d[9]/t, 100*d[5]/t, 100*d[6]/t}')
  echo "$label: $(echo "$res" | awk '/http_reqs/ {print $3}') | $(echo "$res" | grep http_req_duration | grep -oE 'p\(95\)=[^ ]+') | server $(( ticks * 1000000 / $(getconf CLK_TCK) / n )) µs per request (setup included) | $machine"
done
