/**
 * Finding and checking the server before it is started, so a first run either works or says why
 * in one notification. Candidates, in order: the user's `agentEdit.server.command` or
 * `agentEdit.server.python` (when set, only that: it is what the user asked for), else the
 * workspace's `.venv`, the Python extension's selected interpreter, `agent-edit` on PATH and
 * `python3`. Each is checked with `--version` (which fails, saying what to install, when the
 * Python lacks the server's dependencies) before the language client is started with it.
 */
import * as vscode from 'vscode';
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export interface Found {
  command: string;
  args: string[];
  /** Where the command came from, for the log: "agentEdit.server.python", "the workspace's .venv", ... */
  source: string;
  version: string;
}

interface Candidate {
  command: string[];
  source: string;
}

export interface Attempt {
  source: string;
  command: string;
  error: string;
}

const CHECK_TIMEOUT_MS = 15000;

/** `<command...> --version`: its first output line, or why it failed. */
function check(command: string[], cwd: string | undefined): Promise<string> {
  const [exe, ...rest] = command;
  // A server command ends with `serve`; its check is the same program with `--version`. Any
  // other custom command (a wrapper script) may not know `--version`: it is started unchecked.
  if (rest.at(-1) !== 'serve') return Promise.resolve('not checked (the command does not end with "serve")');
  const args = [...rest.slice(0, -1), '--version'];
  return new Promise((resolve, reject) => {
    execFile(exe, args, { cwd, timeout: CHECK_TIMEOUT_MS }, (err, stdout, stderr) => {
      const out = String(stdout).trim();
      if (!err && out.startsWith('agent-edit ')) return resolve(out.split('\n')[0]);
      const e = err as NodeJS.ErrnoException | null;
      if (e?.code === 'ENOENT') return reject(new Error(`${exe} was not found`));
      if (e?.code === 'EACCES') return reject(new Error(`${exe} is not executable`));
      const said = (String(stderr).trim() || out).split('\n');
      // Python's own "No module named lsp_server" is the usual case: say it plainly.
      const missing = said.find((l) => /No module named '?lsp_server/.test(l));
      if (missing) return reject(new Error(`agent-edit is not installed for ${exe}`));
      reject(new Error(said.slice(-3).join(' ') || String(err?.message ?? 'no version printed')));
    });
  });
}

async function pythonExtensionInterpreter(folder: vscode.Uri | undefined): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) return undefined;
  try {
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments?.getActiveEnvironmentPath?.(folder)?.path;
  } catch {
    return undefined;
  }
}

async function candidates(): Promise<{ list: Candidate[]; configured: boolean }> {
  const cfg = vscode.workspace.getConfiguration('agentEdit.server');
  const command = cfg.get<string[]>('command', []);
  if (command.length > 0) return { list: [{ command, source: 'agentEdit.server.command' }], configured: true };
  const serve = (python: string) => [python, '-m', 'lsp_server', 'serve'];
  const python = cfg.get<string>('python', '');
  if (python) return { list: [{ command: serve(python), source: 'agentEdit.server.python' }], configured: true };
  const list: Candidate[] = [];
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (folder) {
    for (const bin of ['.venv/bin/python', '.venv/Scripts/python.exe']) {
      const p = path.join(folder.fsPath, bin);
      if (fs.existsSync(p)) list.push({ command: serve(p), source: "the workspace's .venv" });
    }
  }
  const selected = await pythonExtensionInterpreter(folder);
  if (selected) list.push({ command: serve(selected), source: "the Python extension's interpreter" });
  list.push({ command: ['agent-edit', 'serve'], source: 'agent-edit on PATH' });
  list.push({ command: serve('python3'), source: 'python3 on PATH' });
  return { list, configured: false };
}

/** The first candidate that passes its check, or every attempt with why it failed. */
export async function findServer(log: vscode.LogOutputChannel): Promise<Found | Attempt[]> {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const { list } = await candidates();
  const attempts: Attempt[] = [];
  for (const c of list) {
    try {
      const version = await check(c.command, cwd);
      log.info(`server: ${c.command.join(' ')} (from ${c.source}): ${version}`);
      return { command: c.command[0], args: c.command.slice(1), source: c.source, version };
    } catch (err: any) {
      const attempt = { source: c.source, command: c.command[0], error: String(err?.message ?? err) };
      log.error(`server: ${c.command.join(' ')} (from ${c.source}) cannot run: ${attempt.error}`);
      attempts.push(attempt);
    }
  }
  return attempts;
}

/** One notification for a server that cannot start: what was tried, why, and what to do. */
export async function explainFailure(attempts: Attempt[], log: vscode.LogOutputChannel): Promise<'select' | undefined> {
  const tried = attempts.map((a) => `${a.source} (${a.command}): ${a.error}`).join('; ');
  const message =
    `Agent Edit could not start its server. Tried ${tried}. ` +
    'Pick a Python that has agent-edit installed (for example a virtual environment: ' +
    'python3 -m venv .venv && .venv/bin/pip install <agent-edit>), or set agentEdit.server.python.';
  const choice = await vscode.window.showErrorMessage(message, 'Select interpreter', 'Open settings', 'Show log');
  if (choice === 'Show log') log.show();
  if (choice === 'Open settings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'agentEdit.server');
  }
  return choice === 'Select interpreter' ? 'select' : undefined;
}

/** Asks for a Python interpreter file and stores it as `agentEdit.server.python` (user settings). */
export async function selectInterpreter(): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    canSelectFolders: false,
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    openLabel: 'Use this Python',
    title: 'Agent Edit: the Python interpreter that has agent-edit installed',
  });
  if (!picked?.[0]) return undefined;
  const cfg = vscode.workspace.getConfiguration('agentEdit.server');
  await cfg.update('python', picked[0].fsPath, vscode.ConfigurationTarget.Global);
  return picked[0].fsPath;
}
