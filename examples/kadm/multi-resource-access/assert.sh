#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
c=$(clients_dir)
neighbour=$NAMESPACE.payroll

multi_resource_keys() {
  # shellcheck disable=SC2046 # no key or one
  expect_secret_keys app kadm topics topic.orders topic.payments topic.shipments bootstrap.servers client.properties librdkafka.config $(scoped_kafka && echo sasl.jaas.config)
}

# multi_resource_clients KEY: librdkafka (kcat, confluent-kafka-python) and
# kafkajs, side by side (groups and transactional ids of their own), on
# the topic in the Secret's key KEY; refused the neighbour's topic where
# the access has a user of its own.
multi_resource_clients() {
  together kcat client "kcat-$1" app env CLIENT_TOPIC_KEY="$1" bash "$c/kafka_kcat.sh" ReadWrite "$neighbour"
  together confluent-kafka client "confluent-kafka-$1" app env CLIENT_TOPIC_KEY="$1" python3 "$c/kafka_confluent.py" ReadWrite "$neighbour"
  together kafkajs client "kafkajs-$1" app env CLIENT_TOPIC_KEY="$1" node "$c/kafka_kafkajs.js" ReadWrite "$neighbour"
  together sarama client_pod "sarama-${1//./-}" app env "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_TOPIC_KEY, value: \"$1\"}, {name: PROBE_NEIGHBOUR_TOPIC, value: \"$neighbour\"}]" clients kafka sarama
  settle
}
multi_resource_access app orders payments shipments
