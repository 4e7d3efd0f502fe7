#!/usr/bin/env bash
# Ticketing's spike on a surge cluster: NODES nodes of BINARY (`surge serve --kafka`, fresh data
# directories, a cluster name of its own) on the broker(s) KAFKA, then `surge bench spike` against
# all of them (--target each): by default 1,000,000 reservations over 4 events × 100 areas of
# 20×20 seats (160,000 seats), over HTTP/2 (h2c), two connections to each node, whose 250 streams
# each hold the 1,000 workers' requests at once. It prints the spike's summary (completion time, latency, double
# bookings, verdict) and the CPU time of each node, of the broker(s) and of the load generator,
# read from /proc/PID/stat around the spike only, in all and per reservation, and how each node
# answered the reservation reads (from the settled reservations it remembers, or through a round;
# "-" for a build without the metric).
#
# Usage: KAFKA=host:port KAFKA_DIR=DIR [NODES=3] [PROFILE=DIR] scripts/cluster-spike.sh BINARY [SPIKE FLAGS...]
#   KAFKA_DIR is the directory scripts/kafka.sh start -d was given (its node-*/pid are the
#   brokers). SPIKE FLAGS replace the default `-n 1000000 --events 4 --areas 100 --http2 --conns
#   2×NODES` (without --http2: a connection per worker, HTTP/1.1). PARTITIONS
#   (default 6) and PORT_BASE as for cluster-ab.sh. NODE_FLAGS are added to every node's
#   `surge serve` (e.g. "--max-inflight-requests 256"). PROFILE=DIR writes 10 s CPU profiles, taken a
#   few seconds into the spike, of the first node (DIR/spike.pprof) and of the broker(s)
#   (DIR/spike-broker-PID.jfr). e.g.
#     d=/tmp/k; k=$(scripts/kafka.sh start -d $d)
#     KAFKA=$k KAFKA_DIR=$d scripts/cluster-spike.sh bin/surge
#     scripts/kafka.sh stop $d
set -euo pipefail
bin=$1; shift
: "${KAFKA:?KAFKA=host:port of the brokers}" "${KAFKA_DIR:?KAFKA_DIR=the dir given to scripts/kafka.sh start -d}"
flags=("$@")
nodes=${NODES:-3}
[ ${#flags[@]} -gt 0 ] || flags=(-n 1000000 --events 4 --areas 100 --http2 --conns $((2 * nodes)))
work=$(mktemp -d /tmp/cluster-spike.XXXXXX)
# shellcheck source=scripts/cluster-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
trap 'stop_nodes; rm -rf "$work"' EXIT
name="spike$$"
start_nodes "$name" "$bin" "$nodes" --kafka "$KAFKA" --cluster "$name" --partitions "${PARTITIONS:-6}" ${NODE_FLAGS:-} || exit 1
t=$(IFS=,; echo "${targets[*]}")
b0=$(sum_ticks $(brokers)); n0=(); for p in "${pids[@]}"; do n0+=("$(ticks "$p")"); done
st0=$(head -1 /proc/stat)
if [ -n "${PROFILE:-}" ]; then
  (sleep 5; profile_mid "$PROFILE/spike" "${targets[0]}") &
  prof=$!
fi
status=0
/usr/bin/time -o "$work/lg" -f "%U %S" "$bin" bench spike --target "$t" "${flags[@]}" > "$work/spike.out" 2>&1 || status=$?
st1=$(head -1 /proc/stat)
[ -n "${prof:-}" ] && wait "$prof"
reads="reservation reads answered from memory / through rounds:"
for u in "${targets[@]}"; do
  reads+=" $(curl -s "$u/metrics" | awk '/^surge_cluster_reservation_reads_total\{answer="memory"\}/ {m = $2} /^surge_cluster_reservation_reads_total\{answer="round"\}/ {r = $2} END {if (m == "") print "-"; else printf "%d/%d", m, r}')"
done
grep -E 'reservation_latency|server_processing|completion_time|sold_out|seats_sold|reservations\.|retries_503|double_bookings|failed|verdict|machine_stalls' "$work/spike.out" || tail -20 "$work/spike.out"
n=$(awk '/reservations\.\.\./ {for (i = 2; i <= NF; i++) if ($i ~ /^[0-9,]+$/) {gsub(/,/, "", $i); s += $i}} END {print s + 0}' "$work/spike.out")
secs() { awk -v t="$1" -v hz="$hz" 'BEGIN {printf "%.1f", t / hz}'; }
per() { [ "$n" -gt 0 ] && echo "$(( $1 * 1000000 / hz / n )) µs" || echo "-"; }
line="CPU (s, per reservation):"; i=0; total=0
for p in "${pids[@]}"; do
  d=$(( $(ticks "$p") - n0[i] )); total=$((total + d)); i=$((i + 1))
  line+=" n$i $(secs "$d") ($(per "$d"))"
done
d=$(( $(sum_ticks $(brokers)) - b0 )); total=$((total + d))
line+=" broker $(secs "$d") ($(per "$d")) | nodes + broker $(secs "$total") ($(per "$total"))"
lg=$(awk -v hz="$hz" '{printf "%d", ($1 + $2) * hz}' "$work/lg" 2>/dev/null || echo 0)
echo "$line | loadgen $(secs "$lg") | $n reservations | $(machine_share "$st0" "$st1")"
echo "$reads"
exit "$status"
