// The console in headless Chromium (Debian's /usr/bin/chromium), driven by playwright-core.
// Run by tests/console.rs, which starts the local stack and the console and passes:
//   CONSOLE_URL        the printed URL (with the run's token)
//   FAILED_KEY         an event the system of record refused (FAILED, dead-lettered)
//   FAILED_LAST_ERROR  its ledger item's last_error
//   SCRIPT_KEY         an event whose body holds a <script>
//   FIGURES            the github source's counts in the run's EMF lines, per series (JSON)
//   SCREENSHOTS        where the screenshots go (docs/images/)
// The tests run in order, one browser page, as an operator would go.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';

const need = (name) => {
  const value = process.env[name];
  assert.ok(value, `${name} is set`);
  return value;
};
const loginUrl = need('CONSOLE_URL');
const failedKey = need('FAILED_KEY');
const lastError = need('FAILED_LAST_ERROR');
const scriptKey = need('SCRIPT_KEY');
const figures = JSON.parse(need('FIGURES'));
const shots = need('SCREENSHOTS');
const base = new URL(loginUrl).origin;
const port = Number(new URL(loginUrl).port);

let browser;
let context;
let page;
const dialogs = [];

before(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    // Chromium's sandbox needs an unprivileged user; the tests run as root in CI.
    args: ['--no-sandbox'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
});

after(async () => {
  await browser?.close();
});

/// A raw HTTP request to the console, with the headers given (a browser cannot forge Host).
function raw(method, pathname, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: pathname, headers }, (res) => {
      let text = '';
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the printed URL opens the overview, drops the token from the address, shows the dead letter and the figures', async () => {
  await page.goto(loginUrl);
  assert.equal(page.url(), `${base}/`, 'redirected without the token');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const main = await page.locator('main').innerText();
  assert.match(main, /dead-letter queue\s+1 waiting/);
  assert.match(main, /delivery\s+running \(Enabled\)/);
  assert.match(main, /Alarms in ALARM\s+None\./);
  // Every part answered: CloudWatch in the SDK's protocol, the queue's age included.
  assert.doesNotMatch(main, /unavailable|unknown \(/);
  // The run's counts, per series, on the github card: each chart's label and total.
  const github = page.getByRole('region', { name: 'source github' });
  assert.ok(Object.values(figures).some((n) => n > 0), 'the run counted something');
  for (const [series, n] of Object.entries(figures)) {
    const chart = github.getByRole('img', { name: `${series}: ${n} in the last 24 hours` });
    assert.equal(await chart.count(), 1, `github ${series} ${n}`);
    // One bar an hour: a bar where the run counted (this hour's, or the last two across an
    // hour's turn), none where it did not.
    const bars = await chart.locator('rect').count();
    assert.ok(n > 0 ? bars >= 1 && bars <= 2 : bars === 0, `github ${series}: ${bars} bars`);
  }
  // The other sources saw nothing in this run.
  const cards = page.locator('section.card');
  assert.ok(await cards.count() > 1, 'a card per source');
  for (const card of await cards.all()) {
    const name = await card.getAttribute('aria-label');
    if (name === 'source github') continue;
    assert.equal(await card.getByRole('img', { name: 'accepted: 0 in the last 24 hours' }).count(), 1, name);
  }
  // Each destination's row: billing's breaker opened (tests/console.rs wrote it as a consumer
  // does), crm paused; both hold their events, linked to the QUEUED list.
  const billing = page.getByRole('row', { name: 'destination billing' });
  assert.match(await billing.innerText(), /billing\s+no\s+OPEN since 2023-11-14 22:13:20 UTC: its events are held/);
  assert.equal(await billing.getByRole('link', { name: 'held: the QUEUED events →' }).getAttribute('href'), '/events?status=QUEUED');
  const crm = page.getByRole('row', { name: 'destination crm' });
  assert.match(await crm.innerText(), /crm\s+PAUSED\s+closed/);
  assert.match(main, /inbox-ops resume --destination NAME/);
  await page.screenshot({ path: path.join(shots, 'console-overview.png'), fullPage: true });
});

test('the overview shows each destination\'s rate limit and this second\'s count', async () => {
  await page.goto(`${base}/`);
  const rates = page.getByRole('table', { name: 'rate limits' });
  await rates.waitFor();
  const rows = await rates.locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, 2, rows.join(' | '));
  assert.match(rows[0], /^invoices\s+5 calls a second\s+\d+ in this second$/);
  assert.match(rows[1], /^ledger\s+no limit\s+—$/);
});

test('from the dead letter to the failed event in the list, with its last_error', async () => {
  await page.getByRole('link', { name: 'the failed events →' }).click();
  await page.getByRole('heading', { name: 'Events' }).waitFor();
  const row = page.locator('tbody tr', { hasText: failedKey });
  assert.equal(await row.count(), 1);
  const text = await row.innerText();
  assert.ok(text.includes(lastError), `the row shows the last_error: ${text}`);
  assert.ok(text.includes('FAILED'));
  assert.equal(await page.locator('tbody tr', { hasText: scriptKey }).count(), 0, 'the filter keeps completed events out');
  // Every event of the source, newest first, for the screenshot.
  await page.getByLabel('status').selectOption('');
  await page.getByRole('button', { name: 'List' }).click();
  await page.locator('tbody tr', { hasText: scriptKey }).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 2);
  await page.screenshot({ path: path.join(shots, 'console-events.png'), fullPage: true });
});

test('opening the failed event shows its body, its headers masked, its trace id', async () => {
  await page.getByRole('link', { name: failedKey }).click();
  await page.getByRole('heading', { name: `Event ${failedKey}` }).waitFor();
  const body = await page.locator('#body').innerText();
  assert.ok(body.includes('"marker": "refused-by-the-system-of-record"'), body);
  const main = await page.locator('main').innerText();
  assert.match(main, /x-hub-signature-256\s+•••••• \(masked, \d+ characters\)/);
  assert.doesNotMatch(main, /sha256=[0-9a-f]{64}/, 'no signature on the page');
  assert.ok(main.includes(lastError));
  // The trace id under the key (docs/operations.md, "Traces"): the item's own.
  const trace = main.match(/Trace ([0-9a-f]{32})/);
  assert.ok(trace, `the event's trace id under its key: ${main}`);
  assert.match(main, new RegExp(`trace_id\\s+${trace[1]}`));
  await page.screenshot({ path: path.join(shots, 'console-event.png'), fullPage: true });
});

test('a <script> body renders as text and runs nothing', async () => {
  await page.goto(`${base}/event?key=${encodeURIComponent(scriptKey)}`);
  const body = await page.locator('#body').innerText();
  assert.ok(body.includes("<script>window.__xss=1;alert('xss')</script>"), body);
  assert.equal(await page.locator('script').count(), 0, 'no script element on the page');
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, [], 'no dialog opened');
});

test('replay from the page: the dry run, then the confirmed replay', async () => {
  await page.goto(`${base}/event?key=${encodeURIComponent(failedKey)}`);
  await page.getByRole('link', { name: 'Replay this event…' }).click();
  const confirm = page.locator('.confirm');
  assert.match(await confirm.innerText(), /Dry run: 1 event\(s\) of the event github:console-fails/);
  await page.getByRole('button', { name: 'Replay 1 event(s)' }).click();
  await page.locator('#outcome, #reason').first().waitFor();
  const refused = page.locator('#reason');
  if (await refused.count()) assert.fail(`the replay was refused: ${await refused.innerText()}`);
  const outcome = await page.locator('#outcome').innerText();
  assert.match(outcome, /^replay rp-[0-9TZ]+-[0-9a-f]{8}: 1 event\(s\) sent$/);
});

test('a request naming another host is refused (DNS rebinding)', async () => {
  for (const host of [`evil.example:${port}`, `127.0.0.1.evil.example:${port}`]) {
    const answer = await raw('GET', '/', { host });
    assert.equal(answer.status, 421, host);
  }
  const ours = await raw('GET', '/', { host: `127.0.0.1:${port}` });
  assert.equal(ours.status, 403, 'our Host without the session: refused too, but not as foreign');
});

test('an action without the token is refused', async () => {
  // The browser's own session (its cookie), but no form token.
  const noToken = await context.request.post(`${base}/redrive`, { form: {} });
  assert.equal(noToken.status(), 403);
  assert.match(await noToken.text(), /needs the form&#39;s token|needs the form's token/);
  const wrong = await context.request.post(`${base}/delivery`, { form: { set: 'pause', csrf: 'guess' } });
  assert.equal(wrong.status(), 403);
  // No session at all: a fresh client with neither cookie nor token.
  const stranger = await raw('POST', '/redrive', {
    host: `127.0.0.1:${port}`,
    'content-type': 'application/x-www-form-urlencoded',
  }, 'csrf=x');
  assert.equal(stranger.status, 403);
  // A page of another origin posting with the session cookie is refused by its Origin.
  const foreign = await context.request.post(`${base}/redrive`, {
    form: { csrf: 'x' },
    headers: { origin: 'http://evil.example' },
  });
  assert.equal(foreign.status(), 403);
});
