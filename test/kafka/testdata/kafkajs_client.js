// A kafkajs client for clients_test.go.
//
//   node kafkajs_client.js CONFIG_JSON TOPIC GROUP VALUE
//
// CONFIG_JSON is {"brokers": [...], "sasl": {...}} as kafkajs takes them
// (sasl optional). It produces VALUE to TOPIC, then reads TOPIC from the
// beginning as a member of GROUP until it has read VALUE, prints one JSON
// object and exits 0; on an error it prints the error's name and message
// and exits 1.
const { Kafka, logLevel } = require('kafkajs');

const [conf, topic, group, value] = [JSON.parse(process.argv[2]), ...process.argv.slice(3)];
const kafka = new Kafka({
  clientId: 'buckety-clients-test',
  brokers: conf.brokers,
  sasl: conf.sasl,
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 },
});

async function main() {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [{ value }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${JSON.stringify(seen)}, not ${value}, in 20s`)), 20000);
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.includes(value)) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return { client: `kafkajs ${require('kafkajs/package.json').version}`, seen };
}

main().then(
  (out) => { console.log(JSON.stringify(out)); process.exit(0); },
  (err) => { console.log(JSON.stringify({ error: err.name, message: err.message })); process.exit(1); },
);
