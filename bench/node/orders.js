// What both servers of bench/proxy_compare.sh answer, so the two sides send the same bytes.
'use strict';

const fs = require('node:fs');

// The order made by the n-th creation from the request's JSON body.
function order(n, body) {
  return {
    id: `ord_${String(n).padStart(8, '0')}`,
    object: 'order',
    amount: body.amount ?? null,
    currency: body.currency ?? null,
    status: 'created',
  };
}

// Writes the listening port to file whole (under another name, then renamed).
function writePort(file, server) {
  fs.writeFileSync(`${file}.tmp`, `${server.address().port}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

module.exports = { order, writePort };
