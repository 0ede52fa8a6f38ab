/**
 * Entry point: starts the agent-edit language server through vscode-languageclient and adds only
 * what the editor itself must do: save touched documents when the server asks, the history view,
 * the status bar and the Language Model Tools. Server commands (agentEdit.read, .replace, ...)
 * and workspace/applyEdit are registered and handled by vscode-languageclient itself.
 */
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { HistoryView } from './history';
import { registerTools } from './tools';

export interface AgentEditApi {
  client: LanguageClient;
  /** Settles once the server has answered `initialize`. */
  ready: Promise<void>;
  history: HistoryView;
  /** Sends `workspace/executeCommand` with the single argument object every command takes. */
  run(command: string, args: object): Promise<any>;
}

// Dirty state of each document just before the latest agent edit touched it: saveAfterEdit must
// never persist a user's own unsaved text behind their back (product.md section 7).
const dirtyBeforeEdit = new Map<string, boolean>();

const norm = (uri: string): string => vscode.Uri.parse(uri).toString();

function serverOptions(): ServerOptions {
  const cfg = vscode.workspace.getConfiguration('agentEdit.server');
  const custom = cfg.get<string[]>('command', []);
  const [command, ...args] =
    custom.length > 0 ? custom : [cfg.get<string>('python', 'python3'), '-m', 'lsp_server', 'serve'];
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return { command, args, options: { cwd } };
}

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

async function saveDocuments(params: { uris: string[] }): Promise<{ saved: string[]; skipped: string[] }> {
  const saved: string[] = [];
  const skipped: string[] = [];
  for (const raw of params.uris ?? []) {
    const uri = norm(raw);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    if (dirtyBeforeEdit.get(uri)) {
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

export async function activate(context: vscode.ExtensionContext): Promise<AgentEditApi> {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    synchronize: { configurationSection: 'agentEdit' },
    initializationOptions: initializationOptions(),
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
          rememberDirtyState(params.edit);
          return next(params, new vscode.CancellationTokenSource().token);
        },
      },
    },
  };
  const client = new LanguageClient('agentEdit', 'Agent Edit', serverOptions(), clientOptions);
  const run = async (command: string, args: object): Promise<any> => {
    await ready;
    return client.sendRequest('workspace/executeCommand', { command, arguments: [args] });
  };
  const history = new HistoryView(run);
  client.onRequest('agentEdit/saveDocuments', saveDocuments);
  // A burst of edits gives one refresh: the history answer holds every diff of the session.
  let pending: NodeJS.Timeout | undefined;
  client.onNotification('agentEdit/historyChanged', () => {
    clearTimeout(pending);
    pending = setTimeout(() => history.refresh().catch(() => undefined), 150);
  });
  const ready = client.start();
  context.subscriptions.push(client, history, ...registerTools(run));
  void ready.then(() => history.refresh()).catch(() => undefined);
  return { client, ready, history, run };
}
