#!/bin/bash
# Back-to-back A/B of two surge binaries on the same workloads, for a machine whose CPU steal moves
# throughput between runs: each run reports throughput and the server's own CPU per operation
# (from /proc/PID/stat), the figure that steal disturbs least.
#   scripts/bench-ab.sh OLD_BINARY NEW_BINARY     (~15 min; needs wrk)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OLD=$1 NEW=$2 O=$PWD/bench-out/ab A=127.0.0.1:18410
mkdir -p $O
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
steal() { awk '/^cpu /{print $9}' /proc/stat; }
serve() { rm -rf $O/data; $1 serve --data $O/data --addr $A > $O/serve.log 2>&1 & SP=$!; until curl -sf http://$A/readyz >/dev/null; do sleep 0.1; done; T0=$(cpu $SP); S0=$(steal); }
# done N LABEL: prints the server's CPU µs per operation over N operations, and the steal ticks.
done_() { echo "  $2: server CPU $(( ($(cpu $SP)-T0)*10000/$1 )) µs per op, steal $(( $(steal)-S0 )) ticks"; kill $SP; wait $SP 2>/dev/null; }

echo "## ledger: surge bench transfer --vus 100 --duration 60s"
for b in $OLD $NEW $OLD $NEW; do
  serve $b; r=$($b bench transfer --target http://$A --vus 100 --duration 60s 2>/dev/null | grep http_reqs)
  echo "$b $r"; done_ "$(echo "$r" | awk '{print $2}')" transfer
done
for extra in "--wait 10s" ""; do
  echo "## spike 1M ${extra:-POST + GET}"
  for b in $OLD $NEW; do
    serve $b; $b bench spike --target http://$A -n 1000000 --events 4 --areas 100 --rows 20 --cols 20 $extra 2>/dev/null | grep -E 'completion|verdict' | sed "s|^|$b |"
    done_ 1000000 reservation
  done
done
for c in "64 get" "64 put" "1 get" "1 put"; do set -- $c
  echo "## key-value: wrk -c$1 $2, 10 s over 10,000 keys"
  for b in $OLD $NEW; do
    serve $b; KEYS=10000 wrk -t1 -c8 -d2s -s scripts/wrk/put.lua http://$A >/dev/null; T0=$(cpu $SP); S0=$(steal)
    r=$(KEYS=10000 wrk -t$([ $1 = 1 ] && echo 1 || echo 2) -c$1 -d10s -s scripts/wrk/$2.lua http://$A)
    echo "$b $(echo "$r" | grep Requests/sec)"; done_ "$(echo "$r" | awk '/requests in/{print $1}')" $2
  done
done
