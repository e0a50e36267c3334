// The delivery-log page in a real browser: Debian's chromium, headless, driven by puppeteer-core
// (tests/cli/test_ui_browser.sh starts the daemon). Asks for a login, logs in by the one-time link
// (which then works no more, and leaves the address bar), lists, filters, sees a new delivery
// arrive by the live update, opens a detail, re-runs a failed delivery and sees its new attempt,
// is refused a form forged by a page of the hooks' origin, removes a record; saves a screenshot of
// each step in ARTIFACTS; fails on any page error or CSP report.
//
//   node ui_browser.js HOOKS_URL LOGIN_URL ARTIFACTS_DIR OK_FILE
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

const [hooks, loginUrl, artifacts, okFile] = process.argv.slice(2);
const base = new URL(loginUrl).origin;  // the page's own listener
const chromium = process.env.IDEM_CHROMIUM || '/usr/bin/chromium';

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

// The failing hook's records the list shows (the serial hook's, for the queue view, aside).
async function rowKeys(page) {
  const keys = await page.$$eval('#rows a', (as) => as.map((a) => a.textContent));
  return keys.filter((k) => k.startsWith('/hooks/x#'));
}

// The browser's own process: closed gracefully at the end, killed when that does not finish within
// 10 s (a hung chromium must not keep the test past its time, nor hide why it failed).
async function closeBrowser(browser) {
  const proc = browser.process();
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(resolve, 10000, 'late'); });
  const outcome = await Promise.race([browser.close().then(() => 'closed', () => 'failed'), late]);
  clearTimeout(timer);
  if (outcome !== 'closed' && proc && proc.exitCode === null) proc.kill('SIGKILL');
}

// Opens the gate FIFO for the handler that waits on it: a writer's open would block the whole
// process until a reader comes, so the open is tried without blocking until the handler reads
// (10 s at most).
async function openGate(fifo) {
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      const fd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
      fs.writeSync(fd, 'go\n');
      fs.closeSync(fd);
      return;
    } catch (e) {
      if (e.code !== 'ENXIO' || Date.now() > deadline) {
        throw new Error('the gate ' + fifo + ': ' + e.message);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// A hook's delivery, bounded: 20 s for the answer.
const deliver = (url, headers, body) =>
  fetch(url, {method: 'POST', headers, body, signal: AbortSignal.timeout(20000)});

// The step the test is at, printed if it does not finish in time (the shell's timeout is 120 s).
let step = 'launching chromium';
const watchdog = setTimeout(() => {
  console.error('the browser test did not finish within 100 s; it was at: ' + step);
  process.exit(1);  // puppeteer's exit handler kills chromium
}, 100000);
watchdog.unref();

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'idem-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    // No network beyond loopback here: without these chromium waits on services it cannot reach.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--disable-dev-shm-usage'],
    timeout: 20000,
  });
  const problems = [];
  try {
    const page = await browser.newPage();
    await page.setViewport({width: 1100, height: 700});
    page.setDefaultTimeout(10000);
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    let loginAsked = false;  // while the login is asked for, its 401 is no problem
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (loginAsked && m.text().includes('status of 401')) return;
      problems.push('console: ' + m.text());
    });
    page.on('dialog', (d) => d.accept());
    const shot = (name) => {
      step = 'after the screenshot ' + name;
      return page.screenshot({path: path.join(artifacts, name + '.png')});
    };
    step = 'the login';

    // No page without a login: the token form, styled (its style sheet needs no login).
    loginAsked = true;
    let answer = await page.goto(base + '/ui', {waitUntil: 'load'});
    check(answer.status() === 401, 'the page asks for a login: ' + answer.status());
    check(await page.$('form[action="/ui/login"] input[name=token]') !== null, 'the token form');
    check((await page.$eval('body', (b) => getComputedStyle(b).backgroundColor)) ===
          'rgb(247, 248, 250)', 'the login page is styled');
    await shot('login');
    loginAsked = false;

    // The printed link logs in once; the token leaves the address bar.
    answer = await page.goto(loginUrl, {waitUntil: 'load'});
    check(answer.status() === 200 && page.url() === base + '/ui', 'logged in at ' + page.url());
    const [cookie] = (await page.cookies()).filter((c) => c.name === 'idem_ui_session');
    check(cookie && cookie.httpOnly && cookie.sameSite === 'Strict' && cookie.path === '/ui' &&
          !cookie.secure, 'the session cookie: ' + JSON.stringify(cookie));
    const other = await browser.createBrowserContext();
    const stranger = await other.newPage();
    answer = await stranger.goto(loginUrl, {waitUntil: 'load'});
    check(answer.status() === 401, 'the link works once: ' + answer.status());
    await other.close();

    // The list, newest first.
    let keys = await rowKeys(page);
    console.log('listed: ' + keys.join(', '));
    check(keys.length === 3, 'three records listed');
    check(keys[0] === '/hooks/x#k3', 'newest first');
    await shot('list');

    // A filter: failed ones only.
    await page.select('select[name=status]', 'failed');
    await Promise.all([page.waitForNavigation(), page.click('form.filters button[type=submit]')]);
    check(page.url().includes('status=failed'), 'the filter is in the URL');
    keys = await rowKeys(page);
    check(keys.length === 2 && !keys.includes('/hooks/x#k2'), 'the failed ones: ' + keys);
    await shot('filtered');

    // The live update: a delivery made now shows up without a reload.
    const r = await deliver(hooks + '/hooks/x', {'X-Key': 'k4'}, 'b4');
    check(r.status === 500, 'the new delivery fails');
    await page.waitForFunction(
        () => [...document.querySelectorAll('#rows a')].some((a) => a.textContent === '/hooks/x#k4'),
        {timeout: 8000});
    console.log('live update: k4 appeared');

    // A detail.
    await Promise.all([page.waitForNavigation(), page.click('#rows a[href*="k1"]')]);
    check((await page.$eval('#key', (e) => e.textContent)) === '/hooks/x#k1', 'the detail of k1');
    check((await page.$eval('#status', (e) => e.textContent)) === 'failed', 'k1 failed');
    check((await page.$eval('#attempt', (e) => e.textContent)) === '1', 'attempt 1');
    const pre = await page.$$eval('pre', (ps) => ps.map((p) => p.textContent).join('\n'));
    check(pre.includes('handler failed'), 'the output is shown');
    check(pre.includes('<b>body-1</b>'), 'the body is shown as text');
    await shot('detail');

    // A re-run: the handler succeeds now; the same key gets attempt 2.
    fs.writeFileSync(okFile, '');
    await Promise.all([page.waitForNavigation(), page.click('#rerun')]);
    check((await page.$eval('#status', (e) => e.textContent)) === 'succeeded', 'succeeded after re-run');
    check((await page.$eval('#attempt', (e) => e.textContent)) === '2', 'attempt 2 after re-run');
    check((await page.$eval('.notice', (e) => e.textContent)).startsWith('Re-run done'), 'the notice');
    // The attempts, newest first: the re-run, then the delivery.
    const attempts = await page.$$eval('#attempts tbody tr',
        (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    console.log('attempts: ' + JSON.stringify(attempts));
    check(attempts.length === 2, 'two attempts');
    check(attempts[0][0] === '2' && attempts[0][1] === 'rerun' && attempts[0][2] === 'succeeded',
          'attempt 2 is the re-run, succeeded');
    check(attempts[1][0] === '1' && attempts[1][1] === 'hook' && attempts[1][2] === 'failed',
          'attempt 1 is the delivery, failed');
    await shot('rerun');

    // A page of the hooks' origin (a proxied app's page, a hook's answer) can neither read the
    // page (another origin: CORS) nor post its forms (Sec-Fetch-Site says same-site), though the
    // browser sends the cookie along (same site: only the port differs).
    const evil = await browser.newPage();
    await evil.goto(hooks + '/healthz', {waitUntil: 'load'});
    const read = await evil.evaluate((ui) => fetch(ui + '/ui/record?key=%2Fhooks%2Fx%23k1',
        {credentials: 'include'}).then((r) => 'read ' + r.status, (e) => 'blocked'), base);
    check(read === 'blocked', 'a page of the hooks origin reads the page: ' + read);
    const forged = await Promise.all([
      evil.waitForNavigation(),
      evil.evaluate((ui) => {
        const form = document.createElement('form');
        form.method = 'post';
        form.action = ui + '/ui/remove';
        const key = document.createElement('input');
        key.name = 'key';
        key.value = '/hooks/x#k1';
        form.appendChild(key);
        document.body.appendChild(form);
        form.submit();
      }, base),
    ]);
    check(forged[0].status() === 403, 'a forged remove: ' + forged[0].status());
    await evil.screenshot({path: path.join(artifacts, 'forged.png')});
    await evil.close();
    await page.reload({waitUntil: 'load'});
    check((await page.$eval('#key', (e) => e.textContent)) === '/hooks/x#k1', 'k1 is still there');

    // Remove it.
    await Promise.all([page.waitForNavigation(), page.click('#remove')]);
    check(page.url().endsWith('/ui?notice=removed'), 'back on the list: ' + page.url());
    keys = await rowKeys(page);
    check(!keys.includes('/hooks/x#k1') && keys.includes('/hooks/x#k4'), 'k1 removed: ' + keys);
    await shot('removed');

    // The queue view: a serial group's running delivery, then its waiters in order, keys as text.
    answer = await page.goto(base + '/ui/queues', {waitUntil: 'load'});
    check(answer.status() === 200, 'the queue view answers ' + answer.status());
    const line = await page.$$eval('section.queue tbody tr',
        (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
    check(JSON.stringify(line) === JSON.stringify(
        [['running', '/hooks/q#held'], ['1', '/hooks/q#<i>q1</i>'], ['2', '/hooks/q#q2']]),
    'the queue view lists the line in order: ' + JSON.stringify(line));
    check((await page.$$('section.queue i')).length === 0, 'a key in the queue view is text');
    await shot('queues');

    // The schedules view: each expectation with its last run (a link to its record), its next
    // due time and findings; a pattern's markup is text.
    answer = await page.goto(base + '/ui/schedules', {waitUntil: 'load'});
    check(answer.status() === 200, 'the schedules view answers ' + answer.status());
    const schedules = await page.$$eval('section.schedule h2', (hs) => hs.map((h) => h.textContent));
    check(JSON.stringify(schedules) === JSON.stringify(['<b>sched</b>-', 'nightly-']),
          'the schedules view lists both patterns: ' + JSON.stringify(schedules));
    check((await page.$$('section.schedule h2 b')).length === 0, 'a pattern is text');
    const kinds = await page.$$eval('section.schedule:first-of-type table.findings tbody tr',
        (rows) => rows.map((r) => r.cells[1].textContent));
    check(kinds.length > 0 && kinds.every((k) => k === 'missed'),
          'the first expectation shows its missed due times: ' + JSON.stringify(kinds));
    const nightly = await page.$eval('section.schedule:last-of-type', (s) => ({
      last: s.querySelector('.last-run a') && s.querySelector('.last-run a').textContent,
      next: s.querySelector('.next-due').textContent,
      none: !!s.querySelector('.findings-none'),
    }));
    check(nightly.last === 'nightly-1', 'the last run links its record: ' + JSON.stringify(nightly));
    check(/T02:30:00\+0[12]:00/.test(nightly.next), 'next due at 02:30 Paris time: ' + nightly.next);
    check(nightly.none, 'no findings for the schedule that ran');
    await shot('schedules');
    await page.goto(base + '/ui', {waitUntil: 'load'});

    // A running delivery's detail shows its output as it comes, without a reload: each line
    // appears once its gate (a fifo the handler reads) is opened; stderr marked, text escaped.
    const gates = path.dirname(okFile);
    answer = await page.goto(base + '/ui/record?key=' + encodeURIComponent('/hooks/live#l1'),
                             {waitUntil: 'load'});
    check(answer.status() === 200, 'the running delivery\'s detail answers ' + answer.status());
    const liveHas = (t) => page.waitForFunction(
        (x) => document.getElementById('live-text').textContent.includes(x), {timeout: 8000}, t);
    await liveHas('live line 1');
    check(!(await page.$eval('#live-text', (e) => e.textContent)).includes('live line 2'),
          'the second line is not there before its gate');
    await page.$eval('#live-output', (e) => e.scrollIntoView());
    await shot('live-1');
    await openGate(path.join(gates, 'live-1'));
    await liveHas('live line 2 <b>not bold</b>');
    await liveHas('live warning');
    check((await page.$$('#live-text b')).length === 0, 'live output is text, not markup');
    check((await page.$eval('#live-text .stderr', (e) => e.textContent)).includes('live warning'),
          'stderr is marked');
    check(!(await page.$eval('#live-state', (e) => e.textContent)).startsWith('Ended'),
          'still running after the second line');
    await page.$eval('#live-output', (e) => e.scrollIntoView());
    await shot('live-2');
    await openGate(path.join(gates, 'live-2'));
    await liveHas('live line 3');
    await page.waitForFunction(
        () => document.getElementById('live-state').textContent.startsWith('Ended: succeeded, exit 0'),
        {timeout: 8000});
    const seen = await page.$eval('#live-text', (e) => e.textContent);
    check(seen === 'live line 1\nlive line 2 <b>not bold</b>\nlive warning\nlive line 3\n',
          'every byte once, in order: ' + JSON.stringify(seen));
    await page.$eval('#live-output', (e) => e.scrollIntoView());
    await shot('live-end');
    await page.goto(base + '/ui', {waitUntil: 'load'});

    // A key of 246 bytes without a break point wraps: the Status column stays on screen.
    const long = 'L'.repeat(246);
    const rl = await deliver(hooks + '/hooks/x', {'X-Key': long}, 'b');
    check(rl.status === 200, 'the long key\'s delivery runs: ' + rl.status);
    await page.waitForFunction(
        (k) => [...document.querySelectorAll('#rows a')].some((a) => a.textContent === k),
        {timeout: 8000}, '/hooks/x#' + long);
    const right = await page.$eval('#rows tr:first-child .badge',
        (b) => b.getBoundingClientRect().right);
    check(right <= 1100, 'the status of a long key is on screen (its right edge at ' + right + ')');
    await shot('long-key');
  } finally {
    step = 'closing chromium';
    await closeBrowser(browser);
    fs.rmSync(profile, {recursive: true, force: true});
  }
  if (problems.length) throw new Error(problems.join('\n'));
}

main().then(() => console.log('browser test passed'), (e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
