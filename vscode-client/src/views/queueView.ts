// The queue view: waiting follow-ups (FIFO, the steerable prefix marked) and their history,
// with inline actions steer / send now / edit / cancel. Rows come from queueState.queueRows.

import * as vscode from 'vscode';

import type { AgentClient } from '../agentClient.js';
import { queueRows } from '../queueState.js';
import type { QueueRow } from '../queueState.js';

export const QUEUE_VIEW_ID = 'lspAgent.queue';

type Node = { kind: 'group'; group: QueueRow['group']; rows: QueueRow[] } | { kind: 'row'; row: QueueRow; item: QueueRow['item'] };

export class QueueView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly tree: vscode.TreeView<Node>;
  private readonly subscription: { dispose(): void };

  constructor(private readonly client: AgentClient) {
    this.tree = vscode.window.createTreeView(QUEUE_VIEW_ID, { treeDataProvider: this, showCollapseAll: false });
    this.subscription = client.onDidChange(() => this.refresh());
    this.refresh();
  }

  private refresh(): void {
    const waiting = this.client.waitingCount;
    this.tree.badge = waiting > 0 ? { value: waiting, tooltip: `${waiting} queued follow-up${waiting === 1 ? '' : 's'}` } : undefined;
    // An empty message hides it.
    this.tree.message = this.client.snapshot.queue.length === 0 ? 'No queued follow-ups. Queue one while a task runs.' : '';
    this.changeEmitter.fire(undefined);
  }

  getChildren(node?: Node): Node[] {
    if (node?.kind === 'group') {
      return node.rows.map((row) => ({ kind: 'row', row, item: row.item }));
    }
    if (node) {
      return [];
    }
    const rows = queueRows(this.client.snapshot.queue, this.client.snapshot.running);
    const groups: Node[] = [];
    const waiting = rows.filter((r) => r.group === 'waiting');
    const history = rows.filter((r) => r.group === 'history');
    if (waiting.length) {
      groups.push({ kind: 'group', group: 'waiting', rows: waiting });
    }
    if (history.length) {
      groups.push({ kind: 'group', group: 'history', rows: history });
    }
    return groups;
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'group') {
      const label = node.group === 'waiting' ? `Waiting (${node.rows.length})` : `History (${node.rows.length})`;
      const item = new vscode.TreeItem(
        label,
        node.group === 'waiting' ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
      );
      item.id = `group:${node.group}`;
      item.contextValue = `lspAgent.queueGroup.${node.group}`;
      return item;
    }
    const { row } = node;
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.id = row.id;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.contextValue = row.contextValue;
    item.iconPath = new vscode.ThemeIcon(row.icon);
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.tree.dispose();
    this.changeEmitter.dispose();
  }
}
