// One call of the official Stripe Node SDK, pointed at an HTTP server on 127.0.0.1 (idem's proxy
// in the tests), printed as one JSON line so shell tests can check it with jsonq.
//
//   node stripe_client.js PORT create-customer NAME [--key KEY] [--retries N] [--email EMAIL]
//   node stripe_client.js PORT get-customer ID [--retries N]
//
// --key passes an explicit idempotencyKey; without it the SDK makes up its own for every POST
// ("stripe-node-retry-<uuid>") and keeps it across its retries. --retries is the SDK's
// maxNetworkRetries (default 0): it retries connection errors, 409 and 5xx answers by itself.
//
// On success prints {"ok":true,"object":<the resource>,"status":…,"replayed":<the
// Idempotent-Replayed header or null>,"idempotencyKey":…,"attempts":[…]} and exits 0; when the
// SDK throws, prints {"ok":false,"type":<the SDK's error class>,"rawType":…,"statusCode":…,
// "message":…,"attempts":[…]} and exits 2. "attempts" holds the Idempotency-Key the SDK sent on
// each HTTP attempt it made, in order (null when it sent none).
'use strict';

const Stripe = require('stripe');

function parseArgs(argv) {
  const [port, command, subject, ...rest] = argv;
  const options = { port: Number(port), command, subject, retries: 0 };
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i].replace(/^--/, '');
    if (!['key', 'retries', 'email'].includes(name) || rest[i + 1] === undefined) {
      throw new Error(`unknown or incomplete option ${rest[i]}`);
    }
    options[name] = name === 'retries' ? Number(rest[i + 1]) : rest[i + 1];
  }
  if (!Number.isInteger(options.port) || !subject) throw new Error('usage: PORT COMMAND SUBJECT [OPTIONS]');
  return options;
}

function makeClient(options) {
  return new Stripe('sk_test_idem_proxy', {
    host: '127.0.0.1',
    port: options.port,
    protocol: 'http',
    maxNetworkRetries: options.retries,
    telemetry: false,
  });
}

// The key of every attempt the SDK makes, from its own request events (the SDK reports a
// missing key as "undefined").
function recordAttempts(stripe) {
  const attempts = [];
  stripe.on('request', (event) => {
    const key = event.idempotency_key;
    attempts.push(key === undefined || key === 'undefined' ? null : key);
  });
  return attempts;
}

async function call(stripe, options) {
  if (options.command === 'create-customer') {
    const params = { name: options.subject };
    if (options.email) params.email = options.email;
    return stripe.customers.create(params, options.key ? { idempotencyKey: options.key } : {});
  }
  if (options.command === 'get-customer') return stripe.customers.retrieve(options.subject);
  throw new Error(`unknown command ${options.command}`);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const stripe = makeClient(options);
  const attempts = recordAttempts(stripe);
  try {
    const result = await call(stripe, options);
    const { lastResponse, ...object } = result;
    process.stdout.write(`${JSON.stringify({
      ok: true,
      object,
      status: lastResponse.statusCode,
      replayed: lastResponse.headers['idempotent-replayed'] ?? null,
      idempotencyKey: lastResponse.idempotencyKey ?? null,
      attempts,
    })}\n`);
  } catch (err) {
    if (!(err instanceof Stripe.errors.StripeError)) throw err;
    process.stdout.write(`${JSON.stringify({
      ok: false,
      type: err.type,
      rawType: err.rawType ?? null,
      statusCode: err.statusCode ?? null,
      message: err.message,
      attempts,
    })}\n`);
    process.exitCode = 2;
  }
}

main().catch((err) => {
  process.stderr.write(`stripe_client: ${err.stack || err}\n`);
  process.exitCode = 1;
});
