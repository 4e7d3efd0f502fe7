#!/bin/bash
# What TLS costs per request: back-to-back runs of one surge binary in plaintext and with TLS on
# the same port, the same load, each reporting throughput and the server's own CPU per operation
# (from /proc/PID/stat), the figure a shared machine's CPU steal disturbs least:
#   surge bench transfer over net/http's client (HTTP/1.1 keep-alive, which speaks both);
#   surge bench spike --http2 (h2c in plaintext, HTTP/2 over TLS with ALPN).
#   scripts/tls-ab.sh [BINARY] [SECONDS] [RESERVATIONS]
#     default bin/surge, 20 s a transfer run, 200000 reservations a spike; 8 runs; needs openssl
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=${1:-bin/surge} SECS=${2:-20} N=${3:-200000} O=$PWD/bench-out/tls-ab A=127.0.0.1:18420
mkdir -p $O
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=surge-bench \
  -addext subjectAltName=IP:127.0.0.1 -keyout $O/key.pem -out $O/cert.pem 2>/dev/null
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
steal() { awk '/^cpu /{print $9}' /proc/stat; }
serve() { # serve plain|tls
  rm -rf $O/data
  local tls=() scheme=http
  [ "$1" = tls ] && tls=(--tls-cert $O/cert.pem --tls-key $O/key.pem) scheme=https
  $B serve --data $O/data --addr $A "${tls[@]}" > $O/serve.log 2>&1 & SP=$!
  URL=$scheme://$A
  until curl -sf --cacert $O/cert.pem $URL/readyz >/dev/null; do sleep 0.1; done
  T0=$(cpu $SP); S0=$(steal)
}
echo "## ledger: surge bench transfer --http-client std --vus 50 --duration ${SECS}s"
for mode in plain tls plain tls; do
  serve $mode
  r=$(SSL_CERT_FILE=$O/cert.pem $B bench transfer --http-client std --target $URL --vus 50 --duration ${SECS}s 2>/dev/null | grep http_reqs)
  n=$(echo "$r" | awk '{print $2}')
  echo "$mode $r"
  echo "  $mode: server CPU $(( ($(cpu $SP)-T0)*10000/n )) µs per op, steal $(( $(steal)-S0 )) ticks"
  kill $SP; wait $SP 2>/dev/null
done
echo "## spike: surge bench spike --http2 --conns 16 -c 1000 -n $N"
for mode in plain tls plain tls; do
  serve $mode
  SSL_CERT_FILE=$O/cert.pem $B bench spike --target $URL --http2 --conns 16 -c 1000 -n $N 2>/dev/null | sed -n 's/.*\(server_cpu.*\)/\1/p; s/.*\(completed in [0-9.]*s\).*/\1/p' | sed "s|^|$mode |"
  kill $SP; wait $SP 2>/dev/null
done
