/**
 * Entry point: finds and checks the agent-edit server (server.ts), starts it through
 * vscode-languageclient, and adds only what the editor itself must do: save touched documents
 * when the server asks, the history view, the status bar, applying a patch by hand and the
 * Language Model Tools. Server commands (agentEdit.read, .replace, ...) and workspace/applyEdit
 * are registered and handled by vscode-languageclient itself. Everything that happens at start,
 * and every error, goes to the "Agent Edit" output channel.
 */
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, State } from 'vscode-languageclient/node';
import { HistoryView } from './history';
import { registerPatchCommands } from './patch';
import { makeRun, ServerGate, type Cancellation } from './requests';
import { explainFailure, findServer, selectInterpreter } from './server';
import { registerTools } from './tools';

export interface AgentEditApi {
  /** The running client (undefined until a server could be started). */
  readonly client: LanguageClient | undefined;
  /** Settles once a server has answered `initialize` (after a failed start: once one does). */
  ready: Promise<void>;
  history: HistoryView;
  log: vscode.LogOutputChannel;
  /** Sends `workspace/executeCommand` with the single argument object every command takes, once
   * the server runs; a `NotSent` (requests.ts) when it cannot run or `token` is cancelled first. */
  run(command: string, args: object, token?: Cancellation): Promise<any>;
}

// Dirty state of each document just before the latest agent edit touched it: saveAfterEdit must
// never persist a user's own unsaved text behind their back (product.md section 7).
const dirtyBeforeEdit = new Map<string, boolean>();

const norm = (uri: string): string => vscode.Uri.parse(uri).toString();

function initializationOptions(): object {
  // Everything under agentEdit.* except how to start the server is the server's business.
  const { server: _server, trace: _trace, tools: _tools, ...rest } = JSON.parse(
    JSON.stringify(vscode.workspace.getConfiguration('agentEdit')),
  );
  return rest;
}

function rememberDirtyState(edit: any): void {
  const dirty = (uri: string) =>
    vscode.workspace.textDocuments.some((d) => d.uri.toString() === norm(uri) && d.isDirty);
  const seen = new Map<string, boolean>();
  const mark = (uri: string, wasDirty: boolean) =>
    seen.set(norm(uri), (seen.get(norm(uri)) ?? false) || wasDirty);
  for (const uri of Object.keys(edit?.changes ?? {})) mark(uri, dirty(uri));
  for (const change of edit?.documentChanges ?? []) {
    if (change.textDocument) mark(change.textDocument.uri, dirty(change.textDocument.uri));
    // A renamed document keeps its dirty state under its new name.
    else if (change.kind === 'rename') mark(change.newUri, dirty(change.oldUri));
    else if (change.uri) mark(change.uri, dirty(change.uri));
  }
  for (const [uri, wasDirty] of seen) dirtyBeforeEdit.set(uri, wasDirty);
}

/** The dirty documents of the files (or under the folders) `edit` deletes: VS Code reverts and
 * closes such a document, so the user's unsaved text would be gone (code-server: delete_dirty). */
function dirtyDeletes(edit: any): string[] {
  const gone: string[] = (edit?.documentChanges ?? [])
    .filter((c: any) => c.kind === 'delete' && c.uri)
    .map((c: any) => norm(c.uri).replace(/\/$/, ''));
  const under = (uri: string) => gone.some((g) => uri === g || uri.startsWith(g + '/'));
  return vscode.workspace.textDocuments.filter((d) => d.isDirty && under(d.uri.toString())).map((d) => d.uri.fsPath);
}

async function saveDocuments(params: { uris: string[]; versions?: (number | null)[] }): Promise<{ saved: string[]; skipped: string[] }> {
  const saved: string[] = [];
  const skipped: string[] = [];
  for (const [i, raw] of (params.uris ?? []).entries()) {
    const uri = norm(raw);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    const version = params.versions?.[i];
    // Typed in since the edit showed (a later version): saving would persist that typing too.
    if (dirtyBeforeEdit.get(uri) || (typeof version === 'number' && doc && doc.version !== version)) {
      skipped.push(raw);
    } else if (doc && (!doc.isDirty || (await doc.save()))) {
      saved.push(raw);
    } else {
      skipped.push(raw);
    }
    dirtyBeforeEdit.delete(uri);
  }
  return { saved, skipped };
}

/**
 * The channel vscode-languageclient traces to: it traces only at log level Trace, so this view of
 * the log channel reports Trace exactly when `agentEdit.trace.server` is not "off", and the
 * setting does what it says without "Developer: Set Log Level".
 */
function traceChannel(log: vscode.LogOutputChannel, context: vscode.ExtensionContext): vscode.LogOutputChannel {
  const changed = new vscode.EventEmitter<vscode.LogLevel>();
  const level = () =>
    vscode.workspace.getConfiguration('agentEdit').get('trace.server', 'off') === 'off'
      ? vscode.LogLevel.Info
      : vscode.LogLevel.Trace;
  context.subscriptions.push(
    changed,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('agentEdit.trace.server')) changed.fire(level());
    }),
  );
  return new Proxy(log, {
    get(target, prop) {
      if (prop === 'logLevel') return level();
      if (prop === 'onDidChangeLogLevel') return changed.event;
      if (prop === 'trace') return (message: string) => target.info(message);
      const value = (target as any)[prop];
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

export async function activate(context: vscode.ExtensionContext): Promise<AgentEditApi> {
  const log = vscode.window.createOutputChannel('Agent Edit', { log: true });
  const version = context.extension.packageJSON.version;
  log.info(`Agent Edit ${version} in ${vscode.env.appName} ${vscode.version}`);
  log.info(`workspace: ${(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath).join(', ') || '(no folder open)'}`);
  let client: LanguageClient | undefined;
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const gate = new ServerGate();
  const run = makeRun(
    gate,
    (command, args) => client!.sendRequest('workspace/executeCommand', { command, arguments: [args] }),
    (command, err) => log.error(`${command} failed: ${err}`),
  );
  const history = new HistoryView(run, log);
  const trace = traceChannel(log, context);
  // A burst of edits gives one refresh: the history answer holds every entry of the session.
  let pending: NodeJS.Timeout | undefined;
  const historyChanged = () => {
    clearTimeout(pending);
    pending = setTimeout(() => history.refresh().catch((err) => log.error(`history: ${err}`)), 150);
  };

  const start = async (): Promise<void> => {
    gate.set('starting');
    const found = await findServer(log);
    if (Array.isArray(found)) {
      gate.set('failed');
      // Not awaited: activation must not wait for the user to read the notification.
      void explainFailure(found, log).then(async (choice) => {
        if (choice !== 'select') return;
        const python = await selectInterpreter();
        log.info(python ? `agentEdit.server.python set to ${python}` : 'no interpreter selected');
        if (python) await startOnce();
      });
      return;
    }
    const options = initializationOptions();
    log.info(`settings sent to the server: ${JSON.stringify(options)}`);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      synchronize: { configurationSection: 'agentEdit' },
      initializationOptions: options,
      outputChannel: log,
      traceOutputChannel: trace,
      middleware: {
        // The server's "diff" lenses run agentEdit.history, whose answer a click would discard:
        // here they open the edit's diff in the diff editor instead.
        provideCodeLenses: async (doc, token, next) =>
          ((await next(doc, token)) ?? []).map((lens) => {
            const arg = lens.command?.arguments?.[0];
            if (lens.command?.command !== 'agentEdit.history' || arg?.editId == null) return lens;
            lens.command = { ...lens.command, command: 'agentEdit.showEditDiff', arguments: [arg.editId] };
            return lens;
          }),
        workspace: {
          handleApplyEdit: (params, next) => {
            const dirty = dirtyDeletes(params.edit);
            // Refused before anything is applied; failedChange 0 tells the server so (PROTOCOL.md).
            if (dirty.length > 0) {
              const why = `VS Code reverts and closes a document whose file is deleted, discarding the unsaved changes of ${dirty.join('; ')}`;
              return { applied: false, failedChange: 0, failureReason: `${why}; nothing was applied. Save or revert those changes first, then delete the file.` };
            }
            rememberDirtyState(params.edit);
            return next(params, new vscode.CancellationTokenSource().token);
          },
        },
      },
    };
    const serverOptions = { command: found.command, args: found.args, options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath } };
    const c = new LanguageClient('agentEdit', 'Agent Edit', serverOptions, clientOptions);
    c.onRequest('agentEdit/saveDocuments', saveDocuments);
    c.onNotification('agentEdit/historyChanged', historyChanged);
    context.subscriptions.push(c);
    try {
      await c.start();
    } catch (err) {
      gate.set('failed');
      log.error(`the server did not start: ${err}`);
      void vscode.window.showErrorMessage(`Agent Edit: the server did not start (${err}).`, 'Show log').then((b) => b && log.show());
      return;
    }
    client = c;
    gate.set('running');
    // Past start: a crash makes the client restart the server (Starting) or, after too many,
    // stop for good (Stopped); requests wait for the one and are not sent to the other.
    context.subscriptions.push(
      c.onDidChangeState(({ newState }) =>
        gate.set(newState === State.Running ? 'running' : newState === State.Starting ? 'starting' : 'failed'),
      ),
    );
    const info = c.initializeResult?.serverInfo;
    log.info(`server started: ${info?.name ?? 'agent-edit'} ${info?.version ?? ''} (${found.command} ${found.args.join(' ')})`);
    started();
    history.refresh().catch((err) => log.error(`history: ${err}`));
  };

  // One start at a time: "Select interpreter" both changes the setting and asks for a start.
  let starting: Promise<void> | undefined;
  const startOnce = (): Promise<void> => (starting ??= start().finally(() => (starting = undefined)));
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('agentEdit')) log.info(`settings changed: ${JSON.stringify(initializationOptions())}`);
      // After a failed start, setting the interpreter in the settings starts the server.
      if (e.affectsConfiguration('agentEdit.server')) {
        if (client) log.info('agentEdit.server changed: it applies after Developer: Reload Window');
        else void startOnce();
      }
    }),
    log,
    history,
    vscode.commands.registerCommand('agentEdit.showLog', () => log.show()),
    ...registerTools(run),
    ...registerPatchCommands(run, history, log),
  );
  await startOnce();
  return { get client() { return client; }, ready, history, log, run };
}
