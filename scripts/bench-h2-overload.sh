#!/usr/bin/env bash
# The HTTP/2 overload figures of docs/BENCHMARKS.md ("At 10× overload"): `surge bench spike --http2
# --conns 16`, 100,000 requests, on a fresh server each time, with 10 workers (a light load), 100
# (enough to keep the server busy: the rate no longer grows past them), 10 times as many (1,000) and
# 100 times as many (10,000: the 16 connections then carry more streams than the server's
# --max-streams lets in), alternated, twice. Each run's JSON holds the server's CPU time (server_cpu_s, from its /metrics),
# the 503s it shed, and the GOAWAYs, resets and lost connections of the client's connections.
#
# Usage: scripts/bench-h2-overload.sh [OUTDIR]   (default: ./bench-out)
# Takes about 12 minutes. Run it on an otherwise idle machine.
set -euo pipefail
out=${1:-bench-out}
addr=127.0.0.1:18201
mkdir -p "$out"
go build -o "$out/surge" ./cmd/surge
surge="$out/surge"

run() { # run NAME WORKERS: one spike on a fresh server
  local name=$1 workers=$2
  rm -rf "$out/data-h2"
  "$surge" serve --data "$out/data-h2" --addr "$addr" > "$out/serve-$name.log" 2>&1 &
  local pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  echo "== $name: -c $workers $(date -u +%FT%TZ)"
  "$surge" bench spike --target "http://$addr" --http2 --conns 16 -c "$workers" -n 100000 --out "$out/$name.json" 2>/dev/null |
    grep -E 'http_req_failed|reservation_latency|completion_time|retries_503|server_cpu|http2_|load_generator|verdict' || true
  kill "$pid"
  wait "$pid" || true
}

for i in 1 2; do
  run "spike-h2-light-$i" 10
  run "spike-h2-busy-$i" 100
  run "spike-h2-10x-$i" 1000
  run "spike-h2-100x-$i" 10000
done
