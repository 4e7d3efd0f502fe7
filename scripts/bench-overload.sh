#!/usr/bin/env bash
# The HTTP/1.1 overload figures of docs/BENCHMARKS.md ("HTTP/1.1 at 10× overload"):
# `surge bench transfer` (single transfers, one connection per VU) with VUS virtual users (1×:
# enough to keep the server busy) and then 10 times as many (10×), alternated PAIRS times, each run
# on a fresh server with its accounts (a run on the server of the run before would pay for the
# storage work, flushes and compactions, that the run before left behind), with the server's flags
# as they ship (requests in progress bounded by default). The transfer VUs honour
# Retry-After, and a result splits the requests the server took (latency_ms) from those it refused
# at once (refused). The server's CPU time comes from /proc/PID/stat over each measured run; the
# table gives it per accepted request. Each run's JSON is kept in OUTDIR.
#
# Usage: scripts/bench-overload.sh [OUTDIR]   (default: ./bench-out)
# Environment: VUS (default 200), DURATION (default 15s), PAIRS (default 3), SURGE (a binary to
# test instead of building ./cmd/surge), CLIENT (the binary whose `surge bench transfer` makes the
# load, default SURGE: the same client for two servers compared), SERVE_FLAGS (extra flags for
# surge serve), WARMUP (seconds,
# default 0: a run of the load before each measured run, whose requests and server CPU are not counted: the
# VUs' first connections, dialled at once, are a herd of their own), BENCHFLAGS (extra flags for
# surge bench transfer, e.g. "--retry-jitter 500ms").
# Takes about PAIRS × 1 minute. Run it on an otherwise idle machine.
set -euo pipefail
out=${1:-bench-out}
vus=${VUS:-200}
duration=${DURATION:-15s}
warmup=${WARMUP:-0}
[[ $warmup =~ ^[0-9]+$ ]] || { echo "WARMUP is a whole number of seconds" >&2; exit 2; }
pairs=${PAIRS:-3}
addr=127.0.0.1:18202
mkdir -p "$out"
surge=${SURGE:-}
if [[ -z $surge ]]; then
  go build -o "$out/surge" ./cmd/surge
  surge="$out/surge"
fi
client=${CLIENT:-$surge}
ticks=$(getconf CLK_TCK)

cpu_ticks() { # cpu_ticks PID: the process's user and system CPU time, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

pid=
stop_server() { # and removes its data, gigabytes after a run
  if [[ -n $pid ]]; then
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    pid=
  fi
  rm -rf "$out/data-overload"
}
trap stop_server EXIT

start_server() { # a fresh server with its accounts
  rm -rf "$out/data-overload"
  # shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
  "$surge" serve --data "$out/data-overload" --addr "$addr" ${SERVE_FLAGS:-} > "$out/serve-overload.log" 2>&1 &
  pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  "$client" bench transfer --target "http://$addr" --accounts 10000 --vus 4 --duration 0 --iterations 100 > /dev/null 2>&1
}

run() { # run NAME VUS: one measured run against the server started last
  local name=$1 n=$2 before after bench
  # shellcheck disable=SC2086 # BENCHFLAGS is a list of flags
  "$client" bench transfer --target "http://$addr" --accounts 10000 --no-setup --vus "$n" \
    --warmup "${warmup}s" --duration "$duration" ${BENCHFLAGS:-} --out "$out/$name.json" > "$out/$name.txt" 2>&1 &
  bench=$!
  sleep "$warmup" # the server's CPU counts from the end of the warm-up
  before=$(cpu_ticks "$pid")
  wait "$bench" || true
  after=$(cpu_ticks "$pid")
  jq --argjson cpu "$(((after - before) * 1000000 / ticks))" '. + {server_cpu_us: $cpu}' \
    "$out/$name.json" > "$out/$name.tmp" && mv "$out/$name.tmp" "$out/$name.json"
}

row() { # row NAME: one line of the table
  jq -r --arg name "$1" '
    (.totals.requests - .totals.failed) as $ok |
    [$name, .params.vus, (($ok / .totals.elapsed_s) | floor), .latency_ms.med, .latency_ms.p99,
     (.refused.count // 0), (.refused.latency_ms.med // 0), (.refused.latency_ms.p99 // 0),
     (if $ok > 0 then (.server_cpu_us / $ok * 10 | round / 10) else "-" end)] | @tsv' "$out/$1.json"
}

for i in $(seq 1 "$pairs"); do
  start_server
  run "overload-1x-$i" "$vus"
  stop_server
  start_server
  run "overload-10x-$i" "$((10 * vus))"
  stop_server
done

{
  printf 'run\tVUs\taccepted/s\taccepted p50 ms\taccepted p99 ms\trefused\trefused p50 ms\trefused p99 ms\tserver CPU µs per accepted\n'
  for i in $(seq 1 "$pairs"); do
    row "overload-1x-$i"
    row "overload-10x-$i"
  done
} | column -t -s $'\t'
