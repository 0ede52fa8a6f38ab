// Runs src/server.ts's findServer (bundled by the test) against the fake `vscode` module and
// prints what it found or every attempt, plus the log lines, as one JSON line.
const { findServer } = require(process.argv[2]);
const logs = [];
const log = { info: (m) => logs.push(`info ${m}`), error: (m) => logs.push(`error ${m}`) };
findServer(log).then((found) => process.stdout.write(JSON.stringify({ found, logs }) + '\n'));
