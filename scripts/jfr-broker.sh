#!/usr/bin/env bash
# A Kafka broker's CPU samples by what they serve: reads the JFR recordings that
# `PROFILE=DIR scripts/cluster-ab.sh` writes (DIR/LABEL-NODESnodes-broker-PID.jfr) and prints the
# share of the Java execution samples of each kind of work, all files pooled. Each sample goes to
# the first kind that matches its thread and stack:
#   network threads           the request metrics' histograms (Yammer, updated for every
#                             request), or the rest: socket I/O, parsing, responses
#   partition verification    the brokers' AddPartitionsToTxn: under transactions v2 the broker
#                             adds a produce's (and the offsets') partitions to the transaction
#   commit markers            WriteTxnMarkers: the markers' requests, their appends, and the
#                             group coordinator completing the offsets of a transaction
#   EndTxn                    the transaction coordinator's log writes and state
#   TxnOffsetCommit, Heartbeat, Fetch (and its delayed completion), Produce (and its append)
# Samples are of Java code only: the JIT compiler's, the GC's and the kernel's CPU are not in them
# (cluster-ab.sh prints the broker's JIT and GC CPU; /proc/PID/task/*/stat has the kernel's).
#
# Usage: scripts/jfr-broker.sh FILE.jfr...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/jfr-broker.sh FILE.jfr..." >&2; exit 1; }
for f in "$@"; do jfr print --stack-depth 64 --events jdk.ExecutionSample "$f"; done | awk '
  function api(s,  m) { # the outermost KafkaApis.handleX frame: the request being handled
    m = ""
    while (match(s, /KafkaApis\.handle[A-Za-z]+Request\(/)) {
      m = substr(s, RSTART + 16, RLENGTH - 24); s = substr(s, RSTART + RLENGTH)
    }
    return m
  }
  function kind(t, s,  a) {
    if (t ~ /network-thread/) return s ~ /updateRequestMetrics/ ? "network threads: request metrics (Yammer histograms)" : "network threads: socket I/O, parsing, responses"
    if (t ~ /AddPartitionsToTxnSender/) return "txn: partition verification (AddPartitionsToTxn)"
    if (t ~ /TxnMarkerSender/) return "txn: commit markers (WriteTxnMarkers)"
    if (t ~ /group-coordinator/) {
      if (s ~ /completeTransaction/) return "txn: commit markers (WriteTxnMarkers)"
      return s ~ /heartbeat/ ? "Heartbeat" : "TxnOffsetCommit"
    }
    if (t !~ /request-handler/) return "other threads (KRaft, scheduler, ...)"
    a = api(s)
    if (a == "AddPartitionsToTxn") return "txn: partition verification (AddPartitionsToTxn)"
    if (a == "WriteTxnMarkers") return "txn: commit markers (WriteTxnMarkers)"
    if (a == "EndTxn") return "txn: EndTxn (transaction coordinator)"
    if (a == "TxnOffsetCommit") return "TxnOffsetCommit"
    if (a == "Fetch" || s ~ /DelayedFetch/) return "Fetch"
    if (a == "Produce" || s ~ /appendToLocalLog|tryCompleteElseWatch|DelayedProduce/) return "Produce"
    if (s ~ /AddPartitionsToTxnManager/) return "txn: partition verification (AddPartitionsToTxn)"
    return a != "" ? a : "request handlers: other"
  }
  /sampledThread = / { t = $0 }
  /stackTrace = \[/ { s = ""; instack = 1; next }
  instack && /^[ \t]*\]/ { instack = 0; n++; c[kind(t, s)]++; next }
  instack { s = s "\n" $0 }
  END {
    printf "%d samples\n", n
    for (k in c) printf "%5.1f%%  %s\n", 100 * c[k] / n, k | "sort -rn"
  }'
