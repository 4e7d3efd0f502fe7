#!/usr/bin/env bash
# restart-time.sh SNAPSHOT RUNS BINARY...: time to ready after kill -9.
# SNAPSHOT is a data directory left by kill -9 (restart-grow.sh makes
# them). For each of RUNS rounds and each BINARY in turn (A/B pairs,
# alternated), copies SNAPSHOT afresh (cp -a), starts BINARY serve
# --shards 2 on the copy and polls /readyz every 20 ms. Prints one line per
# start: wall time to the first 200, the process's CPU time (user + system
# from /proc/PID/stat) at that moment, the load average, and the recovery
# phases the log names. Extra serve flags: SERVE_FLAGS; a CPU profile of
# each recovery: PROFILE_DIR.
set -euo pipefail
SNAP=$1; RUNS=$2; shift 2
PORT=${PORT:-18125}; WORK=${WORK:-/tmp/restart-time.$$}
TICK=$(getconf CLK_TCK)
mkdir -p "$WORK"; PID=
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$WORK/data"' EXIT
once() { # once BINARY RUN
	local bin=$1 name prof=() start ms cpu
	name=$(basename "$bin")
	rm -rf "$WORK/data"; cp -a "$SNAP" "$WORK/data"; sync
	[ -n "${PROFILE_DIR:-}" ] && mkdir -p "$PROFILE_DIR" && prof=(--recovery-profile "$PROFILE_DIR/$name-$2.pprof")
	start=$(date +%s%N)
	# shellcheck disable=SC2086
	"$bin" serve --data "$WORK/data" --addr 127.0.0.1:$PORT --shards 2 ${SERVE_FLAGS:-} "${prof[@]}" >"$WORK/serve.log" 2>&1 &
	PID=$!
	until curl -sf http://127.0.0.1:$PORT/readyz >/dev/null; do
		kill -0 $PID 2>/dev/null || { echo "$name exited:"; cat "$WORK/serve.log"; exit 1; }
		sleep 0.02
	done
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	cpu=$(awk -v t="$TICK" '{printf "%d", ($14 + $15) * 1000 / t}' /proc/$PID/stat)
	printf '%-14s run %d  ready %5d ms  cpu %5d ms  load %s\n' "$name" "$2" "$ms" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)"
	grep -E 'recovery:|replayed|storage recovered' "$WORK/serve.log" | sed -E 's/^.*msg="?([^"]*)"? ?/    \1 /'
	kill $PID; wait $PID 2>/dev/null || true; PID=
}
for run in $(seq 1 "$RUNS"); do
	for bin in "$@"; do once "$bin" "$run"; done
done
