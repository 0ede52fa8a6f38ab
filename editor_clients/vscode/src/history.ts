/**
 * The session's edit history as the user sees it: a tree view (the session net diff, then every
 * edit, newest first, each file opening `vscode.diff` on virtual before/after documents), the
 * "Undo Last Edit" command and a status bar item with the edit count. All data comes from the
 * server's `agentEdit.history`; this file only presents it.
 */
import * as vscode from 'vscode';
import { toUri } from './tools';

const SCHEME = 'agent-edit';

interface FileDiff {
  path: string;
  before: string;
  after: string;
}

interface Node {
  label: string;
  description?: string;
  tooltip?: string;
  files?: FileDiff[];
  file?: FileDiff;
  title?: string;
}

/**
 * Splits a git-style unified diff into per-file before/after excerpts: the hunks' context and
 * removed lines on one side, context and added lines on the other, each hunk opened by the same
 * `@@` header on both sides so the diff editor aligns them.
 */
export function splitDiff(diff: string): FileDiff[] {
  const files: { path: string; before: string[]; after: string[] }[] = [];
  let cur: (typeof files)[number] | undefined;
  let inHunk = false;
  for (const line of diff.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(line);
      cur = { path: m ? m[1] : line.slice(11), before: [], after: [] };
      files.push(cur);
      inHunk = false;
    } else if (!cur) {
      continue;
    } else if (line.startsWith('@@')) {
      inHunk = true;
      cur.before.push(line);
      cur.after.push(line);
    } else if (!inHunk) {
      const m = /^(?:\+\+\+ b\/|rename to )(.*)$/.exec(line);
      if (m) cur.path = m[1];
    } else if (line.startsWith('-')) {
      cur.before.push(line.slice(1));
    } else if (line.startsWith('+')) {
      cur.after.push(line.slice(1));
    } else if (line.startsWith(' ')) {
      cur.before.push(line.slice(1));
      cur.after.push(line.slice(1));
    }
  }
  return files.map((f) => ({ path: f.path, before: f.before.join('\n'), after: f.after.join('\n') }));
}

// `agentEdit.history` answers {entries: [{id, action, files, outcome, diff, undoes?, undoneBy?}],
// total, net: [{path, diff}]}, with the latest LIMIT entries.
const LIMIT = 200;
const appliedOf = (e: any): boolean => e.outcome === 'applied';

export class HistoryView implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider {
  readonly view: vscode.TreeView<Node>;
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docs = new Map<string, string>();
  private readonly disposables: vscode.Disposable[];
  private entries: any[] = [];
  private net = '';

  constructor(private readonly run: (command: string, args: object) => Promise<any>) {
    this.view = vscode.window.createTreeView('agentEditHistory', { treeDataProvider: this });
    this.status.command = 'agentEdit.showHistory';
    this.status.tooltip = 'Agent Edit: edits made by agents in this session';
    this.disposables = [
      this.view,
      this.status,
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
      vscode.commands.registerCommand('agentEdit.showHistory', () => this.show()),
      vscode.commands.registerCommand('agentEdit.undoLastEdit', () => this.undoLast()),
      vscode.commands.registerCommand('agentEdit.openDiff', (file: FileDiff, title: string) =>
        this.openDiff(file, title),
      ),
      vscode.commands.registerCommand('agentEdit.showEditDiff', async (editId: number) => {
        const entry = (await this.run('agentEdit.history', { editId })).entries?.[0];
        for (const file of splitDiff(entry?.diff ?? '')) await this.openDiff(file, `edit #${editId}`);
      }),
    ];
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }

  async refresh(): Promise<void> {
    const history = await this.run('agentEdit.history', { format: 'json', limit: LIMIT });
    this.entries = Array.isArray(history?.entries) ? history.entries : [];
    this.net = (Array.isArray(history?.net) ? history.net : []).map((f: any) => f.diff).join('');
    const count = this.entries.filter(appliedOf).length;
    // Past the limit the count is of the latest entries only: say so rather than undercount.
    const more = (history?.total ?? 0) > this.entries.length ? '+' : '';
    this.status.text = `$(history) Agent edits: ${count}${more}`;
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
    const last = [...this.entries]
      .reverse()
      .find((e) => appliedOf(e) && e.undoneBy == null && e.undoes == null);
    if (!last) {
      void vscode.window.showInformationMessage('Agent Edit: no applied edit to undo.');
      return undefined;
    }
    const result = await this.run('agentEdit.undo', { editId: last.id });
    if (result?.ok) void vscode.window.showInformationMessage(`Agent Edit: undid edit ${last.id}.`);
    else void vscode.window.showErrorMessage(`Agent Edit: ${result?.message} ${result?.hint ?? ''}`);
    return result;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.toString()) ?? '';
  }

  private async openDiff(file: FileDiff, title: string): Promise<void> {
    // Each opening gets fresh URIs: the same file differs between edits and the net diff.
    const key = `${Date.now()}-${this.docs.size}`;
    const uri = (side: string, text: string) => {
      const u = vscode.Uri.from({ scheme: SCHEME, path: `/${key}/${side}/${file.path}` });
      this.docs.set(u.toString(), text);
      return u;
    };
    await vscode.commands.executeCommand(
      'vscode.diff',
      uri('before', file.before),
      uri('after', file.after),
      `${file.path} (${title})`,
    );
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const collapsed = vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(node.label, node.files?.length ? collapsed : vscode.TreeItemCollapsibleState.None);
    item.description = node.description;
    item.tooltip = node.tooltip;
    if (node.file) {
      item.resourceUri = toUri(node.file.path);
      item.command = { command: 'agentEdit.openDiff', title: 'Show diff', arguments: [node.file, node.title] };
    }
    return item;
  }

  getChildren(node?: Node): Node[] {
    const fileNodes = (files: FileDiff[], title: string) =>
      files.map((file) => ({ label: file.path, file, title }));
    if (node) return fileNodes(node.files ?? [], node.title ?? '');
    const net: Node = { label: 'Session net diff', files: splitDiff(this.net), title: 'session' };
    const edits = [...this.entries].reverse().map((e) => {
      const files = (Array.isArray(e.files) ? e.files : []).map((f: any) =>
        typeof f === 'string' ? f : (f.movedTo ?? f.path),
      );
      return {
        label: `#${e.id} ${e.action ?? ''}`,
        description: `${e.outcome ?? ''} ${files.join(', ')}`.trim(),
        tooltip: e.error?.message ?? e.time,
        files: splitDiff(e.diff ?? ''),
        title: `edit #${e.id}`,
      };
    });
    return [net, ...edits];
  }
}
