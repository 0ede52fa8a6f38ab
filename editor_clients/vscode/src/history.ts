/**
 * The session's edit history as a person sees it: a tree view in its own Activity Bar container
 * (the session net diff, then one row per edit, newest first, each file opening `vscode.diff` on
 * the whole before/after documents the server serves), "Undo Last Edit" (asking first when the
 * edit touched several files) and a status bar item counting the agent edits in effect. All data
 * comes from the server's `agentEdit.history`; this file only presents it.
 */
import * as vscode from 'vscode';
import { toUri } from './tools';

const SCHEME = 'agent-edit';

interface Node {
  label: string;
  description?: string;
  tooltip?: vscode.MarkdownString | string;
  icon?: vscode.ThemeIcon;
  children?: Node[];
  /** A file row: opens the diff of this file in this edit (or in the net change). */
  open?: { editId?: number; path: string };
}

// `agentEdit.history` answers {entries: [{id, time, action, files, outcome, error?, undoes?,
// undoneBy?}], total, net: [{path, ...}]}, with the latest LIMIT entries.
const LIMIT = 200;
const applied = (e: any): boolean => e.outcome === 'applied';
/** Agent edits in effect: applied, not undone, and not themselves undos. */
const inEffect = (e: any): boolean => applied(e) && e.undoneBy == null && e.undoes == null;
const fileNames = (e: any): string[] =>
  (Array.isArray(e.files) ? e.files : []).map((f: any) => (typeof f === 'string' ? f : f.movedTo ?? f.path));
const localTime = (iso: string): string => (iso ? new Date(iso).toLocaleTimeString() : '');
/** Outcomes after which part of the edit may be in the files. */
const PARTLY = new Set(['PARTIAL', 'UNVERIFIED']);

/** How an entry that is not simply applied is shown: never like an edit that landed, and never
 * as "nothing changed" when part of it may have (PARTIAL, UNVERIFIED, not finished). */
function notApplied(e: any): [vscode.ThemeIcon, string] {
  const code = e.error?.code ?? e.outcome;
  const warn = (id: string) => new vscode.ThemeIcon(id, new vscode.ThemeColor('editorWarning.foreground'));
  if (e.unfinished || e.outcome === 'pending') return [warn('watch'), 'not finished'];
  if (e.outcome === 'dry-run') return [new vscode.ThemeIcon('eye'), 'dry run'];
  if (PARTLY.has(code)) return [warn('warning'), code === 'PARTIAL' ? 'PARTIAL: partly applied' : 'UNVERIFIED: not confirmed'];
  // Refused before anything was sent (STALE, NO_MATCH, ...), or failed leaving nothing changed.
  const refused = !Array.isArray(e.committed) || e.committed.length === 0;
  return [new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground')), `${refused ? 'refused' : 'failed'}: ${code}`];
}

export class HistoryView implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider {
  readonly view: vscode.TreeView<Node>;
  readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docs = new Map<string, string>();
  private readonly disposables: vscode.Disposable[];
  private entries: any[] = [];
  private net: any[] = [];
  private more = false;

  constructor(
    private readonly run: (command: string, args: object) => Promise<any>,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.view = vscode.window.createTreeView('agentEditHistory', { treeDataProvider: this });
    this.status.command = 'agentEdit.showHistory';
    this.disposables = [
      this.view,
      this.status,
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
      vscode.commands.registerCommand('agentEdit.showHistory', () => this.show()),
      vscode.commands.registerCommand('agentEdit.undoLastEdit', () => this.undoLast()),
      vscode.commands.registerCommand('agentEdit.openDiff', (editId: number | undefined, path?: string) =>
        this.openDiff(editId, path),
      ),
      vscode.commands.registerCommand('agentEdit.showEditDiff', (editId: number) => this.openDiff(editId)),
    ];
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }

  async refresh(): Promise<void> {
    const history = await this.run('agentEdit.history', { format: 'json', limit: LIMIT });
    this.entries = Array.isArray(history?.entries) ? history.entries : [];
    this.net = Array.isArray(history?.net) ? history.net : [];
    this.more = (history?.total ?? 0) > this.entries.length;
    const count = this.entries.filter(inEffect).length;
    // Past the limit the count is of the latest entries only: say so rather than undercount.
    this.status.text = `$(history) Agent edits: ${count}${this.more ? '+' : ''}`;
    this.status.tooltip = `${count} agent edit${count === 1 ? '' : 's'} in effect in this session (undone edits and refusals not counted). Click to see the history.`;
    this.status.show();
    this.changed.fire(undefined);
  }

  async show(): Promise<void> {
    await vscode.commands.executeCommand('agentEditHistory.focus');
    await this.refresh();
  }

  async undoLast(): Promise<any> {
    await this.refresh();
    // Walk back like an undo stack: skip edits already undone and the undo entries themselves.
    const last = [...this.entries].reverse().find(inEffect);
    if (!last) {
      void vscode.window.showInformationMessage('Agent Edit: there is no agent edit to undo.');
      return undefined;
    }
    const files = fileNames(last);
    if (files.length > 1) {
      const answer = await vscode.window.showWarningMessage(
        `Undo agent edit #${last.id} (${last.action})? It changes ${files.length} files back.`,
        { modal: true, detail: files.join('\n') },
        'Undo',
      );
      if (answer !== 'Undo') return { ok: false, cancelled: true };
    }
    const result = await this.run('agentEdit.undo', { editId: last.id });
    const what = `edit #${last.id} (${last.action} in ${files.join(', ')})`;
    if (result?.ok) {
      void vscode.window.showInformationMessage(`Agent Edit: undid ${what}.`);
    } else if (result?.code === 'CONFLICT') {
      const lines = (result.details?.lines ?? []).map((l: any) => `${l.path} line ${l.line}`);
      const where = lines.length ? lines.slice(0, 5).join(', ') : files.join(', ');
      void vscode.window.showErrorMessage(
        `Agent Edit: ${what} was not undone, because its lines were changed after the agent's edit (${where}). ` +
          'Nothing was changed. Revert those lines by hand if you want them back.',
      );
    } else {
      void vscode.window.showErrorMessage(`Agent Edit: ${what} was not undone: ${result?.message ?? 'no answer'}`);
    }
    this.log.info(`undo of edit #${last.id}: ${result?.ok ? 'done' : `${result?.code}: ${result?.message}`}`);
    return result;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.toString()) ?? '';
  }

  /** Opens the whole before/after of one edit (`editId`) or of the session's net change. */
  async openDiff(editId: number | undefined, path?: string): Promise<void> {
    const answer = await this.run('agentEdit.history', editId == null ? { texts: true } : { editId, texts: true });
    if (!answer?.ok) {
      void vscode.window.showErrorMessage(`Agent Edit: no diff to show: ${answer?.message ?? 'no answer'}`);
      return;
    }
    const files: any[] = (answer.files ?? []).filter((f: any) => path == null || f.path === path || f.movedTo === path);
    const title = editId == null ? 'session' : `edit #${editId}`;
    for (const f of files.slice(0, 10)) {
      if (typeof f.before !== 'string') {
        // Not on the file as it is now: say why, and show the edit's own diff as text instead.
        void vscode.window.showWarningMessage(`Agent Edit: ${f.path} of ${title} cannot be shown side by side: ${f.reason}.`);
        const entry = editId == null ? undefined : (await this.run('agentEdit.history', { editId })).entries?.[0];
        if (entry?.diff) await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ language: 'diff', content: entry.diff }));
        continue;
      }
      // Each opening gets fresh URIs: the same file differs between edits and the net diff.
      const key = `${Date.now()}-${this.docs.size}`;
      const uri = (side: string, p: string, text: string) => {
        const u = vscode.Uri.from({ scheme: SCHEME, path: `/${key}/${side}/${p}` });
        this.docs.set(u.toString(), text);
        return u;
      };
      const target = f.movedTo ?? f.path;
      const before = uri('before', f.movedFrom ?? f.path, f.before);
      await vscode.commands.executeCommand('vscode.diff', before, uri('after', target, f.after), `${target} (${title})`);
    }
    if (files.length === 0) void vscode.window.showInformationMessage(`Agent Edit: ${title} changed no file.`);
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const state = node.children?.length
      ? vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, state);
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.iconPath = node.icon;
    if (node.open) {
      item.resourceUri = toUri(node.open.path);
      item.command = { command: 'agentEdit.openDiff', title: 'Show diff', arguments: [node.open.editId, node.open.path] };
    }
    return item;
  }

  private entryNode(e: any): Node {
    const files = fileNames(e);
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown(`**Edit #${e.id}** · ${e.action} · ${new Date(e.time).toLocaleString()}\n\n`);
    let icon = new vscode.ThemeIcon('check', new vscode.ThemeColor('testing.iconPassed'));
    let outcome = '';
    if (e.undoes != null) {
      icon = new vscode.ThemeIcon('discard');
      outcome = `undo of #${e.undoes}`;
    } else if (e.undoneBy != null) {
      icon = new vscode.ThemeIcon('circle-slash');
      outcome = `undone by #${e.undoneBy}`;
    } else if (!applied(e)) {
      [icon, outcome] = notApplied(e);
    }
    if (e.error?.message) tip.appendText(`${e.error.code}: ${e.error.message}\n\n`);
    tip.appendText(files.join('\n'));
    const landed = applied(e) || PARTLY.has(e.error?.code ?? e.outcome);
    // An undo says what it undid instead of its action name ("#9 undo of #8").
    // Anything but applied leads with its outcome: a truncated row must still say it.
    const what =
      e.undoes != null
        ? outcome
        : !applied(e)
          ? `${outcome} · ${e.action}`
          : [e.action, outcome].filter(Boolean).join(' · ');
    return {
      label: files.join(', ') || e.action,
      description: `#${e.id} ${what} · ${localTime(e.time)}`,
      tooltip: tip,
      icon,
      children: files.map((p) => ({ label: p, open: landed ? { editId: e.id, path: p } : undefined })),
    };
  }

  getChildren(node?: Node): Node[] {
    if (node) return node.children ?? [];
    // No rows at all lets the view show its welcome text (package.json `viewsWelcome`).
    if (this.entries.length === 0) return [];
    const roots: Node[] = [];
    if (this.net.length > 0) {
      roots.push({
        label: 'Session net diff',
        description: `${this.net.length} file${this.net.length === 1 ? '' : 's'}`,
        tooltip: 'What the agents changed in this session, per file: before their first edit against after their last.',
        icon: new vscode.ThemeIcon('diff'),
        children: this.net.map((f) => ({ label: f.path, open: { path: f.path } })),
      });
    }
    roots.push(...[...this.entries].reverse().map((e) => this.entryNode(e)));
    if (this.more) roots.push({ label: `older edits not shown (latest ${LIMIT})` });
    return roots;
  }
}
