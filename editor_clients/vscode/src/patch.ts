/**
 * Applying a patch by hand: "Agent Edit: Apply Patch from Clipboard" and "... from Selection" send
 * a V4A patch a person has (from a chat window, a review, a colleague) through the same checked,
 * all-or-nothing `agentEdit.applyPatch` an agent uses; it is recorded in the history, and the
 * diff of what changed opens right away. A patch that does not apply changes nothing and says why.
 */
import * as vscode from 'vscode';
import type { HistoryView } from './history';
import { changedNothing, NotSent, type Run } from './requests';

const BEGIN = '*** Begin Patch';
// The failure codes after which nothing was changed (lsp_server/engine/errors.py NOTHING_CHANGED;
// tests/clients/test_contract_drift.py keeps them equal). Any other may follow a landed change.
const NOTHING_CHANGED = new Set(['PARSE_ERROR', 'INVALID_ARGUMENT', 'NOT_FOUND', 'ALREADY_EXISTS', 'OUTSIDE_WORKSPACE', 'DENIED', 'BINARY', 'TOO_LARGE', 'INVALID_ENCODING', 'STALE', 'NO_MATCH', 'AMBIGUOUS', 'CLIENT_REJECTED', 'NOT_APPLIED', 'PARTIAL_ROLLED_BACK', 'CONFLICT', 'UNSUPPORTED']);

async function apply(run: Run, history: HistoryView, log: vscode.LogOutputChannel, text: string, from: string) {
  const start = text.indexOf(BEGIN);
  if (start < 0) {
    void vscode.window.showErrorMessage(
      `Agent Edit: the ${from} holds no patch. Copy one from "${BEGIN}" to "*** End Patch" and try again.`,
    );
    return { ok: false, code: 'NO_PATCH' };
  }
  // Text around the patch (a chat message's prose, a code fence) is not part of it.
  const end = text.indexOf('*** End Patch', start);
  const patch = end < 0 ? text.slice(start) : text.slice(start, end + '*** End Patch'.length) + '\n';
  let result: any;
  try {
    result = await run('agentEdit.applyPatch', { patch });
  } catch (err: any) {
    // Only a request never sent, or refused as a request (malformed params, unknown command), is
    // known to have changed nothing; one that lost its connection may have been applied.
    if (err instanceof NotSent) {
      log.error(`apply patch from the ${from}: ${err.message}`);
      void vscode.window.showErrorMessage(`Agent Edit: ${err.message} ${err.hint}`);
      return { ok: false, code: err.code, message: err.message };
    }
    if (!changedNothing(err)) {
      const message = String(err?.message ?? err);
      log.error(`apply patch from the ${from}: no answer: ${message}`);
      void vscode.window.showWarningMessage(
        `Agent Edit: the server gave no answer about the patch (${message}); it may or may not ` +
          'have been applied. Check the Agent Edit history before applying it again.',
      );
      return { ok: false, code: 'UNKNOWN', message };
    }
    result = { ok: false, code: 'INVALID_ARGUMENT', message: String(err?.message ?? err) };
  }
  log.info(`apply patch from the ${from}: ${result?.ok ? `edit #${result.editId}` : `${result?.code}: ${result?.message}`}`);
  if (!result?.ok && !NOTHING_CHANGED.has(result?.code)) {
    // TIMEOUT, UNVERIFIED, PARTIAL...: part or all of it may have landed.
    void vscode.window.showWarningMessage(
      `Agent Edit: the patch did not complete (${result?.code}). ${result?.message ?? ''} ${result?.hint ?? ''}`,
    );
    return result;
  }
  if (!result?.ok) {
    void vscode.window.showErrorMessage(
      `Agent Edit: the patch was not applied; nothing was changed. ${result?.message ?? ''}`,
    );
    return result;
  }
  const files = (result.files ?? []).map((f: any) => f.movedTo ?? f.path);
  void vscode.window.showInformationMessage(
    `Agent Edit: applied the patch to ${files.join(', ')} (edit #${result.editId}; undo it from the history).`,
  );
  await history.openDiff(result.editId);
  return result;
}

export function registerPatchCommands(run: Run, history: HistoryView, log: vscode.LogOutputChannel): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('agentEdit.applyPatchFromClipboard', async () =>
      apply(run, history, log, await vscode.env.clipboard.readText(), 'clipboard'),
    ),
    vscode.commands.registerCommand('agentEdit.applyPatchFromSelection', async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) {
        void vscode.window.showErrorMessage('Agent Edit: open the patch in an editor and select it first.');
        return { ok: false, code: 'NO_PATCH' };
      }
      // No selection: the whole document is the patch (a .patch file opened on its own).
      const sel = editor.selection;
      const text = sel.isEmpty ? editor.document.getText() : editor.document.getText(sel);
      return apply(run, history, log, text, 'selection');
    }),
  ];
}
