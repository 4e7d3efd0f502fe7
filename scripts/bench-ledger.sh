#!/usr/bin/env bash
# Reproduces the ledger figures of docs/BENCHMARKS.md on this machine: for the default shard count
# and for --shards 1, start a fresh server, set up 50,000 funded accounts, run
# `surge bench transfer` three times (100 VUs, 60 s), and (default shards only) the batch API three
# times; print each run's summary lines and the server's CPU time per run.
#
# Usage: scripts/bench-ledger.sh [OUTDIR]   (default: ./bench-out; JSON results land there)
# Takes about 12 minutes. Run it on an otherwise idle machine.
set -euo pipefail
out=${1:-bench-out}
addr=127.0.0.1:18100
mkdir -p "$out"
go build -o "$out/surge" ./cmd/surge
surge="$out/surge"

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run() { # run NAME PID ARGS... : one measured bench run
  local name=$1 pid=$2; shift 2
  local t0 t1
  echo "== $name $(date -u +%FT%TZ)"
  t0=$(cpu_ticks "$pid")
  "$surge" bench transfer --target "http://$addr" --no-setup --out "$out/$name.json" "$@" 2>/dev/null |
    grep -E 'http_req_duration|http_reqs|transfers\.|http_req_failed|load_generator|verdict'
  t1=$(cpu_ticks "$pid")
  echo "server CPU: $(( (t1 - t0) / $(getconf CLK_TCK) )) s; RSS: $(ps -o rss= -p "$pid") kB"
}

for cfg in default:"" shards1:"--shards 1"; do
  name=${cfg%%:*}
  rm -rf "$out/data-$name"
  # shellcheck disable=SC2086
  "$surge" serve --data "$out/data-$name" --addr "$addr" ${cfg#*:} > "$out/serve-$name.log" 2>&1 &
  pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  "$surge" bench transfer --target "http://$addr" --iterations 1 --vus 1 --duration 0 > /dev/null
  for i in 1 2 3; do run "transfer-$name-$i" "$pid" --vus 100 --duration 60s; done
  if [ "$name" = default ]; then
    for i in 1 2 3; do run "batch-$name-$i" "$pid" --vus 4 --batch 8190 --duration 60s; done
  fi
  kill "$pid"
  wait "$pid" || true
done
