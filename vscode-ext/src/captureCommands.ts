/** The "Ray Captures" view's actions: open a capture (as a read-only debug session), refresh,
 * clear a point set outside the editor (a DAP session's own is cleared in the editor). */

import * as vscode from 'vscode';

import type { CaptureTreeItem } from './captures';
import type { CapturesTreeProvider } from './capturesView';
import { act, startSession } from './commands';
import type { Connection } from './connection';

export function registerCaptureCommands(
  context: vscode.ExtensionContext,
  connection: Connection,
  captures: CapturesTreeProvider,
): void {
  const commands: Record<string, (node?: CaptureTreeItem) => Promise<unknown>> = {
    'raydap.openCapture': async (node) => {
      const id =
        node?.type === 'capture'
          ? node.capture.id
          : await vscode.window.showInputBox({
              title: 'Open which capture (id or prefix)?',
              prompt: 'A capture id such as cap-1a2b3c4d5e6f, as the Ray Captures view or `raydap captures` lists it',
              validateInput: (value) => (/^cap-[0-9a-f]{1,12}$/.test(value.trim()) ? undefined : 'a capture id is cap- and hexadecimal'),
            });
      if (!id) return;
      const name = node?.type === 'capture' ? `Ray capture: ${node.label}` : `Ray capture ${id.trim()}`;
      await startSession({ name, capture: id.trim() });
    },
    'raydap.refreshCaptures': () => captures.load(),
    'raydap.clearCapturePoint': async (node) => {
      if (node?.type !== 'point') return;
      await act(() => connection.api().then((api) => api.clearCapturePoint(node.point.id)));
      await captures.load();
    },
  };
  for (const [id, run] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  }
}
