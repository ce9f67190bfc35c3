/**
 * The view's actions. Each takes the tree node it was invoked on, or asks with a quick pick
 * when run from the command palette, so every action works both ways.
 */

import * as fs from 'node:fs';
import * as vscode from 'vscode';

import type { Connection } from './connection';
import { DEBUG_TYPE } from './debugAdapter';
import { localPath } from './paths';
import type { WorkerRecord } from './records';
import type { StacksTreeProvider } from './stacksView';
import type { StackItem } from './stackTree';
import { attachable, workerNode, workerTitle, type TreeNode } from './workerTree';

/** Where a hang notification points: the rank at fault, and its last call site. */
interface HangAt {
  worker?: string;
  path?: string;
  line?: number;
}

export function registerCommands(
  context: vscode.ExtensionContext,
  connection: Connection,
  stacks: StacksTreeProvider,
  stacksView: vscode.TreeView<StackItem>,
): void {
  const commands: Record<string, (node?: TreeNode | StackItem) => Promise<unknown>> = {
    'raydap.attach': async (node) => {
      const record = await workerOf(node, connection, 'Attach to which paused worker?', attachable);
      if (!record) return;
      await startSession({ name: `Ray: ${workerTitle(record)}`, breakpoint: record.id });
    },
    'raydap.followJob': async (node) => {
      const jobId = await jobOf(node, connection);
      if (!jobId) return;
      await startSession({ name: `Ray: follow job ${jobId}`, follow: { job: jobId } });
    },
    'raydap.followRanks': async (node) => {
      const jobId = await jobOf(node, connection);
      if (!jobId) return;
      const ranks = await askRanks(jobId, connection);
      if (!ranks) return;
      await startSession({ name: `Ray: follow ranks ${ranks} of job ${jobId}`, follow: { job: jobId, ranks } });
    },
    'raydap.continueWorker': async (node) => {
      const record = await workerOf(node, connection, 'Continue which paused worker?');
      if (record) await act(() => connection.api().then((api) => api.continueWorker(record.id)));
    },
    'raydap.continueJob': async (node) => {
      const jobId = await jobOf(node, connection);
      if (!jobId) return;
      const result = await act(() => connection.api().then((api) => api.continueJob(jobId)));
      if (result) void vscode.window.setStatusBarMessage(`Ray: continued ${result.continued.length} worker(s) of job ${jobId}`, 5_000);
    },
    'raydap.reveal': async (node) => {
      const record = await workerOf(node, connection, 'Show the source of which paused worker?');
      if (record?.location) await reveal(record);
    },
    'raydap.showStacks': async (node) => {
      const jobId = node?.type === 'job' ? (node.jobId ?? undefined) : await askJob();
      if (jobId === null) return;
      await vscode.commands.executeCommand('raydap.stacks.focus');
      await stacks.load(jobId);
      const at = node?.type === 'job' ? (node as HangAt) : undefined;
      if (!at?.worker) return;
      const item = stacks.find(at.worker);
      if (item) {
        await stacksView.reveal(item, { select: true, focus: true, expand: true });
      } else if (at.path && at.line && fs.existsSync(at.path)) {
        // A rank that runs no task (it finished): where it last called a collective.
        const line = Math.max(at.line - 1, 0);
        await vscode.window.showTextDocument(vscode.Uri.file(at.path), { selection: new vscode.Range(line, 0, line, 0) });
      }
    },
    'raydap.refreshStacks': () => stacks.load(stacks.jobId),
    'raydap.pauseWorker': async (node) => {
      const id =
        node?.type === 'rank'
          ? node.id
          : node?.type === 'worker'
            ? node.record.id
            : await vscode.window.showInputBox({ title: 'Pause which running worker (id or prefix)?' });
      if (!id) return;
      const paused = await vscode.window.withProgress(
        { location: { viewId: node?.type === 'worker' ? 'raydap.workers' : 'raydap.stacks' }, title: `Pausing ${id}` },
        () => act(() => connection.api().then((api) => api.pause(id))),
      );
      if (paused && 'pending' in paused) {
        void vscode.window.showInformationMessage(`raydap: pause of ${id} requested: ${paused.reason}`);
      } else if (paused) {
        void vscode.window.showInformationMessage(`raydap: ${workerTitle(paused)} (pid ${paused.pid ?? '?'}) is paused: attach from the Ray view`);
      }
    },
    'raydap.setToken': async () => {
      const token = await vscode.window.showInputBox({
        title: 'raydap bridge token',
        prompt: 'The secret of a token from the bridge\'s --token-file. Kept in VS Code\'s secret storage.',
        password: true,
        ignoreFocusOut: true,
        validateInput: (value) => (/^\S{1,4096}$/.test(value) ? undefined : 'a token is 1 to 4096 characters, no spaces'),
      });
      if (token) await connection.setToken(token);
    },
    'raydap.clearToken': () => connection.setToken(undefined),
    'raydap.reconnect': () => connection.reconnect(),
  };
  for (const [id, run] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  }
}

export async function startSession(fields: { name: string } & Record<string, unknown>): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const started = await vscode.debug.startDebugging(folder, { ...fields, type: DEBUG_TYPE, request: 'attach' });
  if (!started) void vscode.window.showErrorMessage('raydap: the debug session did not start; see the "raydap" output');
}

/** Run a bridge action; its failure is shown, not thrown into VS Code's command runner. */
export async function act<T>(run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    void vscode.window.showErrorMessage(`raydap: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

async function workerOf(
  node: TreeNode | StackItem | undefined,
  connection: Connection,
  question: string,
  eligible: (record: WorkerRecord) => boolean = () => true,
): Promise<WorkerRecord | undefined> {
  if (node?.type === 'worker') return node.record;
  const now = Date.now() / 1000;
  const choices = connection.records.filter(eligible).map((record) => {
    const shown = workerNode(record, now);
    return { label: shown.label, description: shown.description, detail: `job ${record.job_id ?? '?'} · id ${record.id}`, record };
  });
  if (choices.length === 0) {
    void vscode.window.showInformationMessage('raydap: no paused Ray worker to choose from');
    return undefined;
  }
  return (await vscode.window.showQuickPick(choices, { title: question, matchOnDetail: true }))?.record;
}

/** A job id, or undefined for every job; null when the person cancelled. */
async function askJob(): Promise<string | undefined | null> {
  const typed = await vscode.window.showInputBox({
    title: 'Show the stacks of which job?',
    prompt: 'A job id such as 02000000; empty for every worker running a task',
    validateInput: (value) => (/^[0-9a-fA-F]{0,64}$/.test(value.trim()) ? undefined : 'a job id is hexadecimal'),
  });
  if (typed === undefined) return null;
  return typed.trim() || undefined;
}

/**
 * A rank set (`0-3,8`, `tp=1 dp=0`, `group=mesh_tp:5`, `actor`), checked by the bridge as it is
 * typed: it alone parses rank sets, and its refusal says the syntax. Undefined: cancelled.
 */
async function askRanks(jobId: string, connection: Connection): Promise<string | undefined> {
  const typed = await vscode.window.showInputBox({
    title: `Follow which ranks of job ${jobId}?`,
    prompt: 'A rank set: 0-3,8 · tp=1 dp=0 (both) · dp=(1,3) · tp=0:2 · group=mesh_tp:5 · actor',
    validateInput: async (value) => {
      if (!value.trim()) return 'a rank set, such as 0-3 or tp=1';
      try {
        const api = await connection.api();
        const matched = await api.workers({ job: jobId, ranks: value.trim() });
        return matched.length ? undefined : { message: 'no worker of this job matches yet: its ranks are followed once they come', severity: vscode.InputBoxValidationSeverity.Info };
      } catch (error) {
        return error instanceof Error ? error.message : String(error);
      }
    },
  });
  return typed?.trim() || undefined;
}

async function jobOf(node: TreeNode | StackItem | undefined, connection: Connection): Promise<string | undefined> {
  if (node?.type === 'job') return node.jobId ?? undefined;
  if (node?.type === 'worker') return node.record.job_id ?? undefined;
  const jobs = [...new Set(connection.records.map((r) => r.job_id).filter((id): id is string => !!id))].sort();
  if (jobs.length === 0) {
    void vscode.window.showInformationMessage('raydap: no job has a paused worker');
    return undefined;
  }
  return vscode.window.showQuickPick(jobs, { title: 'Which job?' });
}

async function reveal(record: WorkerRecord): Promise<void> {
  if (!record.location) return;
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const path = localPath(record.location.path, root);
  if (!fs.existsSync(path)) {
    void vscode.window.showWarningMessage(
      `raydap: ${path} is not on this machine. Attach to the worker to read it through the bridge.`,
    );
    return;
  }
  const line = Math.max(0, record.location.line - 1);
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  await vscode.window.showTextDocument(document, { selection: new vscode.Range(line, 0, line, 0), preview: true });
}
