#!/usr/bin/env bash
# A real Apache Kafka cluster (KRaft, no ZooKeeper) on loopback, for surge's cluster tests and
# measurements. Its jars come from Maven Central (scripts/kafka/pom.xml pins the version) through
# Maven, and are cached; it runs on the machine's Java 17.
#
#   scripts/kafka.sh fetch              copy the broker's jars into the cache (needs mvn once)
#   scripts/kafka.sh start [-n N] [-d DIR] [-s SECDIR]
#                                       start N combined broker+controller nodes (default 1; with
#                                       N > 1 internal topics get replication factor N and
#                                       min.insync.replicas 2, and the controller fences a broker
#                                       4 s after its last heartbeat), wait until each serves, print the
#                                       bootstrap address (host:port,...) as the only stdout line.
#                                       With -s, clients get a SASL_SSL listener instead (its
#                                       addresses are the bootstrap; brokers and controllers still
#                                       talk PLAINTEXT among themselves on loopback), made from
#                                       SECDIR's files: broker.pem (the brokers' PKCS#8 private key
#                                       and certificate chain, PEM), ca.pem (authorities whose
#                                       client certificate every client must show) and users (one
#                                       "NAME PASSWORD" a line, each given PLAIN, SCRAM-SHA-256 and
#                                       SCRAM-SHA-512 credentials)
#   scripts/kafka.sh stop DIR           stop the nodes (SIGTERM, then SIGKILL after 30 s) and
#                                       delete DIR
#   scripts/kafka.sh kill DIR I         kill -9 node I (1-based), to test a broker's death
#
# DIR holds everything of one cluster: each node's config, log dir, server.log and pid. Without -d
# start makes a fresh temporary one and names it on stderr; stop deletes it, so nothing is kept.
# Environment: SURGE_KAFKA_CACHE (default ~/.cache/surge-kafka), KAFKA_VERSION (default the pom's),
# KAFKA_HEAP (default -Xms512m -Xmx512m per node), KAFKA_JVM (more JVM flags, after the
# defaults, which they override), KAFKA_PROPERTIES (more server properties, one
# "key=value" a line, appended to every node's config; a key given twice takes the later value),
# KAFKA_START_WAIT (default 300: seconds a live node may take to serve before start gives up; a
# node that exits fails start at once).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom=$here/kafka/pom.xml
default_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
version=${KAFKA_VERSION:-$default_version}
cache=${SURGE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/surge-kafka}/$version

die() { echo "kafka.sh: $*" >&2; exit 1; }

fetch() { # fills $cache with the broker's runtime jars unless a complete copy is there
  [ -f "$cache/.complete" ] && return 0
  command -v java >/dev/null 2>&1 || die "java not found (Debian: apt-get install openjdk-17-jre-headless)"
  command -v mvn >/dev/null 2>&1 || die "mvn not found (Debian: apt-get install maven)"
  rm -rf "$cache" && mkdir -p "$cache"
  mvn -q -B -f "$pom" -Dkafka.version="$version" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$cache" >&2 || die "mvn could not fetch Kafka $version"
  ls "$cache"/kafka_2.13-"$version".jar >/dev/null || die "kafka_2.13-$version.jar missing in $cache"
  touch "$cache/.complete"
}

alive() { # alive PID: running and not a zombie waiting to be reaped
  kill -0 "$1" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_ports K: K distinct free loopback ports, one per line. They are drawn below the kernel's
# ephemeral range: a port in it can be taken by any outgoing connection between this check and the
# broker's bind (a load test's thousands of client sockets do), which no check here can see.
free_ports() {
  local want=$1 got=() p low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 12000 ] || die "the ephemeral port range starts at $low: no room below it for the brokers"
  while [ "${#got[@]}" -lt "$want" ]; do
    p=$(( 10000 + RANDOM % (low - 10000) ))
    case " ${got[*]} " in *" $p "*) continue ;; esac
    port_free "$p" && got+=("$p")
  done
  printf '%s\n' "${got[@]}"
}

write_config() { # write_config DIR I N VOTERS BROKER_PORT CONTROLLER_PORT [SECURE_PORT SECDIR]
  local dir=$1 i=$2 n=$3 voters=$4 bport=$5 cport=$6 sport=${7:-} sec=${8:-} isr=1
  [ "$n" -gt 1 ] && isr=2
  mkdir -p "$dir/node-$i/data"
  local listeners="PLAINTEXT://127.0.0.1:$bport" protocols="PLAINTEXT:PLAINTEXT"
  if [ -n "$sport" ]; then
    listeners+=",SASL_SSL://127.0.0.1:$sport" protocols+=",SASL_SSL:SASL_SSL"
  fi
  # the thread counts, like java_node's heap and GC pause target, suit a small host and cost the
  # broker less CPU per request (docs/CLUSTER.md, "Broker settings")
  cat >"$dir/node-$i/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protocols,CONTROLLER:PLAINTEXT
log.dirs=$dir/node-$i/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=$n
min.insync.replicas=$isr
offsets.topic.replication.factor=$n
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$n
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=$n
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=2000
num.network.threads=1
num.io.threads=2
EOF
  # a dead broker's partitions get new leaders, and its in-sync replicas drop it, only once the
  # controller fences it: sooner than Kafka's 9 s session (docs/CLUSTER.md, "Broker settings")
  [ "$n" -gt 1 ] && printf '%s\n' broker.heartbeat.interval.ms=500 broker.session.timeout.ms=4000 \
    >>"$dir/node-$i/server.properties"
  [ -z "$sec" ] || secure_config "$sec" >>"$dir/node-$i/server.properties"
  [ -z "${KAFKA_PROPERTIES:-}" ] || printf '%s\n' "$KAFKA_PROPERTIES" >>"$dir/node-$i/server.properties"
  cat >"$dir/node-$i/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $dir/node-$i/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
EOF
}

secure_config() { # secure_config SECDIR: the SASL_SSL listener's properties
  local sec=$1 l=listener.name.sasl_ssl name pw plain=""
  while read -r name pw; do
    [ -n "$name" ] && plain+=" user_$name=\"$pw\""
  done <"$sec/users"
  cat <<EOF
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
$l.ssl.keystore.type=PEM
$l.ssl.keystore.location=$sec/broker.pem
$l.ssl.truststore.type=PEM
$l.ssl.truststore.location=$sec/ca.pem
$l.ssl.client.auth=required
$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain;
$l.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
$l.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOF
}

scram_users() { # scram_users SECDIR: kafka-storage format's --add-scram arguments, one a line
  local name pw
  while read -r name pw; do
    [ -n "$name" ] || continue
    printf '%s\n' --add-scram "SCRAM-SHA-256=[name=$name,password=$pw]" \
      --add-scram "SCRAM-SHA-512=[name=$name,password=$pw]"
  done <"$1/users"
}

java_node() { # java_node DIR I MAINCLASS ARGS...: exec the JVM of node I (call it in a subshell)
  local dir=$1 i=$2; shift 2
  # shellcheck disable=SC2086 # KAFKA_HEAP and KAFKA_JVM are lists of JVM flags
  exec java ${KAFKA_HEAP:--Xms512m -Xmx512m} -XX:+UseG1GC -XX:MaxGCPauseMillis=200 \
    ${KAFKA_JVM:-} -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/node-$i/log4j2.properties" -cp "$cache/*" "$@"
}

wait_started() { # wait_started DIR I: until node I logs that it serves, or fail with its log
  local dir=$1 i=$2 pid deadline=$(( SECONDS + ${KAFKA_START_WAIT:-300} ))
  pid=$(cat "$dir/node-$i/pid")
  until grep -q 'Kafka Server started' "$dir/node-$i/server.log" 2>/dev/null; do
    if ! alive "$pid" || [ "$SECONDS" -ge "$deadline" ]; then
      echo "kafka.sh: node $i did not start; end of $dir/node-$i/server.log:" >&2
      tail -n 30 "$dir/node-$i/server.log" "$dir/node-$i/stdout" >&2 2>/dev/null || true
      stop "$dir"
      exit 1
    fi
    sleep 0.2
  done
}

start() {
  local n=1 dir="" sec="" i f
  while getopts 'n:d:s:' opt; do
    case $opt in
      n) n=$OPTARG ;; d) dir=$OPTARG ;; s) sec=$OPTARG ;;
      *) die "usage: start [-n N] [-d DIR] [-s SECDIR]" ;;
    esac
  done
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive count, got '$n'"
  if [ -n "$sec" ]; then
    sec=$(cd "$sec" && pwd) || die "no directory $sec"
    for f in broker.pem ca.pem users; do [ -f "$sec/$f" ] || die "-s $sec: no $f in it"; done
  fi
  fetch
  [ -n "$dir" ] || { dir=$(mktemp -d -t surge-kafka.XXXXXX); echo "kafka.sh: cluster dir $dir" >&2; }
  mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
  local ports voters="" bootstrap="" id scram=()
  mapfile -t ports < <(free_ports $(( 3 * n )))
  for (( i = 1; i <= n; i++ )); do # node i: broker, controller and SASL_SSL ports
    voters+="${voters:+,}$i@127.0.0.1:${ports[3*i-2]}"
    if [ -n "$sec" ]; then
      bootstrap+="${bootstrap:+,}127.0.0.1:${ports[3*i-1]}"
    else
      bootstrap+="${bootstrap:+,}127.0.0.1:${ports[3*i-3]}"
    fi
  done
  [ -z "$sec" ] || mapfile -t scram < <(scram_users "$sec")
  id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
  for (( i = 1; i <= n; i++ )); do
    write_config "$dir" "$i" "$n" "$voters" "${ports[3*i-3]}" "${ports[3*i-2]}" \
      "${sec:+${ports[3*i-1]}}" "$sec"
    ( java_node "$dir" "$i" kafka.tools.StorageTool format --cluster-id="$id" "${scram[@]}" \
      -c "$dir/node-$i/server.properties" >"$dir/node-$i/format.log" 2>&1 ) ||
      { cat "$dir/node-$i/format.log" >&2; die "formatting node $i failed"; }
    ( java_node "$dir" "$i" kafka.Kafka "$dir/node-$i/server.properties" \
      >"$dir/node-$i/stdout" 2>&1 </dev/null ) &
    echo $! >"$dir/node-$i/pid"
  done
  for (( i = 1; i <= n; i++ )); do wait_started "$dir" "$i"; done
  echo "$bootstrap"
}

stop() { # stop DIR: SIGTERM every node, SIGKILL the ones alive after 30 s, delete DIR
  local dir=$1 pidfile pid pids=() deadline=$(( SECONDS + 30 ))
  [ -d "$dir" ] || die "no cluster dir $dir"
  for pidfile in "$dir"/node-*/pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for pid in "${pids[@]}"; do
    while alive "$pid"; do
      [ "$SECONDS" -ge "$deadline" ] && { kill -KILL "$pid" 2>/dev/null || true; break; }
      sleep 0.2
    done
  done
  rm -rf "$dir"
}

kill_node() { # kill_node DIR I
  local dir=$1 i=$2
  [ -f "$dir/node-$i/pid" ] || die "no node $i in $dir"
  kill -KILL "$(cat "$dir/node-$i/pid")"
}

case ${1:-} in
  fetch) fetch ;;
  start) shift; start "$@" ;;
  stop) [ $# -eq 2 ] || die "usage: stop DIR"; stop "$2" ;;
  kill) [ $# -eq 3 ] || die "usage: kill DIR I"; kill_node "$2" "$3" ;;
  *) die "usage: kafka.sh fetch | start [-n N] [-d DIR] [-s SECDIR] | stop DIR | kill DIR I" ;;
esac
