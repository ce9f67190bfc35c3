/** The "Ray Stacks" view: `stackTree.ts`'s items as VS Code tree items, loaded on request. */

import * as vscode from 'vscode';

import type { Connection } from './connection';
import { buildStackItems, pathTo, type StackItem } from './stackTree';

export class StacksTreeProvider implements vscode.TreeDataProvider<StackItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<StackItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private items: StackItem[] = [];
  /** The job shown (undefined: every worker), kept for Refresh. */
  jobId: string | undefined;
  message: string | undefined = 'Run "Ray: Show Stacks" (on a job in the Ray view, or from the command palette).';

  constructor(private readonly connection: Connection) {}

  /** Ask the bridge for the merged stacks of ``jobId`` (or of every worker) and show them. */
  async load(jobId: string | undefined): Promise<void> {
    this.jobId = jobId;
    this.message = `Reading the stacks of ${jobId ? `job ${jobId}` : 'every worker'}…`;
    this.items = [];
    this.changed.fire(undefined);
    try {
      const answer = await (await this.connection.api()).stacks(jobId);
      this.items = buildStackItems(answer);
      const count = answer.tree.workers.length;
      this.message = count === 0 ? `No worker of ${jobId ? `job ${jobId}` : 'any job'} is running a task.` : undefined;
    } catch (error) {
      this.message = `raydap: ${error instanceof Error ? error.message : String(error)}`;
    }
    this.changed.fire(undefined);
  }

  getTreeItem(item: StackItem): vscode.TreeItem {
    if (item.type === 'frame') {
      const expanded = vscode.TreeItemCollapsibleState.Expanded;
      const tree = new vscode.TreeItem(item.label, item.children.length ? expanded : vscode.TreeItemCollapsibleState.None);
      tree.description = item.description;
      tree.tooltip = item.tooltip;
      tree.accessibilityInformation = { label: `${item.label}, ${item.description}` };
      tree.iconPath = new vscode.ThemeIcon('symbol-function');
      tree.contextValue = 'frame';
      tree.command = {
        command: 'vscode.open',
        title: 'Open',
        arguments: [vscode.Uri.file(item.path), { selection: new vscode.Range(item.line - 1, 0, item.line - 1, 0) }],
      };
      return tree;
    }
    const tree = new vscode.TreeItem(item.label, vscode.TreeItemCollapsibleState.None);
    tree.description = item.description;
    tree.accessibilityInformation = { label: `${item.label}, ${item.description}` };
    if (item.type === 'rank') {
      tree.contextValue = item.contextValue;
      tree.iconPath = new vscode.ThemeIcon('server-process');
    } else {
      tree.iconPath = new vscode.ThemeIcon('warning');
    }
    return tree;
  }

  /** The item of a worker, to reveal (undefined: it is not in these stacks). */
  find(workerId: string): StackItem | undefined {
    return pathTo(this.items, workerId)?.at(-1);
  }

  getParent(item: StackItem): StackItem | undefined {
    const id = item.type === 'rank' ? item.id : undefined;
    const chain = id ? pathTo(this.items, id.split('/')[0] ?? id) : this.chainOf(item, this.items);
    return chain && chain.length > 1 ? chain.at(-2) : undefined;
  }

  private chainOf(target: StackItem, items: StackItem[]): StackItem[] | null {
    for (const item of items) {
      if (item === target) return [item];
      if (item.type === 'frame') {
        const below = this.chainOf(target, item.children);
        if (below) return [item, ...below];
      }
    }
    return null;
  }

  getChildren(item?: StackItem): StackItem[] {
    if (item === undefined) return this.items;
    return item.type === 'frame' ? item.children : [];
  }

  dispose(): void {
    this.changed.dispose();
  }
}
