#!/usr/bin/env bash
# Alternating A/B runs of wallet calls, each on a fresh server: for every LABEL:BINARY argument,
# start BINARY serve --shards 1 --bcrypt-cost 4 on an empty data directory, run `surge bench wallet
# --call Transfer -c 20 --duration 10s` to give the pairs conversations and histories, then each of
# CALLS (default "GetChatFriendList GetFriendList") for SECS seconds at -c 20, printing requests/s
# and the server's CPU per call, measured from the call's first progress line (after its setup) to
# its end, then the load generator's CPU per call as it reports it. Give the binaries in ABBA order:
# this VM's speed drifts within minutes.
#
# Usage: [CALLS="GetHistory"] scripts/wallet-ab.sh SECS LABEL:BINARY ...
set -euo pipefail
secs=$1; shift
addr=127.0.0.1:18400
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run() { # run BINARY PID CALL SECS: prints "CALL rps server-µs/call, client client-µs per call"
  local log=$out/bench.log
  "$1" bench wallet --target "http://$addr" --call "$3" -c 20 --duration "${4}s" > "$log" 2>&1 &
  local bp=$!
  until grep -q " requests " "$log" || ! kill -0 "$bp" 2> /dev/null; do sleep 0.05; done
  local t0 n0
  t0=$(cpu_ticks "$2")
  n0=$(grep " requests " "$log" | head -1 | awk '{gsub(",","",$2); print $2}')
  wait "$bp"
  local t1 count rps
  t1=$(cpu_ticks "$2")
  count=$(grep -E "^\s*Count:" "$log" | head -1 | awk '{print $NF}')
  rps=$(grep -i "requests/sec" "$log" | head -1 | awk '{print $NF}')
  local client
  client=$(grep "^Load generator CPU" "$log" | sed 's/.*, //')
  echo "$3 $rps rps $(awk -v c=$((t1 - t0)) -v n=$((count - n0)) -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", c*1e6/hz/n}') µs/call, client $client"
}

for spec in "$@"; do
  IFS=: read -r label bin <<< "$spec"
  "$bin" serve --data "$out/data" --addr "$addr" --shards 1 --bcrypt-cost 4 > "$out/serve.log" 2>&1 &
  pid=$!
  until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
  run "$bin" "$pid" Transfer 10 > /dev/null
  line="$label:"
  for call in ${CALLS:-GetChatFriendList GetFriendList}; do
    line="$line | $(run "$bin" "$pid" "$call" "$secs")"
  done
  kill "$pid"; wait "$pid" 2> /dev/null || true
  rm -rf "$out/data"
  echo "$line"
done
