/**
 * Browser side of tests/test_vscode_e2e.py: opens code-server's workbench in Debian chromium via
 * playwright-core and acts as the user:
 *   1. the first start fails (the settings name a Python without agent-edit): it records the
 *      notification, clicks "Select interpreter" and types the right Python into the file dialog;
 *   2. runs the test extension's command from the palette and waits for its results file,
 *      answering the modal "Undo ...?" dialog when it appears (and recording it);
 *   3. runs "Agent Edit: Show History", "Agent Edit: Show Log" from the palette and records what
 *      they show (the history rows, the status bar item, the output channel's lines).
 * Screenshots go to the artifacts folder and, for the ones a reviewer looks at, to SCREENSHOTS.
 *
 * Usage: node driver.js URL RESULTS_FILE ARTIFACTS_DIR RIGHT_PYTHON SCREENSHOTS_DIR
 * (prints one JSON line: what it saw)
 */
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const [url, resultsFile, artifacts, rightPython, screenshots] = process.argv.slice(2);
const RESULTS_TIMEOUT_MS = 150000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readResults() {
  try {
    return JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  } catch {
    return null;
  }
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(artifacts, name) });
  fs.mkdirSync(screenshots, { recursive: true });
  fs.copyFileSync(path.join(artifacts, name), path.join(screenshots, name));
}

async function runCommand(page, title, step = () => {}) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  await input.fill(`>${title}`);
  step('palette open');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 5000 });
  await page.keyboard.press('Enter');
  step(`ran ${title}`);
}

/** The failed first start: read the notification, pick the right Python through its button. */
async function firstRun(page, seen, step) {
  const toast = page.locator('.notification-toast', { hasText: 'Agent Edit could not start its server' });
  await toast.waitFor({ state: 'visible', timeout: 60000 });
  seen.firstRun = {
    text: await toast.locator('.notification-list-item-message').innerText(),
    buttons: await toast.locator('.monaco-button').allInnerTexts(),
  };
  await shot(page, 'first-run-notification.png');
  step('first-run notification seen');
  await toast.locator('.monaco-button', { hasText: 'Select interpreter' }).click();
  // code-server's file dialog is a quick input holding a path.
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 10000 });
  // The dialog fills in its start folder (and its listing) asynchronously, which can overwrite
  // what was typed: type the path until it stays, then accept; it checks the path before closing.
  const widget = page.locator('.quick-input-widget');
  for (let attempt = 0; attempt < 5; attempt++) {
    await input.fill(rightPython);
    await sleep(700);
    if ((await input.inputValue()) !== rightPython) continue;
    if (attempt === 0) await shot(page, 'select-interpreter.png');
    await page.keyboard.press('Enter');
    try {
      await widget.waitFor({ state: 'hidden', timeout: 3000 });
      break;
    } catch {
      step('file dialog still open: typing the path again');
    }
  }
  await widget.waitFor({ state: 'hidden', timeout: 1000 });
  step('interpreter selected');
}

/** While the scenarios run: answer the modal undo confirmation like a user who reads it. */
async function answerDialogs(page, seen) {
  const dialog = page.locator('.monaco-dialog-box');
  if (!(await dialog.isVisible().catch(() => false))) return;
  const text = await dialog.innerText().catch(() => '');
  (seen.dialogs = seen.dialogs || []).push(text);
  await shot(page, 'undo-confirmation.png');
  await dialog.locator('.monaco-button', { hasText: 'Undo' }).first().click();
  // Not seen twice while it closes.
  await dialog.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
}

async function main() {
  const seen = { steps: [] };
  const step = (s) => seen.steps.push(`${new Date().toISOString()} ${s}`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') (seen.consoleErrors = seen.consoleErrors || []).push(m.text().slice(0, 300));
  });
  step('browser started');
  try {
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    step('workbench visible');
    await firstRun(page, seen, step);
    // The palette lists the test command once the extension host has read the extensions.
    const deadline = Date.now() + 60000;
    for (;;) {
      try {
        await runCommand(page, 'Agent Edit Test: Run Scenarios', step);
        // Running it activates both extensions first; give that time before asking again.
        for (let i = 0; i < 20 && !readResults(); i++) await sleep(250);
        if (readResults()) break;
      } catch (err) {
        step(`palette not ready: ${String(err.message).split('\n')[0]}`);
        if (Date.now() > deadline) throw err;
      }
      await sleep(1000);
    }
    step('scenarios started');
    const until = Date.now() + RESULTS_TIMEOUT_MS;
    let results = readResults();
    while (!(results && results.done) && Date.now() < until) {
      await answerDialogs(page, seen);
      await sleep(300);
      results = readResults();
    }
    seen.resultsDone = Boolean(results && results.done);
    step('scenarios finished');
    await shot(page, 'diff.png');
  } catch (err) {
    seen.error = String((err && err.stack) || err);
    await page.screenshot({ path: path.join(artifacts, 'error.png') }).catch(() => {});
  }
  try {
    await runCommand(page, 'Agent Edit: Show History');
    const sidebar = page.locator('.part.sidebar');
    await sidebar.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 10000 });
    await sleep(500);
    seen.historyRows = await sidebar.locator('.monaco-list-row').allInnerTexts();
    seen.statusBar = await page.locator('.statusbar-item', { hasText: 'Agent edits' }).allInnerTexts();
    await shot(page, 'history-view.png');
    step('history view read');
  } catch (err) {
    seen.historyError = String((err && err.stack) || err);
  }
  try {
    await runCommand(page, 'Agent Edit: Show Log');
    const lines = page.locator('.part.panel .monaco-editor .view-lines');
    await lines.first().waitFor({ state: 'visible', timeout: 10000 });
    // The channel follows its end and the start lines scroll out of view: filter it the way a
    // user looking for the start would (the filter box takes comma-separated terms).
    const filter = page.locator('.part.panel .viewpane-filter input');
    await filter.fill("Agent Edit 0.1.0,workspace:,cannot run,settings sent,server started,'initialize");
    await sleep(500);
    await page.locator('.part.panel .view-line', { hasText: 'server started' }).first().waitFor({ timeout: 10000 });
    seen.outputLines = await page.locator('.part.panel .view-line').allInnerTexts();
    await shot(page, 'output-channel.png');
    step('output channel read');
  } catch (err) {
    seen.outputError = String((err && err.stack) || err);
  } finally {
    await page.screenshot({ path: path.join(artifacts, 'final.png') }).catch(() => {});
    await browser.close();
  }
  process.stdout.write(JSON.stringify(seen) + '\n');
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: String(err.stack || err) }) + '\n');
  process.exit(1);
});
