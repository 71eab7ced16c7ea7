# drivers/kadm.sh: what the shared scenarios (test/e2e/scenarios) take from
# driver kadm, loaded by an assert.sh with `. lib.sh kadm`. Every driver's
# file defines the same names; a scenario's own differences are the
# arguments and hooks its assert.sh gives.

# DRIVER: the driver's registered name. BACKEND: the backend the examples
# name. RESOURCE, CONTENT, SERVER, CREDENTIAL: the words the scenarios'
# steps and messages use for what a Buckety provisions, what it holds, what
# serves it and what an access of its own gets.
DRIVER=kadm
BACKEND=kafka
RESOURCE=topic
CONTENT=records
SERVER=broker
CREDENTIAL=user

# admin SECRET ARGS...: out-of-band operations, as the broker's operator.
admin() { kafka_admin "$@"; }

# scoped: every access gets a user of its own.
scoped() { scoped_kafka; }

# expect_keys SECRET [OPTIONAL-KEY...]: the Secret has the driver's keys.
expect_keys() { expect_secret_keys "$1" "$DRIVER" topic "${@:2}"; }

# create_full SECRET NAME: creates topic NAME out of band (two partitions)
# holding three records.
create_full() { kafka_admin "$1" create "$2" 2 3; }

# fill_with SECRET NAME N: produces N records to topic NAME.
fill_with() { kafka_admin "$1" produce "$2" "$3"; }

# content_count SECRET NAME: the records topic NAME holds.
content_count() { kafka_admin "$1" records "$2" | tail -1; }

# operator_secret FROM COPY: a Secret COPY that outlives FROM, with what
# admin needs of it (the bootstrap).
operator_secret() { k create secret generic "$2" --from-literal=bootstrap="$(secret_value "$1" bootstrap)" >/dev/null; }
