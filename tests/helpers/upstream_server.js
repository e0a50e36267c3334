// An upstream for the proxy's end-to-end tests (node:http only, no packages).
//
//   node upstream_server.js --port-file FILE [--port N] [--log FILE]
//
// Listens on 127.0.0.1 (port N, default any free one) and writes the port to FILE once listening
// (whole, through a rename). Every request but those under /__ is counted and logged (one JSON
// line per request to --log: {"n", "method", "path", "headers", "body_bytes"}) and answered as its
// X-Answer-* headers ask (these reach the upstream because the proxy forwards headers untouched):
//
//   X-Answer-Status: N         the status (default 200)
//   X-Answer-Header: Name: v   a header of the answer (repeatable)
//   X-Answer-Bytes: N          a body of N bytes (a repeating pattern) instead of the echo
//   X-Answer-Hold: FIFO        answer only once a line can be read from FIFO (the test writes it)
//   X-Answer-Stream: N         a chunked answer of N pieces "piece I\n"; with X-Answer-Hold, the
//                              first piece goes before the hold and the rest after it
//   X-Answer-Break: 1          send the head and part of a body, then cut the connection
//   X-Answer-Drop: 1           cut the connection without answering (the request was received)
//   X-Answer-First: N          the first request with a given Idempotency-Key gets status N (a
//                              JSON error body, Retry-After: 0); later ones answer as the rest
//                              of their headers ask
//
// The default body is the echo: {"n", "method", "url", "headers", "body"} as JSON.
// GET /__count answers the number of counted requests so far (as text); /__count?path=P only
// those to path P.
'use strict';
const http = require('node:http');
const fs = require('node:fs');

const args = {};
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i]] = process.argv[i + 1];
const portFile = args['--port-file'];
if (!portFile) {
  process.stderr.write('usage: upstream_server.js --port-file FILE [--port N] [--log FILE]\n');
  process.exit(2);
}
const logFile = args['--log'];

let total = 0;
const byPath = new Map();
const keysSeen = new Set();  // the Idempotency-Keys X-Answer-First has answered

function holdThen(fifo, then) {
  if (!fifo) return then();
  // Opening a FIFO for reading blocks until a writer comes: read it off the event loop.
  const stream = fs.createReadStream(fifo);
  stream.once('data', () => {
    stream.destroy();
    then();
  });
  stream.once('error', (e) => {
    process.stderr.write(`hold ${fifo}: ${e.message}\n`);
    then();
  });
}

function answerHeaders(req) {
  const out = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].toLowerCase() !== 'x-answer-header') continue;
    const colon = raw[i + 1].indexOf(':');
    out.push([raw[i + 1].slice(0, colon).trim(), raw[i + 1].slice(colon + 1).trim()]);
  }
  return out;
}

function patternBytes(n) {
  const unit = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz\n');
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i += unit.length) unit.copy(out, i, 0, Math.min(unit.length, n - i));
  return out;
}

function answer(req, res, body, n) {
  const h = req.headers;
  const status = Number(h['x-answer-status'] || 200);
  const headers = answerHeaders(req);
  const flat = [];
  for (const [name, value] of headers) flat.push(name, value);
  if (h['x-answer-drop']) {
    res.socket.destroy();
    return;
  }
  const key = h['idempotency-key'];
  if (h['x-answer-first'] && key !== undefined && !keysSeen.has(key)) {
    keysSeen.add(key);
    const first = Buffer.from(JSON.stringify({ error: { type: 'first_answer', message: `answer ${n}` } }));
    res.writeHead(Number(h['x-answer-first']), [...flat, 'Content-Type', 'application/json',
      'Retry-After', '0', 'Content-Length', String(first.length)]);
    res.end(first);
    return;
  }
  if (h['x-answer-break']) {
    res.writeHead(status, [...flat, 'Content-Length', '1000']);
    res.write('only part of it');
    setImmediate(() => res.socket.destroy());
    return;
  }
  if (h['x-answer-stream']) {
    const pieces = Number(h['x-answer-stream']);
    res.writeHead(status, [...flat, 'Content-Type', 'text/plain']);
    res.write('piece 1\n');
    holdThen(h['x-answer-hold'], () => {
      for (let i = 2; i <= pieces; i++) res.write(`piece ${i}\n`);
      res.end();
    });
    return;
  }
  let out;
  if (h['x-answer-bytes']) {
    out = patternBytes(Number(h['x-answer-bytes']));
  } else {
    out = Buffer.from(JSON.stringify({
      n, method: req.method, url: req.url, headers: req.rawHeaders, body: body.toString('latin1'),
    }) + '\n');
    if (!headers.some(([name]) => name.toLowerCase() === 'content-type'))
      flat.push('Content-Type', 'application/json');
  }
  holdThen(h['x-answer-hold'], () => {
    res.writeHead(status, [...flat, 'Content-Length', String(out.length)]);
    res.end(req.method === 'HEAD' ? undefined : out);
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://upstream');
  if (url.pathname === '/__count') {
    const path = url.searchParams.get('path');
    res.end(String(path === null ? total : (byPath.get(path) || 0)));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const n = ++total;
    byPath.set(url.pathname, (byPath.get(url.pathname) || 0) + 1);
    if (logFile)
      fs.appendFileSync(logFile, JSON.stringify({
        n, method: req.method, path: req.url, headers: req.rawHeaders, body_bytes: body.length,
      }) + '\n');
    answer(req, res, body, n);
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(args['--port'] || 0), '127.0.0.1', () => {
  fs.writeFileSync(portFile + '.tmp', `${server.address().port}\n`);
  fs.renameSync(portFile + '.tmp', portFile);
});
