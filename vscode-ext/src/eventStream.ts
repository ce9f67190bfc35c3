/**
 * Live records from the bridge's `/api/v1/events` WebSocket: a snapshot, then one change per
 * message, so the view never polls. The connection is re-opened with backoff while the bridge
 * is away; a refused token stops the retries until the token changes.
 */

import WebSocket from 'ws';

import { describe } from './bridgeApi';
import { applyEvent, parseEvent, type HangVerdict, type WorkerRecord } from './records';
import { endpoints } from './settings';

export type StreamState =
  | { status: 'connecting' }
  | { status: 'connected' }
  | { status: 'unreachable'; message: string }
  | { status: 'unauthorized'; message: string };

export interface StreamListener {
  (records: ReadonlyMap<string, WorkerRecord>, state: StreamState): void;
}

/** One events message may carry every record of a large cluster, but not more than this. */
const MAX_MESSAGE = 32 * 1024 * 1024;

export class EventStream {
  readonly records = new Map<string, WorkerRecord>();
  state: StreamState = { status: 'connecting' };
  private socket: WebSocket | undefined;
  private retry: NodeJS.Timeout | undefined;
  private delayMs: number;
  private stopped = false;

  constructor(
    private readonly bridgeUrl: string,
    private readonly token: string | undefined,
    private readonly listener: StreamListener,
    private readonly minDelayMs = 500,
    private readonly maxDelayMs = 10_000,
    private readonly onHang: (verdict: HangVerdict) => void = () => undefined,
    private readonly onCaptures: () => void = () => undefined,
  ) {
    this.delayMs = minDelayMs;
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.discard()?.terminate();
  }

  /** Stop listening to the current socket (late errors are swallowed) and forget it. */
  private discard(): WebSocket | undefined {
    const socket = this.socket;
    socket?.removeAllListeners();
    socket?.on('error', () => undefined);
    this.socket = undefined;
    return socket;
  }

  private open(): void {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const socket = new WebSocket(endpoints(this.bridgeUrl).events, {
      headers,
      maxPayload: MAX_MESSAGE,
      handshakeTimeout: 10_000,
    });
    this.socket = socket;
    let refused = false;
    socket.on('unexpected-response', (_request, response) => {
      const status = response.statusCode ?? 0;
      refused = status === 401 || status === 403;
      const message =
        status === 401
          ? 'the bridge refused the token (401): set one with "Ray: Set Bridge Token"'
          : `the bridge answered ${status} ${response.statusMessage ?? ''}`.trim();
      response.resume();
      socket.terminate();
      this.lost(refused ? { status: 'unauthorized', message } : { status: 'unreachable', message });
    });
    socket.on('open', () => {
      this.delayMs = this.minDelayMs;
    });
    socket.on('message', (data) => {
      try {
        const event = parseEvent(JSON.parse(data.toString()));
        if (event.kind === 'hang') {
          this.onHang(event.verdict);
          return;
        }
        if (event.kind === 'captures') {
          this.onCaptures();
          return;
        }
        applyEvent(this.records, event);
      } catch (error) {
        // A message we cannot read means our picture may be wrong: start again from a snapshot.
        socket.terminate();
        this.lost({ status: 'unreachable', message: `bad message from the bridge: ${describe(error)}` });
        return;
      }
      // Connected once the first snapshot is in: an empty view before it would be a lie.
      this.update({ status: 'connected' });
    });
    socket.on('error', (error) => {
      if (!refused) this.lost({ status: 'unreachable', message: `cannot reach ${this.bridgeUrl}: ${describe(error)}` });
    });
    socket.on('close', () => {
      if (!refused) this.lost({ status: 'unreachable', message: `the bridge at ${this.bridgeUrl} closed the connection` });
    });
  }

  /** Forget what we knew (it may be stale) and try again later, unless the token was refused. */
  private lost(state: StreamState): void {
    if (this.stopped || this.discard() === undefined) return;
    this.records.clear();
    this.update(state);
    if (state.status === 'unauthorized') return;
    this.retry = setTimeout(() => this.open(), this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
  }

  private update(state: StreamState): void {
    this.state = state;
    this.listener(this.records, state);
  }
}
