#!/usr/bin/env bash
# surge.wallet.v1 against VMR's vmr.* face on one server, in alternating pairs: starts BINARY serve
# (default flags: two shards, --bcrypt-cost 10) on an empty data directory, then for each of CALLS
# (default: report 001's five) runs `surge bench wallet --call CALL -c 20 --duration SECS
# --warmup 2s --users 200` PAIRS times in ABBA order (surge vmr vmr surge ...), each writing
# OUT/faces-CALL-API-N.json. The first run sets up the users; every later run reuses them.
#
# Usage: [CALLS="GetBalance"] [PAIRS=2] [OUT=docs/bench] scripts/wallet-faces-ab.sh SECS BINARY
set -euo pipefail
secs=$1 bin=$2
out=${OUT:-docs/bench}
addr=127.0.0.1:18410
data=$(mktemp -d)
"$bin" serve --data "$data" --addr "$addr" > "$data.log" 2>&1 &
pid=$!
trap 'kill $pid 2> /dev/null; wait $pid 2> /dev/null; rm -rf "$data" "$data.log"' EXIT
until curl -sf "http://$addr/readyz" > /dev/null; do sleep 0.1; done
mkdir -p "$out"
for call in ${CALLS:-GetBalance GetHistory GetFriendList GetChatFriendList Transfer}; do
  order=""
  for ((i = 1; i <= ${PAIRS:-2}; i++)); do
    if ((i % 2)); then order="$order surge:$i vmr:$i"; else order="$order vmr:$i surge:$i"; fi
  done
  for run in $order; do
    IFS=: read -r api n <<< "$run"
    "$bin" bench wallet --target "http://$addr" --api "$api" --call "$call" -c 20 --duration "${secs}s" \
      --warmup 2s --users 200 --out "$out/faces-$call-$api-$n.json" > "$data.bench" 2>&1
    printf '%-17s %-5s %s  %9s rps  p50 %s  p99 %s  stalls %s\n' "$call" "$api" "$n" \
      "$(grep -i 'requests/sec' "$data.bench" | awk '{print $NF}')" \
      "$(grep -E '^ *50 % in' "$data.bench" | awk '{print $(NF-1) $NF}')" \
      "$(grep -E '^ *99 % in' "$data.bench" | awk '{print $(NF-1) $NF}')" \
      "$(grep '^Machine stalls' "$data.bench" | sed 's/.*run: //; s/ of the run.*//')"
  done
done
rm -f "$data.bench"
