/** Entry point: wires the connection to the view, the status bar, the commands and `ray`. */

import * as vscode from 'vscode';

import { registerCaptureCommands } from './captureCommands';
import { registerCommands } from './commands';
import { Connection } from './connection';
import { registerDebugType } from './debugAdapter';
import { CapturesTreeProvider } from './capturesView';
import { StacksTreeProvider } from './stacksView';
import { WorkerTreeProvider } from './treeView';
import { pausedCount } from './workerTree';

export const VIEW_ID = 'raydap.workers';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('raydap');
  const connection = new Connection(context.secrets, log);
  const tree = new WorkerTreeProvider();
  const view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: tree });
  const status = vscode.window.createStatusBarItem('raydap.paused', vscode.StatusBarAlignment.Left, 50);
  status.name = 'Ray paused workers';
  status.command = `${VIEW_ID}.focus`;
  status.show();
  const stacks = new StacksTreeProvider(connection);
  const stacksView = vscode.window.createTreeView('raydap.stacks', { treeDataProvider: stacks });
  stacksView.message = stacks.message;
  stacks.onDidChangeTreeData(() => {
    stacksView.message = stacks.message;
  });
  const captures = new CapturesTreeProvider(connection);
  const capturesView = vscode.window.createTreeView('raydap.captures', { treeDataProvider: captures });
  captures.onDidChangeTreeData(() => {
    capturesView.message = captures.message;
  });
  connection.onCaptures(() => {
    if (capturesView.visible) captures.reload();
  });
  capturesView.onDidChangeVisibility((change) => {
    if (change.visible) captures.reload();
  });
  context.subscriptions.push(log, connection, tree, view, status, stacks, stacksView, captures, capturesView);

  connection.onRecords((records, state) => {
    tree.update(records, state);
    view.message = tree.message;
    void vscode.commands.executeCommand('setContext', 'raydap.state', state.status);
    const paused = pausedCount(records);
    view.badge = paused > 0 ? { value: paused, tooltip: `${paused} paused Ray worker(s)` } : undefined;
    if (state.status === 'connected') {
      status.text = `$(debug-pause) Ray: ${paused} paused`;
      status.tooltip = `${paused} Ray worker(s) paused at a breakpoint: show them`;
    } else if (state.status === 'unauthorized') {
      status.text = '$(lock) Ray: token refused';
      status.tooltip = state.message;
    } else {
      status.text = '$(debug-disconnect) Ray: no bridge';
      status.tooltip = 'message' in state ? state.message : 'connecting to the raydap bridge';
    }
  });

  registerCommands(context, connection, stacks, stacksView);
  registerCaptureCommands(context, connection, captures);
  registerDebugType(context, connection, log);
  await connection.reconnect();
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions.
}
