#!/usr/bin/env bash
# Alternating A/B runs of the ledger load on a surge cluster: for every LABEL:BINARY:NODES argument,
# start NODES nodes of BINARY (`surge serve --kafka`, fresh data directories, a cluster name of its
# own so that no run reads another's topics) on the broker(s) KAFKA, set up the accounts and warm
# up (every node learns the receivers), then run `surge bench transfer` for SECS seconds against
# all the nodes and print the rate of transfers the nodes accepted, p99, and the CPU per accepted
# transfer of each node, of the broker(s) and of the load generator, read from /proc/PID/stat
# around the measured run only (the broker's JIT compiler and garbage collector threads' share
# beside it: "broker 80 (JIT 9 GC 7)"), and the requests that failed, which count in neither (the
# load's http_req_failed: refusals, 503, under overload; any other error too); then the nodes' Kafka requests per 1,000 transfers by client and kind (their
# surge_cluster_kafka_requests_total, on builds that export it) on a second line. Give the
# binaries in ABBA order: on a shared machine only back-to-back pairs compare.
#
# NODES 0 runs one embedded node (no Kafka) the same way, to compare with. A fourth field gives
# that run's nodes more `surge serve` flags, space-separated: new:bin/surge:3:--peer=false (peer
# links off; they are on by default, and builds from before that need --peer for them).
#
# Usage: KAFKA=host:port KAFKA_DIR=DIR [OUT=DIR] [PROFILE=DIR] scripts/cluster-ab.sh SECS LABEL:BINARY:NODES[:FLAGS] ...
#   KAFKA_DIR is the directory scripts/kafka.sh start -d was given (its node-*/pid are the
#   brokers). e.g.
#     d=/tmp/k; k=$(scripts/kafka.sh start -d $d)
#     KAFKA=$k KAFKA_DIR=$d scripts/cluster-ab.sh 15 old:/tmp/surge-old:1 new:/tmp/surge-new:1 \
#       new:/tmp/surge-new:1 old:/tmp/surge-old:1
#     scripts/kafka.sh stop $d
#   BENCHFLAGS (default --vus 200 --accounts 500), PARTITIONS (default 6), PORT_BASE (the nodes
#   listen on 127.0.0.1:PORT_BASE+1…; default 18500).
#   OUT=DIR writes each run's result to DIR/LABEL-NODESnodes.json; PROFILE=DIR writes a 10 s CPU
#   profile of the first node, taken mid-run, to DIR/LABEL-NODESnodes.pprof (go tool pprof), and
#   one of the broker(s) to DIR/LABEL-NODESnodes-broker-PID.jfr (jfr print --stack-depth 64
#   --events jdk.ExecutionSample).
#   CPU_CAP=F (root, cgroup v1) caps every node at F CPUs (e.g. 0.25) with a cgroup of its own
#   (cpu.cfs_quota_us) and runs it with GOMAXPROCS at F rounded up (NODE_GOMAXPROCS to set
#   another), so that nodes behave like separate small machines; the broker(s) and the load
#   generator are not capped. scripts/cluster-scale.sh uses it.
set -euo pipefail
secs=$1; shift
: "${KAFKA:?KAFKA=host:port of the brokers}" "${KAFKA_DIR:?KAFKA_DIR=the dir given to scripts/kafka.sh start -d}"
bench=${BENCHFLAGS:---vus 200 --accounts 500}
work=$(mktemp -d /tmp/cluster-ab.XXXXXX)
# shellcheck source=scripts/cluster-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
trap 'stop_nodes; rm -rf "$work"' EXIT
# requests: every node's Kafka requests (surge_cluster_kafka_requests_total) and rounds
# (surge_cluster_rounds_total, surge_cluster_round_commands_total) so far, summed over the nodes:
# "client kind count" lines, and "@rounds outcome count", "@commands read count"
requests() {
  local t
  for t in "${targets[@]}"; do curl -s "$t/metrics"; done |
    awk -F'"' '/^surge_cluster_kafka_requests_total\{/ {n[$2 " " $4] += last($0)}
      /^surge_cluster_rounds_total\{/ {n["@rounds " $2] += last($0)}
      /^surge_cluster_round_commands_total / {n["@commands read"] += last($0)}
      function last(l,  f) {split(l, f, " "); return f[length(f)]}
      END {for (k in n) print k, n[k]}'
}
# per_thousand BEFORE AFTER N: the requests between two snapshots of requests per 1,000 of N
# transfers, by client and kind, and their total; then the rounds and commands per round
per_thousand() {
  printf "%s\n--\n%s\n" "$1" "$2" | awk -v n="$3" '
    $1 == "--" {after = 1; next}
    !after {b[$1 " " $2] = $3; next}
    {d = $3 - b[$1 " " $2]}
    $1 == "@rounds" {r[$2] = d; next}
    $1 == "@commands" {cmds = d; next}
    {d = d * 1000 / n; if (d < 0.5) next; tot += d; by[$1] = by[$1] sprintf(" %s %.0f", $2, d)}
    END {
      printf "Kafka requests per 1,000 transfers: %.0f", tot; for (c in by) printf " | %s:%s", c, by[c]
      rounds = r["committed"] + r["not_committed"]
      if (rounds) printf " || rounds %d (%d not committed), %.1f commands each", rounds, r["not_committed"], cmds / rounds
      print ""
    }'
}
run=0
for spec in "$@"; do
  IFS=: read -r label bin nodes flags <<< "$spec"
  run=$((run + 1)); name="ab$$-$run"
  # shellcheck disable=SC2206 # a label's serve flags are words
  cluster=(--kafka "$KAFKA" --cluster "$name" --partitions "${PARTITIONS:-6}" $flags)
  if [ "$nodes" = 0 ]; then cluster=(); fi # one embedded node, to compare with
  start_nodes "$name" "$bin" "$nodes" "${cluster[@]}" || exit 1
  t=$(IFS=,; echo "${targets[*]}")
  # shellcheck disable=SC2086 # bench flags are words
  "$bin" bench transfer --target "$t" $bench --duration 0 --iterations 2000 --vus 50 > "$work/warmup.log" 2>&1 ||
    { echo "$label: the setup and warm-up failed:" >&2; tail -5 "$work/warmup.log" >&2; }
  b0=$(sum_ticks $(brokers)); read -r jit0 gc0 < <(jvm_ticks $(brokers)); n0=(); for p in "${pids[@]}"; do n0+=("$(ticks "$p")"); done
  st0=$(head -1 /proc/stat)
  rq0=$(requests)
  if [ -n "${PROFILE:-}" ]; then
    (sleep $((secs / 3)); profile_mid "$PROFILE/$label-${nodes}nodes" "${targets[0]}") &
    prof=$!
  fi
  # shellcheck disable=SC2086
  res=$(/usr/bin/time -f "lg %U %S" "$bin" bench transfer --target "$t" $bench --no-setup --duration "${secs}s" \
    ${OUT:+--out "$OUT/$label-${nodes}nodes.json"} 2>&1 || true)
  st1=$(head -1 /proc/stat)
  read -r jit1 gc1 < <(jvm_ticks $(brokers))
  rq1=$(requests)
  [ -n "${prof:-}" ] && wait "$prof"
  # n: the transfers the nodes accepted; a refused one (503) is not a transfer done
  all=$(echo "$res" | awk '/http_reqs/ {print $2}')
  failed=$(echo "$res" | awk '/http_req_failed/ {print $4}')
  n=$(( ${all:-0} - ${failed:-0} ))
  [ "$n" -gt 0 ] || { echo "$label: no transfer done: $res" | tail -5 >&2; stop_nodes; continue; }
  rate=$(echo "$res" | awk -v ok="$n" -v all="$all" '/http_reqs/ {sub(/\/s$/, "", $3); printf "%.1f/s", $3 * ok / all}')
  per() { echo $(( $1 * 1000000 / hz / n )); }
  nodecpu=""; i=0
  for p in "${pids[@]}"; do nodecpu+=" n$((i + 1)) $(per $(( $(ticks "$p") - n0[i] )))"; i=$((i + 1)); done
  lg=$(echo "$res" | awk '/^lg / {printf "%d", ($2+$3)*1e6}')
  machine=$(machine_share "$st0" "$st1")
  echo "$label ${nodes}n: $rate | $(echo "$res" | grep http_req_duration | grep -oE 'p\(99\)=[^ ]+') | µs CPU per transfer:$nodecpu broker $(per $(( $(sum_ticks $(brokers)) - b0 ))) (JIT $(per $((jit1 - jit0))) GC $(per $((gc1 - gc0)))) loadgen $((lg / n)) | $machine | refused ${failed:-0}"
  [ -z "$rq1" ] || echo "  $(per_thousand "$rq0" "$rq1" "$n")"
  stop_nodes
done
