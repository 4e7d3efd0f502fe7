#!/usr/bin/env bash
# Reproduces the ticketing figures of docs/BENCHMARKS.md on this machine: on a fresh server each
# time, `surge bench spike` with 1,000,000 requests for 4 events × 100 areas × 20×20 seats, as
# ticket-master's client does it (POST, then long-poll GET), the same with 16 workers pipelining on
# each connection (--pipeline 16), and in one call each (--wait), three times each; then seed 002's
# single-instance shape (50,000 requests, 10 areas). Prints each run's summary lines and the
# server's CPU time and peak RSS.
#
# Usage: scripts/bench-spike.sh [OUTDIR]   (default: ./bench-out; JSON results land there)
# Takes about 17 minutes. Run it on an otherwise idle machine.
set -euo pipefail
out=${1:-bench-out}
addr=127.0.0.1:18200
mkdir -p "$out"
go build -o "$out/surge" ./cmd/surge
surge="$out/surge"

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run() { # run NAME ARGS... : one spike on a fresh server
  local name=$1; shift
  rm -rf "$out/data-spike"
  "$surge" serve --data "$out/data-spike" --addr "$addr" > "$out/serve-$name.log" 2>&1 &
  local pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  echo "== $name $(date -u +%FT%TZ)"
  local t0; t0=$(cpu_ticks "$pid")
  "$surge" bench spike --target "http://$addr" --out "$out/$name.json" "$@" 2>/dev/null |
    grep -E 'reservation_latency|server_processing|completion_time|sold_out|seats_sold|reservations\.|double_bookings|load_generator|verdict' || true
  echo "server CPU: $(( ($(cpu_ticks "$pid") - t0) / $(getconf CLK_TCK) )) s; peak RSS: $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") kB"
  kill "$pid"
  wait "$pid" || true
}

for i in 1 2 3; do run "spike-poll-$i" -n 1000000 --events 4 --areas 100 --rows 20 --cols 20; done
for i in 1 2 3; do run "spike-pipelined-$i" -n 1000000 --events 4 --areas 100 --rows 20 --cols 20 --pipeline 16; done
for i in 1 2 3; do run "spike-wait-$i" -n 1000000 --events 4 --areas 100 --rows 20 --cols 20 --wait 10s; done
run spike-50k -n 50000 --events 1 --areas 10 -c 500
