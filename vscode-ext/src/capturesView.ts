/**
 * The "Ray Captures" view: `captures.ts`'s items as VS Code tree items. Read from the bridge
 * when shown and again when the events feed says a capture came or a point turned itself off
 * (at most once a second: a point on a hot line sends a burst). Clicking a capture opens it as
 * a read-only debug session.
 */

import * as vscode from 'vscode';

import { buildCaptureItems, type CaptureTreeItem } from './captures';
import type { Connection } from './connection';

/** Between two reads of the bridge at least, however many captures arrive. */
const RELOAD_EVERY_MS = 1000;

export class CapturesTreeProvider implements vscode.TreeDataProvider<CaptureTreeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<CaptureTreeItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private items: CaptureTreeItem[] = [];
  private pending: NodeJS.Timeout | undefined;
  private lastLoad = 0;
  message: string | undefined;

  constructor(private readonly connection: Connection) {}

  /** Read the points and captures again, now or as soon as a second has passed since the last. */
  reload(): void {
    if (this.pending) return;
    const wait = Math.max(0, this.lastLoad + RELOAD_EVERY_MS - Date.now());
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.load();
    }, wait);
  }

  async load(): Promise<void> {
    this.lastLoad = Date.now();
    try {
      const api = await this.connection.api();
      const [points, captures] = await Promise.all([api.capturePoints(), api.captures()]);
      this.items = buildCaptureItems(points, captures);
      this.message = this.items.length ? undefined : 'No capture point. Set one with "Edit Mode..." > "Capture (no stop)" on a breakpoint, or `raydap capture FILE:LINE`.';
    } catch (error) {
      this.items = [];
      this.message = `raydap: ${error instanceof Error ? error.message : String(error)}`;
    }
    this.changed.fire(undefined);
  }

  getTreeItem(item: CaptureTreeItem): vscode.TreeItem {
    const folds = item.type !== 'capture' && item.children.length > 0;
    const tree = new vscode.TreeItem(item.label, folds ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    tree.id = itemId(item); // kept across reloads: a point's row stays itself as captures come
    tree.description = item.description;
    tree.accessibilityInformation = { label: `${item.label}, ${item.description}` };
    if (item.type === 'capture') {
      tree.tooltip = item.tooltip;
      tree.contextValue = 'capture';
      tree.iconPath = new vscode.ThemeIcon(item.capture.kind === 'exception' ? 'error' : 'record');
      tree.command = { command: 'raydap.openCapture', title: 'Open Capture', arguments: [item] };
    } else if (item.type === 'point') {
      tree.tooltip = item.tooltip;
      tree.contextValue = item.point.owner === 'a DAP session' ? 'capturePoint' : 'capturePoint.clearable';
      tree.iconPath = new vscode.ThemeIcon(item.point.disabled ? 'debug-breakpoint-unsupported' : 'debug-breakpoint-log');
    } else {
      tree.iconPath = new vscode.ThemeIcon(item.label === 'Failed tasks' ? 'error' : 'history');
    }
    return tree;
  }

  getChildren(item?: CaptureTreeItem): CaptureTreeItem[] {
    if (item === undefined) return this.items;
    return item.type === 'capture' ? [] : item.children;
  }

  dispose(): void {
    clearTimeout(this.pending);
    this.changed.dispose();
  }
}

function itemId(item: CaptureTreeItem): string {
  if (item.type === 'point') return `point:${item.point.id}`;
  return item.type === 'capture' ? `capture:${item.capture.id}` : `group:${item.label}`;
}
