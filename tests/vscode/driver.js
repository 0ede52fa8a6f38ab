/**
 * Browser side of tests/test_vscode_e2e.py: opens code-server's workbench in Debian chromium via
 * playwright-core, runs the test extension's command from the palette, waits for its results file,
 * then runs "Agent Edit: Show History" from the palette and records what the user sees (the
 * history view's rows, the status bar item). Screenshots go to the artifacts folder.
 *
 * Usage: node driver.js URL RESULTS_FILE ARTIFACTS_DIR   (prints one JSON line: what it saw)
 */
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const [url, resultsFile, artifacts] = process.argv.slice(2);
const RESULTS_TIMEOUT_MS = 150000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readResults() {
  try {
    return JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  } catch {
    return null;
  }
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
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('console', (m) => {
    if (m.type() === 'error') (seen.consoleErrors = seen.consoleErrors || []).push(m.text().slice(0, 300));
  });
  step('browser started');
  try {
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    step('workbench visible');
    // The extension's view appears once the workbench has read the installed extensions; only
    // then does the palette list their commands.
    await page.locator('.pane-header', { hasText: 'Agent Edit History' }).waitFor({ timeout: 60000 });
    step('extensions registered');
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
      await sleep(500);
      results = readResults();
    }
    seen.resultsDone = Boolean(results && results.done);
    step('scenarios finished');
    await page.screenshot({ path: path.join(artifacts, 'after-scenarios.png') });
  } catch (err) {
    seen.error = String((err && err.stack) || err);
  }
  try {
    await runCommand(page, 'Agent Edit: Show History');
    const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Agent Edit History' }) });
    await pane.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 10000 });
    seen.historyRows = await pane.locator('.monaco-list-row').allInnerTexts();
    seen.statusBar = await page.locator('.statusbar-item', { hasText: 'Agent edits' }).allInnerTexts();
    step('history view read');
  } catch (err) {
    seen.historyError = String((err && err.stack) || err);
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
