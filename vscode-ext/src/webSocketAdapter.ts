/**
 * An inline debug adapter that carries DAP over the bridge's `/dap` WebSocket, one message per
 * text frame. It lets a session reach the bridge through the one HTTP port (an SSH tunnel, an
 * ingress) with the token in the upgrade's `Authorization` header. It only relays: every DAP
 * decision is the bridge's.
 */

import type * as vscode from 'vscode';
import WebSocket from 'ws';

import { describe } from './bridgeApi';

type Message = vscode.DebugProtocolMessage & { type?: string; seq?: number; command?: string };
type Listener = (message: vscode.DebugProtocolMessage) => unknown;

/** The same limit the bridge applies to one DAP message. */
const MAX_MESSAGE = 64 * 1024 * 1024;

export class WebSocketDebugAdapter implements vscode.DebugAdapter {
  private readonly listeners = new Set<Listener>();
  private readonly socket: WebSocket;
  private readonly queue: string[] = [];
  private closedBecause: string | undefined;
  private seq = 1_000_000_000; // our own messages, numbered apart from the bridge's

  constructor(url: string, token: string | undefined) {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    this.socket = new WebSocket(url, { headers, maxPayload: MAX_MESSAGE, handshakeTimeout: 10_000 });
    this.socket.on('open', () => {
      for (const text of this.queue.splice(0)) this.socket.send(text);
    });
    this.socket.on('message', (data, isBinary) => {
      if (isBinary) return this.close('the bridge sent a binary frame; DAP over WebSocket is text');
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return this.close('the bridge sent a frame that is not JSON');
      }
      if (typeof message !== 'object' || message === null) return this.close('the bridge sent a non-object message');
      this.emit(message as Message);
    });
    this.socket.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      this.close(
        status === 401
          ? 'the bridge refused the token (401): set one with "Ray: Set Bridge Token"'
          : `the bridge refused the debug connection: ${status} ${response.statusMessage ?? ''}`.trim(),
      );
    });
    this.socket.on('error', (error) => this.close(`cannot reach the bridge at ${url}: ${describe(error)}`));
    this.socket.on('close', (code, reason) =>
      this.close(`the bridge closed the debug connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`),
    );
  }

  readonly onDidSendMessage: vscode.Event<vscode.DebugProtocolMessage> = (listener, thisArgs, disposables) => {
    const bound: Listener = thisArgs ? listener.bind(thisArgs) : listener;
    this.listeners.add(bound);
    const disposable = { dispose: () => void this.listeners.delete(bound) };
    disposables?.push(disposable);
    return disposable;
  };

  handleMessage(message: vscode.DebugProtocolMessage): void {
    const request = message as Message;
    if (this.closedBecause !== undefined) {
      // Nobody will answer any more: answer for the bridge, so the editor does not wait.
      if (request.type === 'request') {
        const ok = request.command === 'disconnect';
        this.emit(this.reply(request, ok, ok ? undefined : this.closedBecause));
      }
      return;
    }
    const text = JSON.stringify(message);
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(text);
    else this.queue.push(text);
  }

  dispose(): void {
    this.closedBecause ??= 'the session ended';
    this.socket.removeAllListeners();
    this.socket.on('error', () => undefined);
    this.socket.close();
    this.listeners.clear();
  }

  /** Say why the session ends, then end it: VS Code stops a session on `terminated`. */
  private close(reason: string): void {
    if (this.closedBecause !== undefined) return;
    this.closedBecause = reason;
    this.queue.length = 0;
    this.socket.terminate();
    this.emit({ type: 'event', seq: this.seq++, event: 'output', body: { category: 'important', output: `raydap: ${reason}\n` } } as Message);
    this.emit({ type: 'event', seq: this.seq++, event: 'terminated', body: {} } as Message);
  }

  private reply(request: Message, success: boolean, message?: string): Message {
    return {
      type: 'response',
      seq: this.seq++,
      request_seq: request.seq ?? 0,
      command: request.command ?? '',
      success,
      ...(message === undefined ? {} : { message }),
    } as Message;
  }

  private emit(message: Message): void {
    for (const listener of [...this.listeners]) listener(message);
  }
}
