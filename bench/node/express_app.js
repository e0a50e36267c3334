// The peer of bench/proxy_compare.sh: an express app whose POST /orders is made idempotent by
// npm's express-idempotency with its defaults (Idempotency-Key header, in-memory store).
//
//   NODE_PATH=tests/node/node_modules node express_app.js PORT_FILE
//
// Listens on 127.0.0.1, port 0, and writes the port to PORT_FILE. POST /orders answers 201 with
// the small JSON order of orders.js; GET /stats answers {"created": N}, how many orders the
// handler created (replays do not count).
'use strict';

const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const orders = require('./orders');

const app = express();
let created = 0;
app.post('/orders', express.json(), idempotency(), (req, res) => {
  // The middleware has already sent the stored answer when the key was seen before.
  if (getSharedIdempotencyService().isHit(req)) return;
  created += 1;
  res.status(201).json(orders.order(created, req.body));
});
app.get('/stats', (req, res) => res.json({ created }));

const server = app.listen(0, '127.0.0.1', () => orders.writePort(process.argv[2], server));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
