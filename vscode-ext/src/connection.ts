/**
 * The extension's one link to the bridge: current settings, the token from SecretStorage, the
 * live events stream, and an HTTP client for actions. Settings or token changes re-open the
 * stream, so the view always shows the bridge the user asked for.
 */

import * as vscode from 'vscode';

import { BridgeApi } from './bridgeApi';
import { findConnection } from './connectionFile';
import { EventStream, type StreamState } from './eventStream';
import type { HangVerdict, WorkerRecord } from './records';
import { ConfigError, DEFAULT_SETTINGS, readSettings, type Settings } from './settings';

const TOKEN_KEY = 'raydap.token';

export type RecordsListener = (records: readonly WorkerRecord[], state: StreamState) => void;

export class Connection implements vscode.Disposable {
  private stream: EventStream | undefined;
  private readonly listeners: RecordsListener[] = [];
  private readonly captureListeners: (() => void)[] = [];
  private readonly subscriptions: vscode.Disposable[] = [];
  private generation = 0;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: vscode.OutputChannel,
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((change) => {
        if (change.affectsConfiguration('raydap')) void this.reconnect();
      }),
      secrets.onDidChange((change) => {
        if (change.key === TOKEN_KEY) void this.reconnect();
      }),
    );
  }

  onRecords(listener: RecordsListener): void {
    this.listeners.push(listener);
  }

  /** Told when a capture comes or a capture point turns itself off (and on each reconnect). */
  onCaptures(listener: () => void): void {
    this.captureListeners.push(listener);
  }

  /** The settings as checked; a bad value is reported and the default used instead. */
  settings(): Settings {
    const section = vscode.workspace.getConfiguration('raydap');
    try {
      return readSettings((key) => section.get(key));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      void vscode.window.showErrorMessage(`raydap: ${error.message}; using ${DEFAULT_SETTINGS.bridgeUrl}`);
      return DEFAULT_SETTINGS;
    }
  }

  /** The token set with "Ray: Set Bridge Token", else the one in the connection file of a
   * bridge running on this machine at the configured URL. */
  async token(): Promise<string | undefined> {
    const stored = (await this.secrets.get(TOKEN_KEY)) || undefined;
    if (stored) return stored;
    return (await findConnection(this.settings().bridgeUrl))?.token;
  }

  async setToken(token: string | undefined): Promise<void> {
    if (token) await this.secrets.store(TOKEN_KEY, token);
    else await this.secrets.delete(TOKEN_KEY);
  }

  async api(): Promise<BridgeApi> {
    return new BridgeApi(this.settings().bridgeUrl, await this.token());
  }

  get records(): readonly WorkerRecord[] {
    return this.stream ? [...this.stream.records.values()] : [];
  }

  async reconnect(): Promise<void> {
    const generation = ++this.generation;
    const { bridgeUrl } = this.settings();
    const token = await this.token();
    if (generation !== this.generation) return; // a newer reconnect is under way
    this.stream?.stop();
    this.log.appendLine(`watching ${bridgeUrl} (${token ? 'with' : 'without'} a token)`);
    let last: StreamState['status'] | undefined;
    this.stream = new EventStream(bridgeUrl, token, (records, state) => {
      if (state.status !== last) {
        this.log.appendLine(`bridge ${state.status}${'message' in state ? `: ${state.message}` : ''}`);
        last = state.status;
      }
      const list = [...records.values()];
      for (const listener of this.listeners) listener(list, state);
    }, undefined, undefined, (verdict) => this.announceHang(verdict), () => {
      for (const listener of this.captureListeners) listener();
    });
    for (const listener of this.listeners) listener([], this.stream.state);
    for (const listener of this.captureListeners) listener();
    this.stream.start();
  }

  /** A job newly suspected hung: say so, naming its stragglers (the ranks at fault first),
   * and offer its merged stacks opened at the first of them. */
  private announceHang(verdict: HangVerdict): void {
    this.log.appendLine(`job ${verdict.job}: ${verdict.state} (${verdict.summary})`);
    if (verdict.report) this.log.appendLine(`job ${verdict.job}: report ${verdict.report}`);
    if (verdict.state !== 'suspected_hang') return;
    const stragglers = verdict.stragglers
      .slice(0, 3)
      .map((s) => {
        const coords = Object.entries(s.coords).map(([dim, at]) => ` ${dim}=${at}`).join('');
        return `${s.rank === null ? s.worker : `rank ${s.rank}`}${s.role ? ` (${s.role})` : ''}${coords} in ${s.function}`;
      })
      .join(', ');
    const text = `Ray job ${verdict.job} looks hung: ${verdict.summary}${stragglers ? `. Straggler: ${stragglers}` : ''}`;
    const first = verdict.stragglers[0];
    const action = first ? `Show ${first.rank === null ? first.worker : `Rank ${first.rank}`}` : 'Show Stacks';
    void vscode.window.showWarningMessage(text, action).then((choice) => {
      if (choice !== action) return;
      const at = first ? { worker: first.worker, path: first.path, line: first.line } : {};
      void vscode.commands.executeCommand('raydap.showStacks', { type: 'job', jobId: verdict.job, ...at });
    });
  }

  dispose(): void {
    this.stream?.stop();
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}
