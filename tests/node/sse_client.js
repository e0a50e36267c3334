// A client of idem's output event stream (GET /ui/attempts/{name}/output, SPEC §10) that cuts
// its connection after an event, again and again, and comes back with Last-Event-ID, as a
// browser's EventSource does after a network cut. The command it follows waits at gates (fifos
// the test made): after each cut this opens the next one, so every reconnect happens while the
// command runs and has more to write. Counts gaps and repeated bytes (an event's first offset
// against the last id), writes what it got of each stream, and prints a JSON summary.
//
//   node sse_client.js URL TOKEN RECONNECTS OUT_FILE ERR_FILE GATE...
'use strict';
const fs = require('fs');
const http = require('http');

const [url, token, reconnectsArg, outFile, errFile, ...gates] = process.argv.slice(2);
const wanted = Number(reconnectsArg);
const got = {stdout: [], stderr: []};
let last = null;      // the id of the last event taken
let next = 0;         // the offset the next byte should have
let gaps = 0, repeats = 0, reconnects = 0, events = 0, opened = 0, busy = 0;

function openGate() {
  if (opened < gates.length) fs.writeFileSync(gates[opened++], 'go\n');
}

function connect() {
  return new Promise((resolve, reject) => {
    const headers = {Authorization: 'Bearer ' + token};
    if (last !== null) headers['Last-Event-ID'] = String(last);
    const req = http.get(url, {headers}, (res) => {
      if (res.statusCode === 503 && busy++ < 5) {
        // All streams taken (the test's held ones, just closed): come back as Retry-After says.
        res.resume();
        setTimeout(() => connect().then(resolve, reject),
                   1000 * Number(res.headers['retry-after'] || 1));
        return;
      }
      if (res.statusCode !== 200) {
        reject(new Error('status ' + res.statusCode));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      let buffer = '';
      let cut = false;
      res.on('data', (text) => {
        if (cut) return;
        buffer += text;
        let end;
        while (!cut && (end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;  // a comment
            const colon = line.indexOf(':');
            fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
          }
          if (!fields.event) continue;
          if (fields.event === 'end') {
            resolve({end: JSON.parse(fields.data)});
            req.destroy();
            cut = true;
            return;
          }
          const bytes = Buffer.from(fields.data, 'base64');
          const id = Number(fields.id);
          const first = id - bytes.length;
          if (first > next) gaps++;
          if (first < next) repeats++;
          got[fields.event].push(bytes);
          next = id;
          last = id;
          events++;
          if (reconnects < wanted) {
            // Cut here, as a network would, then let the command write its next part.
            cut = true;
            req.destroy();
            reconnects++;
            openGate();
            resolve({cut: true});
            return;
          }
        }
      });
      res.on('end', () => { if (!cut) resolve({cut: true}); });
      res.on('error', () => { if (!cut) resolve({cut: true}); });
    });
    req.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
  });
}

async function main() {
  for (;;) {
    const r = await connect();
    if (r.end) {
      fs.writeFileSync(outFile, Buffer.concat(got.stdout));
      fs.writeFileSync(errFile, Buffer.concat(got.stderr));
      console.log(JSON.stringify({reconnects, gaps, repeats, events, bytes: next, end: r.end}));
      return;
    }
    // After the reconnects asked for, the rest of the gates open as the output is read.
    if (reconnects >= wanted) while (opened < gates.length) openGate();
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
