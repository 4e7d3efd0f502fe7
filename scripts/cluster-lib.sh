# shellcheck shell=bash
# Functions shared by the cluster measurement scripts (cluster-ab.sh, cluster-spike.sh): source it.
# They need KAFKA_DIR (the directory scripts/kafka.sh start -d was given) and $work (a scratch
# directory of the caller's); start_nodes fills the arrays pids, targets and cgroups.

hz=$(getconf CLK_TCK)
# ticks PID: the CPU time of process PID so far, in clock ticks
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
brokers() { cat "$KAFKA_DIR"/node-*/pid; }
sum_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(ticks "$p"))); done; echo "$t"; }
# jvm_ticks PID...: the CPU time so far of the JVMs' JIT compiler threads and of their garbage
# collector's threads, in clock ticks: "JIT GC". A broker compiles for many minutes after its
# start; a long-running one no longer does, so what it spends on the rest is its steady cost.
jvm_ticks() {
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/stat 2>/dev/null; done |
    awk '{name = $0; sub(/^[^(]*\(/, "", name); sub(/\).*$/, "", name)
      rest = $0; sub(/^.*\) /, "", rest); split(rest, f, " ")
      if (name ~ /^C[12] CompilerThre/) jit += f[12] + f[13]
      else if (name ~ /^(GC Thread|G1 )/) gc += f[12] + f[13]}
      END {print jit + 0, gc + 0}'
}

# capped NAME CMD...: runs CMD in a cgroup of its own capped at CPU_CAP CPUs, or as is without one.
# A capped process stands for a machine of that many CPUs, rounded up: its GOMAXPROCS is that
# count (NODE_GOMAXPROCS to set another). Go's own default under a cgroup's limit is at least 2,
# so a node capped below one CPU would otherwise run two processors on a quota that a one-CPU
# machine runs with one.
capped() {
  local name=$1; shift
  [ -n "${CPU_CAP:-}" ] || exec "$@"
  local g=/sys/fs/cgroup/cpu/$name
  mkdir -p "$g"
  echo 100000 > "$g/cpu.cfs_period_us"
  awk -v f="$CPU_CAP" 'BEGIN {printf "%d\n", f * 100000}' > "$g/cpu.cfs_quota_us"
  echo "$BASHPID" > "$g/cgroup.procs"
  GOMAXPROCS=${NODE_GOMAXPROCS:-$(awk -v f="$CPU_CAP" 'BEGIN {n = int(f); if (n < f) n++; print n}')} exec "$@"
}

pids=() targets=() cgroups=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=()
  for g in "${cgroups[@]}"; do rmdir "$g" 2>/dev/null || true; done; cgroups=()
}

# start_nodes NAME BINARY NODES [SERVE FLAGS...]: starts NODES nodes of BINARY on ports PORT_BASE+1…
# (PORT_BASE defaults to 18500),
# data and logs under $work/NAME-nI, and returns once every one is ready 6 times in a row (a node
# joining the group moves the others' partitions). NODES 0 starts one node with the flags as given.
start_nodes() {
  local name=$1 bin=$2 nodes=$3 i addr steady; shift 3
  targets=()
  for i in $(seq 1 "$((nodes > 0 ? nodes : 1))"); do
    addr=127.0.0.1:$((${PORT_BASE:-18500} + i))
    capped "$name-n$i" "$bin" serve --addr "$addr" --data "$work/$name-n$i" "$@" > "$work/$name-n$i.log" 2>&1 &
    pids+=($!); targets+=("http://$addr")
    [ -z "${CPU_CAP:-}" ] || cgroups+=("/sys/fs/cgroup/cpu/$name-n$i")
  done
  steady=0
  until [ "$steady" = 6 ]; do
    steady=$((steady + 1))
    for i in "${!targets[@]}"; do
      kill -0 "${pids[i]}" 2> /dev/null || { tail -3 "$work/$name-n$((i + 1)).log" >&2; return 1; }
      curl -sf "${targets[i]}/readyz" > /dev/null || steady=0
    done
    sleep 0.5
  done
}

# machine_share STAT0 STAT1: the machine's steal and idle shares between two first lines of /proc/stat
machine_share() {
  printf "%s\n%s\n" "$1" "$2" | awk 'NR==1{for(i=2;i<=11;i++)a[i]=$i} NR==2{t=0;for(i=2;i<=11;i++){d[i]=$i-a[i];t+=d[i]} printf "steal %.1f%% idle %.1f%%", 100*d[9]/t, 100*d[5]/t}'
}

# profile_mid PREFIX URL: a 10 s CPU profile of the node at URL (PREFIX.pprof) and, at the same
# time, of each broker (JFR, Java sampled every 1 ms: PREFIX-broker-PID.jfr)
profile_mid() {
  local p
  for p in $(brokers); do
    jcmd "$p" JFR.start name=surge-profile duration=10s settings=profile method-profiling=max \
      filename="$1-broker-$p.jfr" > /dev/null 2>&1 || echo "no JFR of broker $p (jcmd)" >&2
  done
  curl -s -o "$1.pprof" "$2/debug/pprof/profile?seconds=10"
  sleep 1 # the JFR recordings end with the node's profile and are written just after
}
