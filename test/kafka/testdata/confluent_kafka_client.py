"""A confluent-kafka (librdkafka) client for clients_test.go.

    python3 confluent_kafka_client.py CONFIG_JSON produce TOPIC VALUE
    python3 confluent_kafka_client.py CONFIG_JSON consume TOPIC GROUP VALUE...
    python3 confluent_kafka_client.py CONFIG_JSON metadata

CONFIG_JSON is librdkafka's configuration (bootstrap.servers, the SASL
and TLS settings). Each command prints one JSON object and exits 0 when it
did what it says: produce when the broker acknowledged the record, consume
when a group member has read every VALUE from TOPIC, metadata when it has
the cluster's metadata. Otherwise it exits 1; the object carries
librdkafka's errors ("errors", from error_cb) either way.
"""

import json
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer

TIMEOUT = 20.0


def main():
    conf, cmd, args = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
    errors = []
    conf["error_cb"] = lambda err: errors.append(err.name())
    out = {
        "client": "confluent-kafka %s, librdkafka %s"
        % (confluent_kafka.version()[0], confluent_kafka.libversion()[0]),
        "errors": errors,
    }
    ok = False
    if cmd == "produce":
        topic, value = args
        delivered = []
        p = Producer(conf)
        p.produce(topic, value.encode(), on_delivery=lambda err, msg: delivered.append(err))
        left = p.flush(TIMEOUT)
        out["delivery"] = [str(e) if e else None for e in delivered]
        ok = left == 0 and delivered == [None]
    elif cmd == "consume":
        topic, group, want = args[0], args[1], set(args[2:])
        c = Consumer(dict(conf, **{"group.id": group, "auto.offset.reset": "earliest"}))
        c.subscribe([topic])
        seen = []
        deadline = time.monotonic() + TIMEOUT
        while want - set(seen) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                errors.append(m.error().name())
                continue
            seen.append(m.value().decode())
        c.close()
        out["seen"] = seen
        ok = not want - set(seen)
    elif cmd == "metadata":
        p = Producer(conf)
        try:
            md = p.list_topics(timeout=5)
            out["brokers"] = len(md.brokers)
            ok = True
        except KafkaException as e:
            out["exception"] = e.args[0].name()
        p.poll(1)  # serves error_cb
    else:
        sys.exit("unknown command %r" % cmd)
    print(json.dumps(out))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
