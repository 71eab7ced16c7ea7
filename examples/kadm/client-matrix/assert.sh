#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
c=$(clients_dir)
neighbour=$NAMESPACE.payroll

client_matrix_keys() {
  # shellcheck disable=SC2046 # no key or one
  expect_secret_keys events-app kadm topic bootstrap.servers client.properties librdkafka.config $(scoped_kafka && echo sasl.jaas.config)
  expect_secret_keys events-audit kadm topic librdkafka.config
  expect_eq "bootstrap.servers" "$(secret_value events-app bootstrap)" "$(secret_value events-app bootstrap.servers)"
}

client_matrix_clients() {
  step "librdkafka: kcat -F librdkafka.config, from the mounted Secret"
  client kcat events-app bash "$c/kafka_kcat.sh" ReadWrite "$neighbour"
  client kcat-readonly events-audit bash "$c/kafka_kcat.sh" ReadOnly

  step "librdkafka: confluent-kafka-python, its config read from librdkafka.config"
  client confluent-kafka events-app python3 "$c/kafka_confluent.py" ReadWrite "$neighbour"
  client confluent-kafka-readonly events-audit python3 "$c/kafka_confluent.py" ReadOnly

  step "kafkajs, from the Secret's default keys in its environment"
  client kafkajs events-app node "$c/kafka_kafkajs.js" ReadWrite "$neighbour"
  client kafkajs-readonly events-audit node "$c/kafka_kafkajs.js" ReadOnly

  step "Sarama (envFrom) and franz-go (the Secret mounted as files), in Pods"
  client_pod sarama events-app env "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_NEIGHBOUR_TOPIC, value: \"$neighbour\"}]" clients kafka sarama
  client_pod franz-go events-app files "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_NEIGHBOUR_TOPIC, value: \"$neighbour\"}]" clients kafka franz-go
  client_pod sarama-readonly events-audit env "[{name: PROBE_ROLE, value: ReadOnly}]" clients kafka sarama

  step "Java: client.properties as java.util.Properties and the JDK's JAAS parser read it"
  if scoped_kafka; then
    local java
    java=$(with_secret events-app sh -c "java $LIB_ROOT/drivers/kadm/testdata/ReadClientProperties.java \$SECRET_DIR/client.properties" 2>&1) || fail "Java cannot read client.properties: $java"
    expect_contains "Java's bootstrap.servers" "bootstrap.servers	$(secret_value events-app bootstrap)" "$java"
    expect_contains "Java's JAAS username" "jaas.username	$(secret_value events-app sasl.username)" "$java"
    expect_contains "Java's JAAS password" "jaas.password	$(secret_value events-app sasl.password)" "$java"
    expect_eq "sasl.jaas.config is client.properties' line" "$(echo "$java" | sed -n 's/^sasl.jaas.config\t//p')" "$(secret_value events-app sasl.jaas.config)"
  fi
}

# client_matrix_rotated USER: the clients log in as the new user.
client_matrix_rotated() {
  expect_contains "librdkafka.config after rotation" "sasl.username=$1" "$(secret_value events-app librdkafka.config)"
  expect_contains "client.properties after rotation" "username=\"$1\"" "$(secret_value events-app client.properties)"
  client kcat-rotated events-app bash "$c/kafka_kcat.sh" ReadWrite
}
client_matrix events-app sasl.username app audit payroll
