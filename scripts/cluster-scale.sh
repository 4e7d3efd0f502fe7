#!/usr/bin/env bash
# The scaling lab: the same ledger load (scripts/cluster-ab.sh) on 1, 2 and 3 surge nodes, each capped
# at the same CPU share with a cgroup of its own (cgroup v1 cpu.cfs_quota_us, as root), so that the
# nodes behave like separate small machines on one box. The runs go 1 2 3 3 2 1 nodes (a shared
# machine drifts; each count's two runs bracket the others), and it prints each run's line from
# cluster-ab.sh (accepted transfers/s, p99, CPU per accepted transfer of every node, of the
# broker(s) and of the load generator, the requests refused), then each node count's mean
# transfers/s and its ratio to one node's. With OUT, the runs' results are OUT/scale-a-Nnodes.json
# (1 2 3) and OUT/scale-b-Nnodes.json (3 2 1).
#
# Usage: KAFKA=host:port KAFKA_DIR=DIR [CPU_CAP=0.25] [OUT=DIR] scripts/cluster-scale.sh SECS BINARY
#   CPU_CAP is each node's share in CPUs (default 0.25); NODE_FLAGS, more `surge serve` flags for
#   every node (--peer=false: no peer links; --peer for builds where they are off by default). The
#   broker(s) and the load generator are not
#   capped: give the machine room for them (their CPU per transfer is printed). BENCHFLAGS and
#   PARTITIONS as for cluster-ab.sh (default here --vus 1000 --accounts 1000: enough clients that
#   each of three capped nodes always has requests waiting, as a node at its capacity has; one
#   node alone refuses some of them, 503, which count in neither its rate nor its CPU). e.g.
#     d=/tmp/k; k=$(scripts/kafka.sh start -d $d)
#     KAFKA=$k KAFKA_DIR=$d scripts/cluster-scale.sh 20 bin/surge
#     scripts/kafka.sh stop $d
set -euo pipefail
secs=$1 bin=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ "$(id -u)" = 0 ] || { echo "cluster-scale.sh: needs root for the cgroups" >&2; exit 1; }
[ -w /sys/fs/cgroup/cpu ] || { echo "cluster-scale.sh: no cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }
export CPU_CAP=${CPU_CAP:-0.25} BENCHFLAGS=${BENCHFLAGS:---vus 1000 --accounts 1000}
echo "every node capped at $CPU_CAP CPUs; load: $BENCHFLAGS; $secs s per run"
runs=()
for n in 1 2 3; do runs+=("scale-a:$bin:$n:${NODE_FLAGS:-}"); done
for n in 3 2 1; do runs+=("scale-b:$bin:$n:${NODE_FLAGS:-}"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$here/cluster-ab.sh" "$secs" "${runs[@]}" | tee "$log"
awk '
  $1 ~ /^scale-[ab]$/ { n = $2; sub(/n:$/, "", n); r = $3; sub(/\/s$/, "", r); sum[n] += r; cnt[n]++ }
  END {
    if (!cnt[1]) { print "no run of one node finished"; exit 1 }
    one = sum[1] / cnt[1]
    for (n = 1; n <= 3; n++) if (cnt[n]) printf "%d node(s): %.0f transfers/s (mean of %d), %.2fx one node\n", n, sum[n] / cnt[n], cnt[n], sum[n] / cnt[n] / one
  }' "$log"
