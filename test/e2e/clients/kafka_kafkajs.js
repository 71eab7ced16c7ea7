// A Kafka workload on kafkajs, configured by nothing but a buckety
// Secret's default keys in its environment (envFrom), as a Pod gets them:
// bootstrap, topic, security.protocol, sasl.mechanism, sasl.username,
// sasl.password, group.id.prefix.
//
//   node kafka_kafkajs.js ROLE [NEIGHBOUR_TOPIC]
//
// The topic is the Secret's key CLIENT_TOPIC_KEY (topic when unset; an
// access naming several Bucketies has topic.<buckety> instead).
//
// The same checks as kafka_confluent.py. Prints "clients: OK" at the end.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
const crypto = require('crypto');

const env = process.env;
const role = process.argv[2];
const neighbour = process.argv[3] || '';
const topic = env[env.CLIENT_TOPIC_KEY || 'topic'];
const prefix = env['group.id.prefix'] || '';
const protocol = env['security.protocol'] || 'PLAINTEXT';
const config = {
  clientId: 'kafkajs-client',
  brokers: env.bootstrap.split(','),
  ssl: protocol.endsWith('SSL') ? (env['ssl.ca.pem'] ? { ca: [env['ssl.ca.pem']] } : true) : false,
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 },
};
if (protocol.startsWith('SASL')) {
  // kafkajs spells the mechanism in lower case.
  config.sasl = { mechanism: env['sasl.mechanism'].toLowerCase(), username: env['sasl.username'], password: env['sasl.password'] };
}
const kafka = new Kafka(config);
const token = crypto.randomBytes(8).toString('hex');

function fail(msg) {
  console.log('FAIL: kafkajs: ' + msg);
  process.exit(1);
}

async function produce(t, value) {
  const p = kafka.producer({ allowAutoTopicCreation: false });
  await p.connect();
  try {
    await p.send({ topic: t, messages: [{ value }] });
  } finally {
    await p.disconnect();
  }
}

async function consume(group, want, ms) {
  const c = kafka.consumer({ groupId: group, allowAutoTopicCreation: false });
  await c.connect();
  try {
    await c.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`record ${want} not seen in ${ms} ms`)), ms);
      c.on(c.events.CRASH, (e) => { clearTimeout(timer); reject(e.payload.error); });
      c.run({
        eachMessage: async ({ message }) => {
          if (message.value.toString() === want) { clearTimeout(timer); resolve(); }
        },
      }).catch((e) => { clearTimeout(timer); reject(e); });
    });
  } finally {
    await c.disconnect();
  }
}

// refused: fn fails with an authorization error (or, for a group, what
// kafkajs makes of one: it reads FindCoordinator's
// GROUP_AUTHORIZATION_FAILED as no coordinator, against Kafka too).
async function refused(what, fn, also) {
  try {
    await fn();
  } catch (e) {
    const s = String(e && (e.type || e.message || e));
    if (/AUTHORIZATION_FAILED|not authorized/i.test(s) || (also && also.test(String(e && e.message)))) {
      console.log(`clients: kafkajs ${what} refused (${e.type || e.message})`);
      return;
    }
    fail(`${what}: want an authorization error, got ${s}`);
  }
  fail(`${what}: succeeded, want it refused`);
}

(async () => {
  console.log('clients: kafkajs ' + require('kafkajs/package.json').version);
  if (role === 'ReadWrite') {
    await produce(topic, 'kafkajs-' + token).catch((e) => fail(`produce to ${topic}: ${e.type || e.message}`));
    console.log('clients: kafkajs produce ok');
    await consume(prefix + 'kafkajs', 'kafkajs-' + token, 30000).catch((e) => fail(`consume in group ${prefix}kafkajs: ${e.type || e.message}`));
    console.log(`clients: kafkajs consume in group ${prefix}kafkajs ok`);
    if (prefix) {
      const p = kafka.producer({ transactionalId: prefix + 'tx-kafkajs', maxInFlightRequests: 1, idempotent: true });
      await p.connect();
      try {
        const tx = await p.transaction();
        await tx.send({ topic, messages: [{ value: 'kafkajs-tx-' + token }] });
        await tx.commit();
      } catch (e) {
        fail(`transaction ${prefix}tx-kafkajs: ${e.type || e.message}`);
      } finally {
        await p.disconnect();
      }
      console.log('clients: kafkajs transaction ok');
      if (neighbour) await refused('produce to the neighbour\'s topic ' + neighbour, () => produce(neighbour, 'x'));
      await refused('a group outside the prefix', () => consume('outside-the-prefix', 'never', 10000), /Failed to find group coordinator/);
    }
  } else if (role === 'ReadOnly') {
    if (prefix) await refused('produce as ReadOnly', () => produce(topic, 'x'));
  } else {
    fail(`role ${role}: want ReadWrite or ReadOnly`);
  }
  console.log('clients: OK');
  process.exit(0);
})().catch((e) => fail(String(e && (e.stack || e))));
