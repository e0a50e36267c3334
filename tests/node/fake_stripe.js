// A stand-in for api.stripe.com that the end-to-end tests put behind `idem serve --upstream`:
// it answers the few v1 routes the tests use with Stripe-shaped JSON objects, counts every call,
// and can be told to fail the next call in the ways a real upstream fails.
//
//   node fake_stripe.js PORT_FILE LOG_FILE
//
// Listens on 127.0.0.1, port 0; writes the port to PORT_FILE once listening. Every call to a v1
// route appends one line to LOG_FILE, synchronously, before it is answered:
//   "<n> <METHOD> <path> key=<Idempotency-Key or -> <outcome>"
// where outcome is "created <id>", "found <id>", "404", "500", "dropped" or "held"; a held call
// adds "<n> released <outcome>" when it is served.
//
// Control routes, called by the test directly (never through the proxy):
//   POST /__fake/fault?next=500|drop|hold   the next v1 POST fails that way (faults queue up):
//        500: a Stripe api_error answer; drop: the connection is destroyed unanswered;
//        hold: the call waits until /__fake/release, then is served normally
//   POST /__fake/release                    serves every held call
// Both answer 204.
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const crypto = require('node:crypto');

const [portFile, logFile] = process.argv.slice(2);
if (!portFile || !logFile) {
  process.stderr.write('usage: node fake_stripe.js PORT_FILE LOG_FILE\n');
  process.exit(64);
}

const customers = new Map(); // id -> customer object
const faults = []; // queued faults for the next v1 POSTs
let held = []; // functions that serve a held call
let calls = 0;

// Returns the call's number. heldAs: the number of the held call now served.
function log(req, outcome, heldAs) {
  if (heldAs) {
    fs.appendFileSync(logFile, `${heldAs} released ${outcome}\n`);
    return heldAs;
  }
  calls += 1;
  const key = req.headers['idempotency-key'] || '-';
  fs.appendFileSync(logFile, `${calls} ${req.method} ${req.url} key=${key} ${outcome}\n`);
  return calls;
}

// Stripe's answers carry a request id and echo the Idempotency-Key; the SDK reads both into
// lastResponse.
function send(req, res, status, object) {
  const body = JSON.stringify(object);
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'Request-Id': `req_${crypto.randomBytes(7).toString('hex')}`,
  };
  if (req.headers['idempotency-key']) headers['Idempotency-Key'] = req.headers['idempotency-key'];
  if (req.headers['stripe-version']) headers['Stripe-Version'] = req.headers['stripe-version'];
  res.writeHead(status, headers);
  res.end(body);
}

function stripeError(type, message) {
  return { error: { type, message } };
}

// Form bodies as the SDK sends them: "name=Ann&metadata[order]=7".
function parseForm(text) {
  const fields = { metadata: {} };
  for (const [name, value] of new URLSearchParams(text)) {
    const nested = /^metadata\[(.+)\]$/.exec(name);
    if (nested) fields.metadata[nested[1]] = value;
    else fields[name] = value;
  }
  return fields;
}

function createCustomer(req, res, body, heldAs) {
  const fields = parseForm(body);
  const customer = {
    id: `cus_${crypto.randomBytes(7).toString('hex')}`,
    object: 'customer',
    address: null,
    balance: 0,
    created: Math.floor(Date.now() / 1000),
    currency: null,
    description: fields.description ?? null,
    email: fields.email ?? null,
    livemode: false,
    metadata: fields.metadata,
    name: fields.name ?? null,
  };
  customers.set(customer.id, customer);
  log(req, `created ${customer.id}`, heldAs);
  send(req, res, 200, customer);
}

function serveV1(req, res, body, heldAs) {
  const path = req.url.split('?')[0];
  if (req.method === 'POST' && path === '/v1/customers') return createCustomer(req, res, body, heldAs);
  const found = /^\/v1\/customers\/([^/]+)$/.exec(path);
  if (req.method === 'GET' && found && customers.has(found[1])) {
    log(req, `found ${found[1]}`, heldAs);
    return send(req, res, 200, customers.get(found[1]));
  }
  log(req, '404', heldAs);
  return send(req, res, 404, stripeError('invalid_request_error', `Unrecognized request URL (${req.method}: ${path})`));
}

function serveWithFault(req, res, body) {
  const fault = req.method === 'POST' ? faults.shift() : undefined;
  if (fault === '500') {
    log(req, '500');
    return send(req, res, 500, stripeError('api_error', 'An unexpected error occurred.'));
  }
  if (fault === 'drop') {
    log(req, 'dropped');
    return req.socket.destroy();
  }
  if (fault === 'hold') {
    const n = log(req, 'held');
    return held.push(() => serveV1(req, res, body, n));
  }
  return serveV1(req, res, body);
}

function serveControl(req, res) {
  const url = new URL(req.url, 'http://fake');
  if (url.pathname === '/__fake/fault' && ['500', 'drop', 'hold'].includes(url.searchParams.get('next'))) {
    faults.push(url.searchParams.get('next'));
  } else if (url.pathname === '/__fake/release') {
    const waiting = held;
    held = [];
    for (const serve of waiting) serve();
  } else {
    res.writeHead(404);
    return res.end();
  }
  res.writeHead(204);
  return res.end();
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    if (req.url.startsWith('/__fake/')) return serveControl(req, res);
    return serveWithFault(req, res, Buffer.concat(chunks).toString('utf8'));
  });
});

server.listen(0, '127.0.0.1', () => {
  // Written whole under another name and renamed, so a reader never sees half a port.
  fs.writeFileSync(`${portFile}.tmp`, `${server.address().port}\n`);
  fs.renameSync(`${portFile}.tmp`, portFile);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
