/**
 * Language Model Tools: the server's edit actions as `vscode.lm` tools for agent mode. Names,
 * descriptions and input schemas live in package.json (`languageModelTools`); here each tool
 * forwards its input to the server command and shapes the result for a model: the result object,
 * the diff, and after an applied edit the diagnostics every extension reports for the touched files.
 */
import * as vscode from 'vscode';
import { changedNothing, NotSent, type Run } from './requests';

// Tool `agentEdit_<verb>` runs server command `agentEdit.<verb>` (tool names may not hold dots).
const VERBS = ['read', 'replace', 'applyPatch', 'write', 'history', 'undo'];
const EDITS = new Set(['replace', 'applyPatch', 'write', 'undo']);

/** Resolves a result path (workspace-relative, absolute, or a file:// URI) to a URI. */
export function toUri(path: string): vscode.Uri {
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(path)) return vscode.Uri.parse(path);
  if (path.startsWith('/')) return vscode.Uri.file(path);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file('/');
  return vscode.Uri.joinPath(folder, path);
}

// Other extensions (type checkers, linters) publish their diagnostics a moment after the change;
// wait for them briefly rather than hand the model a list that is about to change.
function settledDiagnostics(uris: vscode.Uri[], token: vscode.CancellationToken): Promise<void> {
  const waitMs = vscode.workspace.getConfiguration('agentEdit').get<number>('tools.diagnosticsWaitMs', 1000);
  const wanted = new Set(uris.map((u) => u.toString()));
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      listener.dispose();
      cancel.dispose();
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    const cancel = token.onCancellationRequested(done);
    const listener = vscode.languages.onDidChangeDiagnostics((e) => {
      if (e.uris.some((u) => wanted.has(u.toString()))) done();
    });
  });
}

function describeDiagnostics(uris: vscode.Uri[]): object[] {
  return uris.flatMap((uri) =>
    vscode.languages.getDiagnostics(uri).map((d) => ({
      path: vscode.workspace.asRelativePath(uri),
      line: d.range.start.line + 1,
      column: d.range.start.character + 1,
      severity: vscode.DiagnosticSeverity[d.severity].toLowerCase(),
      source: d.source,
      message: d.message,
    })),
  );
}

/** The result a model reads when `run` gave none: only what is known to have changed. */
export function failureOf(verb: string, err: any): object {
  const message = String(err?.message ?? err);
  if (err instanceof NotSent) return { ok: false, code: err.code, message, hint: err.hint, committed: [] };
  // Malformed input (InvalidParams) is refused before anything runs; the model still reads why.
  if (changedNothing(err)) return { ok: false, code: 'INVALID_ARGUMENT', message, committed: [] };
  // Sent, then no answer (the server died, the connection broke): an edit may have landed, so
  // no `committed` list and no "nothing was changed".
  const hint = EDITS.has(verb)
    ? 'The edit may or may not have been applied: read the files again (agentEdit_read) or look at agentEdit_history before retrying it.'
    : 'Try again; if the server is down, see "Agent Edit: Show Log".';
  return { ok: false, code: 'SERVER_ERROR', message: `No result from the server: ${message}`, hint };
}

async function invoke(run: Run, verb: string, input: object, token: vscode.CancellationToken) {
  let result: any;
  try {
    result = await run(`agentEdit.${verb}`, input, token);
  } catch (err: any) {
    result = failureOf(verb, err);
  }
  const parts: vscode.LanguageModelTextPart[] = [];
  const { diff, text, ...summary } = result ?? {};
  parts.push(new vscode.LanguageModelTextPart(JSON.stringify(summary, null, 1)));
  if (typeof text === 'string') parts.push(new vscode.LanguageModelTextPart(text));
  if (typeof diff === 'string' && diff) parts.push(new vscode.LanguageModelTextPart(`diff:\n${diff}`));
  if (result?.ok && result.status === 'applied' && Array.isArray(result.files)) {
    const uris = result.files.flatMap((f: any) => [f.movedTo ?? f.path].filter(Boolean).map(toUri));
    await settledDiagnostics(uris, token);
    const diagnostics = describeDiagnostics(uris);
    parts.push(new vscode.LanguageModelTextPart(`editorDiagnostics: ${JSON.stringify(diagnostics)}`));
  }
  return new vscode.LanguageModelToolResult(parts);
}

export function registerTools(run: Run): vscode.Disposable[] {
  return VERBS.map((verb) =>
    vscode.lm.registerTool<object>(`agentEdit_${verb}`, {
      invoke: (options, token) => invoke(run, verb, options.input, token),
      prepareInvocation: (options) => {
        const input = options.input as { path?: string; editId?: string };
        const target = input.path ?? (input.editId ? `edit ${input.editId}` : '');
        return { invocationMessage: `Agent Edit: ${verb} ${target}`.trim() };
      },
    }),
  );
}
