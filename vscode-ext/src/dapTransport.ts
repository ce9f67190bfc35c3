/**
 * How a debug session's DAP messages reach the bridge: its DAP TCP port (Content-Length framed,
 * as debug adapters speak) or its `/dap` WebSocket (one message per text frame, the token in
 * the upgrade's `Authorization` header). Both only carry messages; every DAP decision is the
 * adapter's (`bridgeDebugAdapter.ts`) or the bridge's.
 */

import * as net from 'node:net';
import WebSocket from 'ws';

import { describe } from './bridgeApi';

export type Message = { type?: string; seq?: number; command?: string; event?: string; request_seq?: number; success?: boolean; message?: string; arguments?: unknown; body?: unknown };

/** What a transport tells its adapter. `closed` comes once, with why. */
export interface TransportEvents {
  opened(): void;
  message(message: Message): void;
  closed(reason: string): void;
}

export interface Transport {
  /** Sent once the connection is open; queued until then. */
  send(message: Message): void;
  /** Close without telling `closed`: the adapter asked. */
  close(): void;
}

export type Connect = (events: TransportEvents) => Transport;

/** The same limit the bridge applies to one DAP message. */
export const MAX_MESSAGE = 64 * 1024 * 1024;

/** Once: later calls of `closed` are dropped, and nothing is told after `close()`. */
class Once {
  private done = false;
  constructor(private readonly events: TransportEvents) {}
  opened(): void {
    if (!this.done) this.events.opened();
  }
  message(message: Message): void {
    if (!this.done) this.events.message(message);
  }
  closed(reason: string): void {
    if (this.done) return;
    this.done = true;
    this.events.closed(reason);
  }
  silence(): void {
    this.done = true;
  }
}

export function overWebSocket(url: string, token: string | undefined): Connect {
  return (events) => new WebSocketTransport(url, token, events);
}

export function overTcp(host: string, port: number): Connect {
  return (events) => new TcpTransport(host, port, events);
}

export class WebSocketTransport implements Transport {
  private readonly socket: WebSocket;
  private readonly queue: string[] = [];
  private readonly events: Once;

  constructor(url: string, token: string | undefined, events: TransportEvents) {
    this.events = new Once(events);
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    this.socket = new WebSocket(url, { headers, maxPayload: MAX_MESSAGE, handshakeTimeout: 10_000 });
    this.socket.on('open', () => {
      for (const text of this.queue.splice(0)) this.socket.send(text);
      this.events.opened();
    });
    this.socket.on('message', (data, isBinary) => {
      if (isBinary) return this.fail('the bridge sent a binary frame; DAP over WebSocket is text');
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return this.fail('the bridge sent a frame that is not JSON');
      }
      if (typeof message !== 'object' || message === null) return this.fail('the bridge sent a non-object message');
      this.events.message(message as Message);
    });
    this.socket.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      this.fail(
        status === 401
          ? 'the bridge refused the token (401): set one with "Ray: Set Bridge Token"'
          : `the bridge refused the debug connection: ${status} ${response.statusMessage ?? ''}`.trim(),
      );
    });
    this.socket.on('error', (error) => this.fail(`cannot reach the bridge at ${url}: ${describe(error)}`));
    this.socket.on('close', (code, reason) =>
      this.fail(`the bridge closed the debug connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`),
    );
  }

  send(message: Message): void {
    const text = JSON.stringify(message);
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(text);
    else this.queue.push(text);
  }

  close(): void {
    this.events.silence();
    this.queue.length = 0;
    this.socket.removeAllListeners();
    this.socket.on('error', () => undefined);
    this.socket.terminate();
  }

  private fail(reason: string): void {
    this.events.closed(reason);
    this.close();
  }
}

export class TcpTransport implements Transport {
  private readonly socket: net.Socket;
  private readonly events: Once;
  private buffer: Buffer = Buffer.alloc(0);

  constructor(host: string, port: number, events: TransportEvents) {
    this.events = new Once(events);
    const where = `tcp://${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.socket = net.connect({ host, port });
    this.socket.on('connect', () => this.events.opened());
    this.socket.on('data', (data) => this.receive(data));
    this.socket.on('error', (error) => this.fail(`cannot reach the bridge at ${where}: ${describe(error)}`));
    this.socket.on('close', () => this.fail('the bridge closed the debug connection'));
  }

  send(message: Message): void {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    this.socket.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
  }

  close(): void {
    this.events.silence();
    this.socket.removeAllListeners();
    this.socket.on('error', () => undefined);
    this.socket.destroy();
  }

  private receive(data: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, data]) : data;
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) {
        if (this.buffer.length > 8192) this.fail('the bridge sent a header that never ends');
        return;
      }
      const length = /(?:^|\r\n)Content-Length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString('ascii'))?.[1];
      if (length === undefined) return this.fail('the bridge sent a message with no Content-Length');
      const size = Number(length);
      if (size > MAX_MESSAGE) return this.fail(`the bridge sent a message of ${size} bytes, over the limit`);
      if (this.buffer.length < end + 4 + size) return;
      const body = this.buffer.subarray(end + 4, end + 4 + size).toString('utf8');
      this.buffer = this.buffer.subarray(end + 4 + size);
      let message: unknown;
      try {
        message = JSON.parse(body);
      } catch {
        return this.fail('the bridge sent a message that is not JSON');
      }
      if (typeof message !== 'object' || message === null) return this.fail('the bridge sent a non-object message');
      this.events.message(message as Message);
      if (this.socket.destroyed) return;
    }
  }

  private fail(reason: string): void {
    this.events.closed(reason);
    this.close();
  }
}
