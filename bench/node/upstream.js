// The upstream that bench/proxy_compare.sh puts behind `idem serve --upstream`: plain node:http
// answering POST /orders as express_app.js does, without any idempotency of its own.
//
//   node upstream.js PORT_FILE
//
// Listens on 127.0.0.1, port 0, and writes the port to PORT_FILE. POST /orders answers 201 with
// the JSON order of orders.js; GET /stats answers {"created": N}, how many orders it created.
'use strict';

const http = require('node:http');
const orders = require('./orders');

let created = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let status = 404;
    let object = { error: { type: 'invalid_request_error', message: 'no such route' } };
    if (req.method === 'POST' && req.url === '/orders') {
      created += 1;
      status = 201;
      object = orders.order(created, JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'));
    } else if (req.method === 'GET' && req.url === '/stats') {
      status = 200;
      object = { created };
    }
    const body = JSON.stringify(object);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
});

server.listen(0, '127.0.0.1', () => orders.writePort(process.argv[2], server));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
