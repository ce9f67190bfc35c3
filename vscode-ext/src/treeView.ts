/** The "Ray" view: the tree model of `workerTree.ts` as VS Code tree items. */

import * as vscode from 'vscode';

import type { WorkerRecord } from './records';
import type { StreamState } from './eventStream';
import { buildTree, type JobNode, type TreeNode, type WorkerNode } from './workerTree';

export class WorkerTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private jobs: JobNode[] = [];
  private records: readonly WorkerRecord[] = [];
  private state: StreamState = { status: 'connecting' };
  /** Re-draws "paused for" while someone can see it; the records themselves are pushed. */
  private readonly clock: NodeJS.Timeout;

  constructor() {
    this.clock = setInterval(() => {
      if (this.records.length > 0) this.redraw();
    }, 5_000);
  }

  update(records: readonly WorkerRecord[], state: StreamState): void {
    this.records = records;
    this.state = state;
    this.redraw();
  }

  /**
   * Shown above the tree while connecting. When the bridge is unreachable or refuses the token
   * the view's welcome content explains it with buttons to fix it (VS Code hides the welcome
   * while a message is set); the details go to the status bar's tooltip and the log.
   */
  get message(): string | undefined {
    return this.state.status === 'connecting' ? 'Connecting to the raydap bridge…' : undefined;
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    if (node.type === 'job') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `job:${node.jobId ?? '?'}`;
      item.description = node.description;
      item.contextValue = node.contextValue;
      item.iconPath = new vscode.ThemeIcon('layers');
      return item;
    }
    const collapsible = node.children.length
      ? vscode.TreeItemCollapsibleState.Expanded
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.id = `worker:${node.record.id}`;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.accessibilityInformation = { label: `${node.label}, ${node.description}` };
    item.contextValue = node.contextValue;
    item.iconPath = new vscode.ThemeIcon(node.icon);
    if (node.record.location) {
      item.command = { command: 'raydap.reveal', title: 'Reveal Source', arguments: [node] };
    }
    return item;
  }

  getChildren(node?: TreeNode): TreeNode[] {
    if (node === undefined) return this.jobs;
    return node.type === 'job' ? node.workers : node.children;
  }

  getParent(node: TreeNode): TreeNode | undefined {
    if (node.type === 'job') return undefined;
    const job = this.jobs.find((j) => j.jobId === node.record.job_id);
    if (node.record.parent === null || job === undefined) return job;
    const find = (nodes: WorkerNode[]): WorkerNode | undefined => {
      for (const candidate of nodes) {
        if (candidate.record.id === node.record.parent) return candidate;
        const deeper = find(candidate.children);
        if (deeper) return deeper;
      }
      return undefined;
    };
    return find(job.workers) ?? job;
  }

  dispose(): void {
    clearInterval(this.clock);
    this.changed.dispose();
  }

  private redraw(): void {
    this.jobs = this.state.status === 'connected' ? buildTree(this.records, Date.now() / 1000) : [];
    this.changed.fire(undefined);
  }
}
