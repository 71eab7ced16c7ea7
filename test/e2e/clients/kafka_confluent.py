"""A Kafka workload on confluent-kafka-python (librdkafka), configured by
nothing but the librdkafka.config key of a buckety Secret mounted at
SECRET_DIR (secret format librdkafka), as a Pod would mount it.

  python3 kafka_confluent.py ROLE [NEIGHBOUR_TOPIC]

The topic is the Secret's key CLIENT_TOPIC_KEY (topic when unset; an
access naming several Bucketies has topic.<buckety> instead).

ReadWrite: produce to the Secret's topic, consume it back in a group under
the Secret's group.id.prefix, and (with a prefix) commit a transaction
under it; then, where the access has a user of its own, the refusals: the
neighbour's topic, a group outside the prefix. ReadOnly: consume, and
producing refused. Prints a line per check and "clients: OK" at the end;
exits 1 at the first failure.
"""
import os
import sys
import uuid

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

secret_dir = os.environ["SECRET_DIR"]


def read(key):
    with open(os.path.join(secret_dir, key)) as f:
        return f.read()


def conf():
    # librdkafka's properties file: property=value lines, # comments.
    out = {}
    for line in read("librdkafka.config").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out


topic = read(os.environ.get("CLIENT_TOPIC_KEY", "topic"))
prefix = read("group.id.prefix") if os.path.exists(os.path.join(secret_dir, "group.id.prefix")) else ""
role = sys.argv[1]
neighbour = sys.argv[2] if len(sys.argv) > 2 else ""
token = uuid.uuid4().hex
print("clients: confluent-kafka %s, librdkafka %s" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0]))


def fail(msg):
    print("FAIL: confluent-kafka: " + msg)
    sys.exit(1)


def produce(t, value, extra=None):
    """Produces one record and returns the delivery error, None on success."""
    c = conf()
    c.update(extra or {})
    p = Producer(c)
    errs = []
    p.produce(t, value.encode(), on_delivery=lambda err, msg: errs.append(err))
    left = p.flush(20)
    if left:
        return "not delivered in 20 s"
    return errs[0]


def consume(group, want, seconds=30):
    """Reads the topic in group until a record with value want; returns the
    error that stopped it, or None."""
    c = conf()
    c.update({"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons = Consumer(c)
    try:
        cons.subscribe([topic])
        for _ in range(seconds * 2):
            m = cons.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return m.error()
            if m.value().decode() == want:
                cons.commit(m, asynchronous=False)
                return None
        return "record %s not seen in %d s" % (want, seconds)
    except KafkaException as e:
        return e.args[0]
    finally:
        cons.close()


def refused(err, what):
    if err is None:
        fail(what + ": succeeded, want it refused")
    if "AUTHORIZATION_FAILED" not in str(err) and "Authorization failed" not in str(err) and "not authorized" not in str(err).lower():
        fail(what + ": want an authorization error, got %s" % err)
    print("clients: confluent-kafka %s refused (%s)" % (what, str(err).split(",")[0]))


if role == "ReadWrite":
    err = produce(topic, "confluent-" + token)
    if err:
        fail("produce to %s: %s" % (topic, err))
    print("clients: confluent-kafka produce ok")
    err = consume(prefix + "confluent", "confluent-" + token)
    if err:
        fail("consume in group %sconfluent: %s" % (prefix, err))
    print("clients: confluent-kafka consume in group %sconfluent ok" % prefix)
    if prefix:
        c = conf()
        c["transactional.id"] = prefix + "tx-confluent"
        p = Producer(c)
        try:
            p.init_transactions(30)
            p.begin_transaction()
            p.produce(topic, ("confluent-tx-" + token).encode())
            p.commit_transaction(30)
        except KafkaException as e:
            fail("transaction %stx-confluent: %s" % (prefix, e.args[0]))
        print("clients: confluent-kafka transaction ok")
        if neighbour:
            refused(produce(neighbour, "x"), "produce to the neighbour's topic " + neighbour)
        refused(consume("outside-the-prefix", "never", seconds=10), "a group outside the prefix")
elif role == "ReadOnly":
    err = consume(prefix + "confluent-ro", "__none__", seconds=5)
    if err and "not seen" not in str(err):
        fail("consume as ReadOnly: %s" % err)
    print("clients: confluent-kafka consume ok")
    if prefix:
        refused(produce(topic, "x"), "produce as ReadOnly")
else:
    fail("role %s: want ReadWrite or ReadOnly" % role)
print("clients: OK")
