#!/usr/bin/env bash
# A Kafka workload on kcat (librdkafka), configured by nothing but the
# librdkafka.config key of a buckety Secret mounted at SECRET_DIR (secret
# format librdkafka): kcat -F.
#
#   kafka_kcat.sh ROLE [NEIGHBOUR_TOPIC]
#
# The topic is the Secret's key CLIENT_TOPIC_KEY (topic when unset; an
# access naming several Bucketies has topic.<buckety> instead).
#
# The same checks as kafka_confluent.py. Prints "clients: OK" at the end.
set -uo pipefail
role=$1 neighbour=${2:-}
conf=$SECRET_DIR/librdkafka.config
topic=$(cat "$SECRET_DIR/${CLIENT_TOPIC_KEY:-topic}")
prefix=$(cat "$SECRET_DIR/group.id.prefix" 2>/dev/null || true)
token=kcat-$RANDOM$RANDOM
fail() { echo "FAIL: kcat: $*"; exit 1; }
echo "clients: kcat $(kcat -V 2>&1 | sed -n "s/^Version //p" | head -1)"
# refused WHAT OUTPUT RC: kcat failed with an authorization error.
refused() {
  [ "$3" != 0 ] || fail "$1: succeeded, want it refused: $2"
  grep -Eqi 'authoriz' <<<"$2" || fail "$1: want an authorization error, got: $2"
  echo "clients: kcat $1 refused ($(echo "$2" | grep -Eio '[a-z_ ]*authoriz[a-z_ ]*' | head -1))"
}
case $role in
ReadWrite)
  out=$(echo "$token" | timeout 60 kcat -F "$conf" -q -P -t "$topic" 2>&1) || fail "produce to $topic: $out"
  echo "clients: kcat produce ok"
  out=$(timeout 60 kcat -F "$conf" -q -C -t "$topic" -o beginning -e 2>&1) || fail "consume $topic: $out"
  grep -qx "$token" <<<"$out" || fail "consume $topic: $token not read back: $out"
  echo "clients: kcat consume ok"
  out=$(timeout 60 kcat -F "$conf" -q -G "${prefix}kcat" -X auto.offset.reset=earliest -e "$topic" 2>&1) || fail "consume in group ${prefix}kcat: $out"
  grep -qx "$token" <<<"$out" || fail "consume in group ${prefix}kcat: $token not read back: $out"
  echo "clients: kcat consume in group ${prefix}kcat ok"
  if [ -n "$prefix" ]; then
    if [ -n "$neighbour" ]; then
      out=$(echo x | timeout 60 kcat -F "$conf" -P -t "$neighbour" 2>&1); refused "produce to the neighbour's topic $neighbour" "$out" $?
    fi
    out=$(timeout 30 kcat -F "$conf" -G outside-the-prefix -e "$topic" 2>&1); refused "a group outside the prefix" "$out" $?
  fi
  ;;
ReadOnly)
  out=$(timeout 60 kcat -F "$conf" -q -C -t "$topic" -o beginning -e 2>&1) || fail "consume $topic as ReadOnly: $out"
  echo "clients: kcat consume ok"
  if [ -n "$prefix" ]; then
    out=$(echo x | timeout 60 kcat -F "$conf" -P -t "$topic" 2>&1); refused "produce as ReadOnly" "$out" $?
  fi
  ;;
*) fail "role $role: want ReadWrite or ReadOnly" ;;
esac
echo "clients: OK"
