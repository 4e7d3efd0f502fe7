#!/usr/bin/env bash
# ticket-master's own Go client over HTTP/2, as seed report 003 ran it: four processes at once, each
# `--http2 -n N -a 10 -c 4 -e prod` (go-retryablehttp over x/net/http2 v0.37: one connection per
# -c client, thousands of streams queued on each, past the server's stream limit). Each run is on a
# fresh server, alternating surge and the empty h2c handler (scripts/emptyhttp -h2c), and prints
# the wall time of the four processes, their errors ("err results"), the server's CPU (from
# /proc/PID/stat), its peak RSS, the most connections open at once and, for surge, what it refused
# (surge_front_rejected_total) and the HTTP/2 protocol errors it answered
# (surge_front_http2_errors_total).
#
# The client is built from ticket-master's repository at a pinned tag, cloned into a cache outside
# this repository (TM_SRC names a checkout of it instead). The client creates its own event
# (POST /v1/event) and reads its areas back from the answer.
#
# Usage: scripts/tm-client.sh [RUNS] [REQUESTS]   (default 5 pairs of runs, -n 25000)
#   SURGE=path  a surge binary instead of building ./cmd/surge; SURGE_FLAGS=... extra serve flags
#   OUT=dir     where logs go (default bench-out/tm-client); SERVERS="surge" runs surge alone
#   PROFILE=S   takes S seconds of surge's CPU profile from the start of each surge run
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-5} N=${2:-25000}
TM_TAG=v0.0.22
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/surge/ticket-master-$TM_TAG
OUT=${OUT:-$PWD/bench-out/tm-client} A=127.0.0.1:18430
mkdir -p "$OUT" "$CACHE"

client=$CACHE/go-client
if [ ! -x "$client" ]; then
  src=${TM_SRC:-$CACHE/src}
  [ -d "$src" ] || git clone -q --depth 1 --branch $TM_TAG https://github.com/tall15421542-lab/ticket-master "$src" || exit 1
  (cd "$src/scripts/perf/go-client" && go build -o "$client" .) || exit 1
fi
SURGE=${SURGE:-}
if [ -z "$SURGE" ]; then
  SURGE=$OUT/surge
  go build -o "$SURGE" ./cmd/surge || exit 1
fi
go build -o "$OUT/emptyhttp" ./scripts/emptyhttp || exit 1

cpu() { awk '{printf "%.1f", ($14+$15)/100}' "/proc/$1/stat"; }
metric() { # metric NAME: the counter's series, "label=value count" joined by commas, or 0
  curl -s "http://$A/metrics" | awk -v m="$1" 'index($0, m "{") == 1 && $NF > 0 {
    sub("^" m "[{]", ""); sub("[}]", ""); gsub("\"", ""); s = s sep $1 " " $2; sep = ", "
  } END {print s ? s : 0}'
}

conns_peak() { # conns_peak PID...: the most connections open to the server while the PIDs run
  local peak=0 n
  while kill -0 "$@" 2> /dev/null; do
    n=$(ss -Htn state established "( sport = :${A##*:} )" | wc -l)
    peak=$((n > peak ? n : peak))
    sleep 1
  done
  echo $peak
}

start() { # start surge|empty: a fresh server, its pid in SP
  if [ "$1" = surge ]; then
    rm -rf "$OUT/data"
    # shellcheck disable=SC2086
    "$SURGE" serve --data "$OUT/data" --addr $A ${SURGE_FLAGS:-} > "$OUT/serve.log" 2>&1 & SP=$!
    until curl -sf "http://$A/readyz" > /dev/null; do sleep 0.1; done
  else
    "$OUT/emptyhttp" -h2c -addr $A > "$OUT/empty.log" 2>&1 & SP=$!
    until curl -s -o /dev/null "http://$A/"; do sleep 0.1; done
  fi
}

run() { # run surge|empty I
  local name=$1 i=$2 t0 t1 errs=0 extra=
  start "$name"
  t0=$(date +%s.%N)
  local clients=()
  for p in 1 2 3 4; do
    timeout 600 "$client" --host $A --http2 -n "$N" -a 10 -c 4 -e prod > "$OUT/$name-$i-$p.log" 2>&1 &
    clients+=($!)
  done
  conns_peak "${clients[@]}" > "$OUT/conns" &
  if [ -n "${PROFILE:-}" ] && [ "$name" = surge ]; then
    curl -s -o "$OUT/$name-$i.pprof" "http://$A/debug/pprof/profile?seconds=$PROFILE" &
  fi
  wait "${clients[@]}"
  t1=$(date +%s.%N)
  wait $(jobs -p | grep -vx "$SP")
  extra=", peak connections $(cat "$OUT/conns")"
  for p in 1 2 3 4; do
    e=$(grep -o '"err results: [0-9]*' "$OUT/$name-$i-$p.log" | grep -o '[0-9]*$')
    errs=$((errs + ${e:-$N}))
  done
  if [ "$name" = surge ]; then
    extra="$extra; refused: $(metric surge_front_rejected_total); HTTP/2 errors: $(metric surge_front_http2_errors_total)"
  fi
  printf '%-5s run %d: wall %.1f s, client errors %d, server CPU %s s, peak RSS %s MB, load %s%s\n' \
    "$name" "$i" "$(echo "$t1 - $t0" | bc)" "$errs" "$(cpu $SP)" "$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$SP/status")" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$extra"
  kill "$SP"
  wait "$SP" 2> /dev/null
}

echo "# 4 × ticket-master go-client $TM_TAG --http2 -n $N -a 10 -c 4 -e prod; $(nproc) CPUs"
for i in $(seq 1 "$RUNS"); do
  for server in ${SERVERS:-empty surge}; do run "$server" "$i"; done
done
rm -rf "$OUT/data"
