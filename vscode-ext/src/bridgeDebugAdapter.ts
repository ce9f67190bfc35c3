/**
 * The inline debug adapter of a `ray` session: it relays DAP to the bridge over a transport
 * (`dapTransport.ts`) and, when the bridge is replaced (`raydap serve --replace`, SIGHUP), goes
 * on with the new one. A replaced bridge sends `raydapReplaced` with what the session needs;
 * the adapter connects again to the same address, repeats the editor's `initialize` and
 * `attach` with that `resume`, and the editor keeps its thread, frame, variable and breakpoint
 * ids. Requests the old bridge left unanswered get an error saying to ask again; what the
 * editor sends meanwhile waits for the new bridge. `raydap dap` does the same for other editors.
 */

import type * as vscode from 'vscode';

import type { Connect, Message, Transport } from './dapTransport';

type Listener = (message: vscode.DebugProtocolMessage) => unknown;

export const REPLACED_EVENT = 'raydapReplaced';
/** How long to look for the new bridge (it listens before the old one goes). */
export const RECONNECT_WITHIN_MS = 30_000;
const RETRY_EVERY_MS = 200;

export class BridgeDebugAdapter implements vscode.DebugAdapter {
  private readonly listeners = new Set<Listener>();
  private transport: Transport;
  private closedBecause: string | undefined;
  private seq = 1_000_000_000; // our own messages and requests, numbered apart from the editor's
  private initialize: Message | undefined;
  private attach: Message | undefined;
  private readonly unanswered = new Map<number, string>(); // editor seq -> command
  private held: Message[] | undefined; // while resuming: what the editor sent
  private readonly own = new Map<number, (answer: Message | string) => void>();
  private resuming = false;

  constructor(private readonly connect: Connect) {
    this.transport = this.open();
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
    if (request.type === 'request' && request.command === 'initialize') this.initialize = request;
    if (request.type === 'request' && request.command === 'attach') this.attach = request;
    if (this.held !== undefined) this.held.push(request);
    else this.toBridge(request);
  }

  dispose(): void {
    this.closedBecause ??= 'the session ended';
    this.transport.close();
    this.listeners.clear();
  }

  // -- the bridge's side ---------------------------------------------------------------------

  /**
   * A connection to the bridge. Messages count only from the current one; the current one
   * closing ends the session (unless a resume is under way, whose own requests then fail).
   * A connection not yet made current reports its failure to `failed`.
   */
  private open(opened?: (transport: Transport) => void, failed?: (reason: string) => void): Transport {
    const transport: Transport = this.connect({
      opened: () => opened?.(transport),
      message: (message) => {
        if (transport === this.transport) this.fromBridge(message);
      },
      closed: (reason) => {
        if (transport !== this.transport) return failed?.(reason);
        this.failOwn(reason);
        if (!this.resuming) this.close(reason);
      },
    });
    return transport;
  }

  private toBridge(message: Message): void {
    if (message.type === 'request' && typeof message.seq === 'number') this.unanswered.set(message.seq, message.command ?? '');
    this.transport.send(message);
  }

  private fromBridge(message: Message): void {
    if (message.type === 'event' && message.event === REPLACED_EVENT) {
      void this.resume((message.body ?? {}) as { pid?: number; resume?: unknown });
      return;
    }
    if (message.type === 'response' && typeof message.request_seq === 'number') {
      const own = this.own.get(message.request_seq);
      if (own !== undefined) {
        this.own.delete(message.request_seq);
        return own(message);
      }
      this.unanswered.delete(message.request_seq);
    }
    if (this.resuming && message.type === 'event' && message.event === 'initialized') return; // configured long ago
    this.emit(message);
  }

  // -- resuming on the bridge that replaced this one ----------------------------------------

  private async resume(told: { pid?: number; resume?: unknown }): Promise<void> {
    this.held = [];
    this.resuming = true;
    this.say(`the bridge was replaced by pid ${told.pid ?? '?'}; resuming this session there`);
    this.transport.close(); // the old process goes; its answers are lost with it
    for (const [seq, command] of this.unanswered) {
      this.emit(this.reply({ seq, command }, false, 'raydap: the bridge was replaced while this was asked; ask again'));
    }
    this.unanswered.clear();
    try {
      if (this.initialize === undefined || this.attach === undefined) throw new Error('the session was not attached yet; start it again');
      await this.reconnect();
      await this.ask('initialize', this.initialize.arguments ?? {});
      await this.ask('attach', { ...(this.attach.arguments as object | undefined), resume: told.resume });
      await this.ask('configurationDone', {});
    } catch (error) {
      this.resuming = false;
      const why = error instanceof Error ? error.message : String(error);
      return this.close(`could not resume the session: ${why}`);
    }
    this.resuming = false;
    const held = this.held;
    this.held = undefined;
    for (const message of held) this.toBridge(message);
    this.say('reconnected to the new bridge: same stops, same ids');
  }

  /** Connect again until the new bridge answers (its listener takes over the old one's). */
  private async reconnect(): Promise<void> {
    const deadline = Date.now() + RECONNECT_WITHIN_MS;
    for (;;) {
      const outcome = await new Promise<string | undefined>((settle) => {
        this.open((transport) => {
          this.transport = transport;
          settle(undefined);
        }, settle);
      });
      if (outcome === undefined) return;
      if (this.closedBecause !== undefined) throw new Error(this.closedBecause);
      if (Date.now() > deadline) throw new Error(outcome);
      await new Promise((wake) => setTimeout(wake, RETRY_EVERY_MS));
    }
  }

  private ask(command: string, args: unknown): Promise<Message> {
    const seq = this.seq++;
    return new Promise<Message>((resolve, reject) => {
      this.own.set(seq, (answer) => {
        if (typeof answer === 'string') return reject(new Error(answer));
        if (answer.success) return resolve(answer);
        reject(new Error(`the new bridge refused '${command}': ${answer.message ?? ''}`.trim()));
      });
      this.transport.send({ type: 'request', seq, command, arguments: args });
    });
  }

  private failOwn(reason: string): void {
    for (const settle of this.own.values()) settle(reason);
    this.own.clear();
  }

  // -- the editor's side ---------------------------------------------------------------------

  /** Say why the session ends, then end it: VS Code stops a session on `terminated`. */
  private close(reason: string): void {
    if (this.closedBecause !== undefined) return;
    this.closedBecause = reason;
    this.transport.close();
    for (const message of this.held ?? []) this.handleMessage(message);
    this.held = undefined;
    this.emit({ type: 'event', seq: this.seq++, event: 'output', body: { category: 'important', output: `raydap: ${reason}\n` } });
    this.emit({ type: 'event', seq: this.seq++, event: 'terminated', body: {} });
  }

  private say(text: string): void {
    this.emit({ type: 'event', seq: this.seq++, event: 'output', body: { category: 'console', output: `raydap: ${text}\n` } });
  }

  private reply(request: Message, success: boolean, message?: string): Message {
    return {
      type: 'response',
      seq: this.seq++,
      request_seq: request.seq ?? 0,
      command: request.command ?? '',
      success,
      ...(message === undefined ? {} : { message }),
    };
  }

  private emit(message: Message): void {
    for (const listener of [...this.listeners]) listener(message as vscode.DebugProtocolMessage);
  }
}
