#!/usr/bin/env bash
# Server CPU per reservation over HTTP/2, two surge binaries side by side, for a machine that others
# share: each pair serves both binaries at once, each on a fresh data directory, and runs the same
# `surge bench spike --http2 --conns 16 -c 1000` against each at once, so that whatever else loads
# the machine loads both alike. Pairs alternate which client starts first. Each line gives the
# spike's server_cpu (process_cpu_seconds_total from /metrics), the server's allocations per
# reservation (go_memstats_mallocs_total) and the completion time. The load generator is NEW's.
#
# Usage: scripts/h2-cost-ab.sh OLD NEW [REQUESTS] [PAIRS]   (default -n 40000, 3 pairs)
# OLD_FLAGS and NEW_FLAGS, if set, are added to each binary's `surge serve`: one binary against
# itself with two settings, e.g. OLD_FLAGS=--http2-server=net NEW_FLAGS=--http2-server=surge.
# PORT_BASE (default 18770): the servers listen on 127.0.0.1:PORT_BASE+1 and +2, so that two runs
# side by side can each take ports of their own.
# On an idle machine the sequential command of docs/BENCHMARKS.md gives the absolute figure.
set -uo pipefail
OLD=$1 NEW=$2 N=${3:-40000} PAIRS=${4:-3}
OLD_FLAGS=${OLD_FLAGS:-} NEW_FLAGS=${NEW_FLAGS:-} PORT_BASE=${PORT_BASE:-18770}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

mallocs() { curl -s "http://$1/metrics" | awk '/^go_memstats_mallocs_total/ {printf "%d", $2}'; }

pair() { # pair FIRST FIRST_FLAGS SECOND SECOND_FLAGS: both served and loaded at once
  local bins=("$1" "$3") flags=("$2" "$4") addrs=("127.0.0.1:$((PORT_BASE + 1))" "127.0.0.1:$((PORT_BASE + 2))") sp=() cp=() m0=()
  for i in 0 1; do
    rm -rf "$OUT/data$i"
    # shellcheck disable=SC2086 # the flags are words
    "${bins[$i]}" serve --data "$OUT/data$i" --addr "${addrs[$i]}" ${flags[$i]} > "$OUT/serve$i.log" 2>&1 &
    sp+=($!)
  done
  for i in 0 1; do until curl -sf "http://${addrs[$i]}/readyz" > /dev/null; do sleep 0.1; done; done
  for i in 0 1; do
    m0+=("$(mallocs "${addrs[$i]}")")
    "$NEW" bench spike --target "http://${addrs[$i]}" --http2 --conns 16 -c 1000 -n "$N" --events 4 --areas 100 \
      --no-stall-meter > "$OUT/spike$i.out" 2>&1 &
    cp+=($!)
  done
  for i in 0 1; do
    wait "${cp[$i]}"
    printf '%s: %s; %d mallocs per reservation; %s\n' "${bins[$i]}${flags[$i]:+ ${flags[$i]}}" \
      "$(grep -o 'server_cpu.*' "$OUT/spike$i.out" | sed 's/^server_cpu[. :]*//')" \
      $(( ($(mallocs "${addrs[$i]}") - ${m0[$i]}) / N )) \
      "$(grep -o 'completion_time.*' "$OUT/spike$i.out" | sed 's/[. ]*:/:/')"
  done
  for i in 0 1; do kill "${sp[$i]}"; wait "${sp[$i]}" 2> /dev/null; rm -rf "$OUT/data$i"; done
}

echo "# surge bench spike --http2 --conns 16 -c 1000 -n $N, both binaries at once; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
for p in $(seq 1 "$PAIRS"); do
  if [ $((p % 2)) = 1 ]; then pair "$OLD" "$OLD_FLAGS" "$NEW" "$NEW_FLAGS"; else pair "$NEW" "$NEW_FLAGS" "$OLD" "$OLD_FLAGS"; fi
done
