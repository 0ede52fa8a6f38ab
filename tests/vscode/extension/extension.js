/**
 * Test-only extension: the scenarios of tests/test_vscode_e2e.py, run inside the real extension
 * host against the installed agent-edit extension and the real server. It records what it
 * observes (results, buffer texts, disk texts, tabs) as JSON; pytest makes the assertions.
 */
const vscode = require('vscode');
const fs = require('fs');
const path = require('path');

const SCENARIO_TIMEOUT_MS = 30000;
let running;

function root() {
  return vscode.workspace.workspaceFolders[0].uri;
}

function disk(rel) {
  const p = path.join(root().fsPath, rel);
  return fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : null;
}

async function open(rel) {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(root(), rel));
  const editor = await vscode.window.showTextDocument(doc, { preview: false });
  return { doc, editor };
}

/** What the user would type: an edit through the editor, leaving the buffer dirty. */
async function userTypes(editor, text) {
  const ok = await editor.edit((b) => b.insert(new vscode.Position(0, 0), text));
  if (!ok) throw new Error('the user edit was not applied');
}

function bufferText(rel) {
  const uri = vscode.Uri.joinPath(root(), rel).toString();
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri && !d.isClosed);
  return doc ? { text: doc.getText(), dirty: doc.isDirty } : null;
}

const exec = (command, args) => vscode.commands.executeCommand(command, args);

async function replaceDirty() {
  const { doc, editor } = await open('dirty.py');
  await userTypes(editor, '# typed by the user, unsaved\n');
  const read = await exec('agentEdit.read', { path: 'dirty.py' });
  const result = await exec('agentEdit.replace', {
    path: 'dirty.py',
    oldText: "return 'hello'",
    newText: "return 'hello, world'",
  });
  return { read, result, buffer: doc.getText(), dirty: doc.isDirty, disk: disk('dirty.py') };
}

async function staleRefused() {
  const { doc, editor } = await open('stale.py');
  const read = await exec('agentEdit.read', { path: 'stale.py' });
  await userTypes(editor, '# the user typed this after the agent read the file\n');
  const before = doc.getText();
  const result = await exec('agentEdit.replace', {
    path: 'stale.py',
    oldText: 'value = 1',
    newText: 'value = 2',
    expect: { version: read.version },
  });
  return { read, result, bufferBefore: before, buffer: doc.getText(), version: doc.version };
}

async function textOf(rel) {
  const openDoc = bufferText(rel);
  if (openDoc) return openDoc.text;
  const p = path.join(root().fsPath, rel);
  return fs.existsSync(p) ? (await vscode.workspace.openTextDocument(p)).getText() : null;
}

let theApi;
const api = () => theApi;

async function patchRename() {
  await open('patch_src.py');
  await open('patch_other.py');
  const patch = [
    '*** Begin Patch',
    '*** Update File: patch_src.py',
    '*** Move to: pkg/renamed.py',
    '@@',
    ' def old():',
    '-    return 1',
    '+    return 2',
    '*** Update File: patch_other.py',
    '@@',
    '-x = 1',
    '+x = 2',
    '*** Add File: pkg/added.py',
    '+created = True',
    '*** End Patch',
    '',
  ].join('\n');
  const result = await exec('agentEdit.applyPatch', { patch });
  const textOf = async (rel) => {
    const open = bufferText(rel);
    if (open) return open.text;
    const p = path.join(root().fsPath, rel);
    return fs.existsSync(p) ? (await vscode.workspace.openTextDocument(p)).getText() : null;
  };
  return {
    result,
    renamed: await textOf('pkg/renamed.py'),
    other: await textOf('patch_other.py'),
    added: await textOf('pkg/added.py'),
    sourceOnDisk: disk('patch_src.py'),
    sourceBuffer: bufferText('patch_src.py'),
  };
}

// Stands in for a linter extension: reports on tool.py whenever it changes, so the LM tool's
// result must carry diagnostics that another extension published.
function fakeLinter(context) {
  const collection = vscode.languages.createDiagnosticCollection('test-linter');
  context.subscriptions.push(
    collection,
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (!e.document.uri.path.endsWith('/tool.py')) return;
      const line = e.document.getText().split('\n').findIndex((l) => l.includes('a = 2'));
      if (line < 0) return collection.delete(e.document.uri);
      const range = new vscode.Range(line, 0, line, 5);
      const diag = new vscode.Diagnostic(range, 'test-linter: a is now 2', vscode.DiagnosticSeverity.Warning);
      diag.source = 'test-linter';
      // Published a little later, like a real linter, to exercise the tool's wait.
      setTimeout(() => collection.set(e.document.uri, [diag]), 200);
    }),
  );
}

async function lmTool() {
  // Open in the editor, as a file under discussion usually is: linters (the stand-in above)
  // report on open documents; a file not open is written on disk by the server itself.
  await open('tool.py');
  const texts = (r) => r.content.map((p) => p.value);
  const tools = vscode.lm.tools.filter((t) => t.name.startsWith('agentEdit_'));
  const read = await vscode.lm.invokeTool('agentEdit_read', {
    input: { path: 'tool.py' },
    toolInvocationToken: undefined,
  });
  const replace = await vscode.lm.invokeTool('agentEdit_replace', {
    input: { path: 'tool.py', oldText: 'a = 1', newText: 'a = 2' },
    toolInvocationToken: undefined,
  });
  // An edit that breaks the syntax: the server's own diagnostics reach the tool result too.
  await vscode.lm.invokeTool('agentEdit_read', { input: { path: 'tool_syntax.py' }, toolInvocationToken: undefined });
  const broken = await vscode.lm.invokeTool('agentEdit_replace', {
    input: { path: 'tool_syntax.py', oldText: '    return 1', newText: '    return (1' },
    toolInvocationToken: undefined,
  });
  return {
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
    read: texts(read),
    replace: texts(replace),
    broken: texts(broken),
    buffer: bufferText('tool.py'),
  };
}

async function codeLens() {
  const { doc } = await open('dirty.py');
  const lenses = await vscode.commands.executeCommand('vscode.executeCodeLensProvider', doc.uri, 10);
  const described = lenses.map((l) => ({
    line: l.range.start.line,
    title: l.command && l.command.title,
    command: l.command && l.command.command,
    arguments: l.command && l.command.arguments,
  }));
  const diffLens = lenses.find((l) => l.command && l.command.title === 'diff');
  if (diffLens) await vscode.commands.executeCommand(diffLens.command.command, ...diffLens.command.arguments);
  const active = vscode.window.tabGroups.activeTabGroup.activeTab;
  return {
    lenses: described,
    activeTab: active && active.label,
    activeIsDiff: Boolean(active && active.input instanceof vscode.TabInputTextDiff),
  };
}

async function diffTabs() {
  const out = [];
  for (const group of vscode.window.tabGroups.all) {
    for (const tab of group.tabs) {
      if (tab.input instanceof vscode.TabInputTextDiff) {
        const before = await vscode.workspace.openTextDocument(tab.input.original);
        const after = await vscode.workspace.openTextDocument(tab.input.modified);
        out.push({
          label: tab.label,
          scheme: tab.input.original.scheme,
          active: tab.isActive,
          before: before.getText(),
          after: after.getText(),
        });
      }
    }
  }
  return out;
}

const describeNode = (provider, n) => {
  const item = provider.getTreeItem(n);
  return {
    label: n.label,
    description: n.description,
    icon: item.iconPath && item.iconPath.id,
    iconColor: item.iconPath && item.iconPath.color && item.iconPath.color.id,
    tooltip: item.tooltip && (item.tooltip.value || item.tooltip),
    files: (n.children || []).map((c) => c.label),
    clickable: (n.children || []).map((c) => Boolean(provider.getTreeItem(c).command)),
  };
};

async function historyViewScenario(api) {
  await exec('agentEdit.showHistory');
  const provider = api.history;
  const roots = await provider.getChildren();
  const edit = roots.find((n) => n.label !== 'Session net diff' && (n.children || []).some((c) => c.open));
  const child = edit ? edit.children.find((c) => c.open) : null;
  const item = child ? provider.getTreeItem(child) : null;
  if (item) await vscode.commands.executeCommand(item.command.command, ...item.command.arguments);
  const net = roots.find((n) => n.label === 'Session net diff');
  return {
    viewVisible: api.history.view.visible,
    roots: roots.map((n) => describeNode(provider, n)),
    netFiles: net ? net.children.map((f) => f.label) : null,
    opened: child ? child.label : null,
    diffTabs: await diffTabs(),
    statusText: api.history.status.text,
  };
}

// A file of ten lines, the agent changes line 7: the diff editor shows whole documents, and
// "next change" in it lands on line 7, as in the file.
const LINES = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

async function wholeDiff() {
  fs.writeFileSync(path.join(root().fsPath, 'whole.txt'), LINES);
  const { doc } = await open('whole.txt');
  await exec('agentEdit.read', { path: 'whole.txt' });
  const edit = await exec('agentEdit.replace', { path: 'whole.txt', oldText: 'line 7', newText: 'line seven' });
  await vscode.commands.executeCommand('agentEdit.showEditDiff', edit.editId);
  const tabs = await diffTabs();
  const active = tabs.find((t) => t.active);
  await vscode.commands.executeCommand('workbench.action.compareEditor.nextChange');
  const editor = vscode.window.activeTextEditor;
  const changeLine = editor && editor.selection.active.line + 1;
  const activeScheme = editor && editor.document.uri.scheme;
  // The session's net diff of the same file: whole documents too.
  await vscode.commands.executeCommand('agentEdit.openDiff', undefined, 'whole.txt');
  const net = (await diffTabs()).find((t) => t.active);
  return {
    edit,
    net,
    active,
    buffer: doc.getText(),
    activeScheme,
    changeLine,
  };
}

// An added file diffs against an empty document.
async function addedDiff() {
  const edit = await exec('agentEdit.write', { path: 'brand_new.py', text: 'fresh = 1\n' });
  await vscode.commands.executeCommand('agentEdit.showEditDiff', edit.editId);
  return { edit, active: (await diffTabs()).find((t) => t.active) };
}

async function undo() {
  const { doc } = await open('undo.py');
  await exec('agentEdit.read', { path: 'undo.py' });
  const edit = await exec('agentEdit.replace', { path: 'undo.py', oldText: 'count = 0', newText: 'count = 1' });
  const afterEdit = doc.getText();
  await api().history.refresh();
  const statusBefore = api().history.status.text;
  const result = await exec('agentEdit.undoLastEdit');
  await api().history.refresh();
  return { edit, afterEdit, result, buffer: doc.getText(), statusBefore, statusAfter: api().history.status.text };
}

// Undo of a multi-file edit asks first: the browser driver answers the modal dialog ("Undo").
async function undoMulti() {
  const patch = [
    '*** Begin Patch',
    '*** Update File: multi_a.py',
    '@@',
    '-a = 0',
    '+a = 1',
    '*** Update File: multi_b.py',
    '@@',
    '-b = 0',
    '+b = 1',
    '*** End Patch',
    '',
  ].join('\n');
  const edit = await exec('agentEdit.applyPatch', { patch });
  const result = await exec('agentEdit.undoLastEdit');
  return { edit, result, a: disk('multi_a.py'), b: disk('multi_b.py') };
}

// A person applies a patch they copied: checked and applied like an agent's, recorded, diff shown.
async function patchFromClipboard() {
  const patch = [
    'Here is the fix:',
    '```',
    '*** Begin Patch',
    '*** Update File: clip.py',
    '@@',
    '-value = "old"',
    '+value = "new"',
    '*** End Patch',
    '```',
  ].join('\n');
  await vscode.env.clipboard.writeText(patch);
  const clipboard = await vscode.env.clipboard.readText();
  const result = await exec('agentEdit.applyPatchFromClipboard');
  const entry = (await exec('agentEdit.history', { editId: result.editId })).entries[0];
  // A patch that does not apply changes nothing.
  await vscode.env.clipboard.writeText('*** Begin Patch\n*** Update File: clip.py\n@@\n-nope\n+x\n*** End Patch\n');
  const bad = await exec('agentEdit.applyPatchFromClipboard');
  await vscode.env.clipboard.writeText('no patch here');
  const none = await exec('agentEdit.applyPatchFromClipboard');
  return {
    clipboardRoundTrip: clipboard === patch,
    result,
    entry,
    active: (await diffTabs()).find((t) => t.active),
    text: await textOf('clip.py'),
    bad,
    none,
    after: await textOf('clip.py'),
  };
}

async function saveAfterEdit() {
  const config = vscode.workspace.getConfiguration('agentEdit');
  // vscode-languageclient forwards the change from its own (earlier registered) listener, so once
  // ours has fired the didChangeConfiguration notification is queued ahead of the next request.
  const changed = new Promise((resolve) => {
    const l = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('agentEdit.saveAfterEdit')) resolve(l.dispose());
    });
  });
  await config.update('saveAfterEdit', true, vscode.ConfigurationTarget.Workspace);
  await changed;
  try {
    const clean = await open('save_clean.py');
    const dirty = await open('save_dirty.py');
    await userTypes(dirty.editor, '# unsaved user text\n');
    await exec('agentEdit.read', { path: 'save_clean.py' });
    await exec('agentEdit.read', { path: 'save_dirty.py' });
    const cleanResult = await exec('agentEdit.replace', { path: 'save_clean.py', oldText: 'n = 0', newText: 'n = 1' });
    const dirtyResult = await exec('agentEdit.replace', { path: 'save_dirty.py', oldText: 'm = 0', newText: 'm = 1' });
    return {
      cleanResult,
      dirtyResult,
      clean: { buffer: clean.doc.getText(), dirty: clean.doc.isDirty, disk: disk('save_clean.py') },
      dirty: { buffer: dirty.doc.getText(), dirty: dirty.doc.isDirty, disk: disk('save_dirty.py') },
    };
  } finally {
    await config.update('saveAfterEdit', undefined, vscode.ConfigurationTarget.Workspace);
  }
}

/** saveAfterEdit with VS Code's own save participants on: the save changes the text after the
 * agent's edit showed (trailing whitespace trimmed, a final newline inserted). */
async function saveParticipant() {
  const config = vscode.workspace.getConfiguration();
  const settings = { 'agentEdit.saveAfterEdit': true, 'files.trimTrailingWhitespace': true, 'files.insertFinalNewline': true };
  const changed = new Promise((resolve) => {
    const l = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('agentEdit.saveAfterEdit')) resolve(l.dispose());
    });
  });
  for (const [key, value] of Object.entries(settings)) await config.update(key, value, vscode.ConfigurationTarget.Workspace);
  await changed;
  try {
    const trim = await open('save_trim.py');
    const eol = await open('save_eol.py');
    await exec('agentEdit.read', { path: 'save_trim.py' });
    await exec('agentEdit.read', { path: 'save_eol.py' });
    const trimResult = await exec('agentEdit.replace', { path: 'save_trim.py', oldText: 'p = 0', newText: 'p = 1   ' });
    const eolResult = await exec('agentEdit.replace', { path: 'save_eol.py', oldText: 'r = 0', newText: 'r = 1' });
    const state = (rel, doc) => ({ buffer: doc.getText(), dirty: doc.isDirty, version: doc.version, disk: disk(rel) });
    const trimAfter = state('save_trim.py', trim.doc);
    const eolAfter = state('save_eol.py', eol.doc);
    const entry = (await exec('agentEdit.history', { editId: trimResult.editId })).entries[0];
    const undoTrim = await exec('agentEdit.undo', { editId: trimResult.editId });
    const undoEol = await exec('agentEdit.undo', { editId: eolResult.editId });
    return {
      trimResult,
      eolResult,
      trim: trimAfter,
      eol: eolAfter,
      entry,
      undoTrim,
      undoEol,
      trimUndone: state('save_trim.py', trim.doc),
      eolUndone: state('save_eol.py', eol.doc),
    };
  } finally {
    for (const key of Object.keys(settings)) await config.update(key, undefined, vscode.ConfigurationTarget.Workspace);
  }
}

/** A patch deletes a file whose open document holds the user's unsaved text. */
async function deleteDirty() {
  const { doc, editor } = await open('delete_dirty.py');
  await userTypes(editor, '# unsaved user text\n');
  const read = await exec('agentEdit.read', { path: 'delete_dirty.py' });
  const result = await exec('agentEdit.applyPatch', {
    patch: '*** Begin Patch\n*** Delete File: delete_dirty.py\n*** End Patch\n',
  });
  return {
    read,
    result,
    buffer: bufferText('delete_dirty.py'),
    closed: doc.isClosed,
    docText: doc.getText(),
    tabs: vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label)),
    disk: disk('delete_dirty.py'),
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function runAll(resultsFile) {
  const write = (data) => {
    fs.writeFileSync(resultsFile + '.tmp', JSON.stringify(data, null, 1));
    fs.renameSync(resultsFile + '.tmp', resultsFile);
  };
  const results = { started: new Date().toISOString(), done: false, scenarios: {} };
  write(results);
  const ext = vscode.extensions.getExtension('agent-edit.agent-edit');
  theApi = await ext.activate();
  await withTimeout(theApi.ready, 30000, 'the language server start');
  const firstRun = {
    python: vscode.workspace.getConfiguration('agentEdit.server').get('python'),
    clientRunning: Boolean(theApi.client && theApi.client.isRunning()),
    serverInfo: theApi.client && theApi.client.initializeResult && theApi.client.initializeResult.serverInfo,
  };
  const scenarios = {
    replace_dirty: replaceDirty,
    stale_refused: staleRefused,
    patch_rename: patchRename,
    lm_tool: lmTool,
    save_after_edit: saveAfterEdit,
    undo: undo,
    code_lens: codeLens,
    history_view: () => historyViewScenario(theApi),
    undo_multi: undoMulti,
    patch_clipboard: patchFromClipboard,
    added_diff: addedDiff,
    whole_diff: wholeDiff,
    delete_dirty: deleteDirty,
    save_participant: saveParticipant,
    first_run: async () => firstRun,
  };
  for (const [name, fn] of Object.entries(scenarios)) {
    const started = Date.now();
    try {
      results.scenarios[name] = { ok: true, data: await withTimeout(fn(), SCENARIO_TIMEOUT_MS, name) };
    } catch (err) {
      results.scenarios[name] = { ok: false, error: String((err && err.stack) || err) };
    }
    results.scenarios[name].ms = Date.now() - started;
    write(results);
  }
  results.done = true;
  write(results);
}

function activate(context) {
  fakeLinter(context);
  context.subscriptions.push(
    vscode.commands.registerCommand('agentEditTest.run', () => {
      const resultsFile = vscode.workspace.getConfiguration('agentEditTest').get('resultsFile');
      if (!resultsFile) throw new Error('agentEditTest.resultsFile is not set');
      // The palette must not wait for the scenarios; the driver polls the results file.
      running = running || runAll(resultsFile).catch((err) => {
        fs.writeFileSync(resultsFile, JSON.stringify({ done: true, fatal: String(err.stack || err) }));
      });
    }),
  );
}

module.exports = { activate };
