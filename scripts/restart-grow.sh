#!/usr/bin/env bash
# restart-grow.sh BINARY DIR [MILLIONS...]: grow a ledger history for
# restart-time.sh. Starts BINARY serve --shards 2 on DIR/data, drives
# `bench transfer --batch 8190 --vus 4 --accounts 10000` in turns, and each
# time the total crosses one of MILLIONS (default 1 5 10) million transfers
# kills the server with kill -9 and copies the data directory, as left, to
# DIR/snap-<N>m (cp -a). The server is killed at the end.
set -euo pipefail
BIN=$1; DIR=$2; shift 2
MILESTONES=("$@"); [ ${#MILESTONES[@]} -eq 0 ] && MILESTONES=(1 5 10)
PORT=${PORT:-18130}; URL=http://127.0.0.1:$PORT
mkdir -p "$DIR"; rm -rf "$DIR/data"; total=0; PID=
start_server() {
	"$BIN" serve --data "$DIR/data" --addr 127.0.0.1:$PORT --shards 2 >>"$DIR/grow-serve.log" 2>&1 &
	PID=$!
	until curl -sf $URL/readyz >/dev/null; do sleep 0.1; done
}
turn() { # turn DURATION [--no-setup]
	local n
	n=$(SURGE_TARGET=$URL "$BIN" bench transfer ${2:-} --batch 8190 --vus 4 --accounts 10000 \
		--duration "$1" --no-stall-meter --out "$DIR/turn.json" >/dev/null 2>&1 &&
		python3 -c "import json,sys;print(int(json.load(open(sys.argv[1]))['totals']['ops']))" "$DIR/turn.json")
	total=$((total + n)); echo "turn $1: +$n = $total transfers"
}
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null || true' EXIT
start_server
turn 5s
for m in "${MILESTONES[@]}"; do
	while [ $total -lt $((m * 1000000)) ]; do turn 20s --no-setup; done
	kill -9 $PID; wait $PID 2>/dev/null || true
	rm -rf "$DIR/snap-${m}m"; cp -a "$DIR/data" "$DIR/snap-${m}m"
	echo "$total" >"$DIR/snap-${m}m.transfers"
	echo "snapshot $DIR/snap-${m}m at $total transfers"
	start_server
done
