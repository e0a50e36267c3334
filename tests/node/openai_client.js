// One call of the official OpenAI Node SDK (npm's `openai`), a chat completion, pointed at an
// HTTP server on 127.0.0.1 (idem's proxy in the tests), printed as one JSON line so shell tests
// can check it with jsonq.
//
//   node openai_client.js BASE_URL [--key KEY] [--retries N] [--header 'Name: value']...
//
// BASE_URL is the SDK's baseURL ("http://127.0.0.1:PORT/case/v1"). The SDK sends no
// Idempotency-Key of its own accord: the call gives it as a request header, as its users do (the
// SDK repeats the call's headers on every retry). It is KEY, or without --key a new
// "openai-<uuid>". --retries is the SDK's maxRetries (default 2): it retries connection errors,
// 408, 409, 429 and 5xx answers by itself, unless the answer says X-Should-Retry: false.
// --header adds a header to the request (the tests' upstream reads X-Answer-* ones).
//
// On success prints {"ok":true,"body":<the parsed answer>,"replayed":<Idempotent-Replayed or
// null>,"attempts":[…]} and exits 0; when the SDK throws an APIError, prints {"ok":false,
// "status":…,"errorType":<error.type of the answer's error member>,"message":…,"attempts":[…]}
// and exits 2. "attempts" holds the Idempotency-Key of each HTTP attempt the SDK made, in order.
'use strict';

const crypto = require('node:crypto');
const OpenAI = require('openai');

function parseArgs(argv) {
  const [baseURL, ...rest] = argv;
  const options = { baseURL, retries: 2, headers: {} };
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i].replace(/^--/, '');
    const value = rest[i + 1];
    if (!['key', 'retries', 'header'].includes(name) || value === undefined) {
      throw new Error(`unknown or incomplete option ${rest[i]}`);
    }
    if (name === 'header') {
      const colon = value.indexOf(':');
      options.headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
    } else {
      options[name] = name === 'retries' ? Number(value) : value;
    }
  }
  if (!baseURL) throw new Error('usage: BASE_URL [OPTIONS]');
  return options;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const attempts = [];
  const client = new OpenAI({
    apiKey: 'sk-idem-proxy-test',
    baseURL: options.baseURL,
    maxRetries: options.retries,
    timeout: 60 * 1000,
    // The SDK's own fetch, watched: the key of every attempt.
    fetch: (url, init) => {
      attempts.push(new Headers(init.headers).get('idempotency-key'));
      return fetch(url, init);
    },
  });
  const request = { model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] };
  const key = options.key || `openai-${crypto.randomUUID()}`;
  const callOptions = { headers: { ...options.headers, 'Idempotency-Key': key } };
  try {
    const { data, response } = await client.chat.completions.create(request, callOptions).withResponse();
    process.stdout.write(`${JSON.stringify({
      ok: true,
      body: data,
      replayed: response.headers.get('idempotent-replayed'),
      attempts,
    })}\n`);
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    process.stdout.write(`${JSON.stringify({
      ok: false,
      status: err.status ?? null,
      errorType: err.error?.type ?? null,
      message: err.message,
      attempts,
    })}\n`);
    process.exitCode = 2;
  }
}

main().catch((err) => {
  process.stderr.write(`openai_client: ${err.stack || err}\n`);
  process.exitCode = 1;
});
