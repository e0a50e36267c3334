// A fast OTLP/HTTP JSON receiver for bench/traces.sh: takes every POST, counts the spans it holds
// (parsed, so a malformed body is an error: 400), answers 200 "{}" at once. What a Collector's
// receiver does before its pipeline, without its checks (tests/helpers/otlp_receiver.py makes
// those). Usage: node otlp_sink.js PORT_FILE; the count is printed on SIGTERM.
'use strict';
const fs = require('fs');
const http = require('http');
let spans = 0;
let bad = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      for (const rs of JSON.parse(Buffer.concat(chunks)).resourceSpans)
        for (const ss of rs.scopeSpans) spans += ss.spans.length;
      res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': 2});
      res.end('{}');
    } catch (e) {
      ++bad;
      res.writeHead(400, {'Content-Length': 0});
      res.end();
    }
  });
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  fs.writeFileSync(process.argv[2] + '.tmp', String(server.address().port));
  fs.renameSync(process.argv[2] + '.tmp', process.argv[2]);
});
process.on('SIGTERM', () => {
  process.stdout.write(`${spans} spans, ${bad} malformed requests\n`);
  process.exit(0);
});
