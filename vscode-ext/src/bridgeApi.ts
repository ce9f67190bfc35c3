/**
 * The bridge's HTTP API: health, records, continue, stacks, pause and captures. Every failure becomes a `BridgeError`
 * whose `reason` tells the view what to show (unreachable, token refused, or the bridge's own
 * message), so no caller has to read HTTP status codes.
 */

import { InvalidCapture, parseCaptures, parsePoints, type CapturePoint, type CaptureSummary } from './captures';
import { parseRecord, type WorkerRecord } from './records';
import { parseStacks, type StacksAnswer } from './stackTree';
import { endpoints } from './settings';

export type FailureReason = 'unreachable' | 'unauthorized' | 'forbidden' | 'rejected';

/** A pause that is requested but not yet done: where the worker waits. */
export interface PendingPause {
  pending: true;
  reason: string;
}

export class BridgeError extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

export interface Health {
  status: string;
  held: number;
  dap_port: number;
  reason?: string;
}

export interface ContinueResult {
  continued: string[];
}

/** Answers larger than this are refused rather than parsed (1,000 records are ~600 KB). */
const MAX_ANSWER = 16 * 1024 * 1024;

export class BridgeApi {
  private readonly base: string;

  constructor(
    bridgeUrl: string,
    private readonly token: string | undefined,
    private readonly timeoutMs = 10_000,
  ) {
    this.base = endpoints(bridgeUrl).http;
  }

  async health(): Promise<Health> {
    const body = (await this.call('GET', '/healthz')) as Partial<Health>;
    if (typeof body.dap_port !== 'number' || typeof body.status !== 'string') {
      throw new BridgeError('rejected', `${this.base}/healthz answered without status and dap_port`);
    }
    return body as Health;
  }

  async records(): Promise<WorkerRecord[]> {
    const body = (await this.call('GET', '/api/v1/breakpoints')) as { breakpoints?: unknown };
    if (!Array.isArray(body.breakpoints)) {
      throw new BridgeError('rejected', 'the bridge answered without a list of breakpoints');
    }
    return body.breakpoints.map(parseRecord);
  }

  /**
   * The held workers a filter matches (a job, a rank set such as `tp=1 dp=0`): the bridge
   * parses the rank set, and refuses one that is not, saying the syntax.
   */
  async workers(filter: { job?: string; ranks?: string }): Promise<WorkerRecord[]> {
    const query = Object.entries(filter)
      .filter(([, value]) => value)
      .map(([key, value]) => `${key}=${encodeURIComponent(value as string)}`)
      .join('&');
    const body = (await this.call('GET', `/api/v1/workers${query ? `?${query}` : ''}`)) as { workers?: unknown };
    if (!Array.isArray(body.workers)) throw new BridgeError('rejected', 'the bridge answered without a list of workers');
    return body.workers.map(parseRecord);
  }

  /** Resume one worker; it stays known to the bridge until it pauses again or exits. */
  async continueWorker(id: string): Promise<void> {
    await this.call('POST', `/api/v1/breakpoints/${encodeURIComponent(id)}/continue`, {});
  }

  /** Resume every paused worker of a job at once (SPMD ranks must run together). */
  async continueJob(jobId: string): Promise<ContinueResult> {
    const body = (await this.call('POST', '/api/v1/continue', { filter: { job: jobId } })) as {
      continued?: unknown;
    };
    const continued = Array.isArray(body.continued) ? body.continued.filter((x) => typeof x === 'string') : [];
    return { continued };
  }

  /** Every worker's stack (of one job, or all), merged; running workers are read on their node. */
  async stacks(jobId?: string): Promise<StacksAnswer> {
    const query = jobId ? `?job=${encodeURIComponent(jobId)}` : '';
    const body = await this.call('GET', `/api/v1/stacks${query}`, undefined, 120_000);
    try {
      return parseStacks(body);
    } catch (error) {
      throw new BridgeError('rejected', `the bridge's stacks: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async capturePoints(): Promise<CapturePoint[]> {
    return this.checked('capture points', () => this.call('GET', '/api/v1/capture-points').then(parsePoints));
  }

  async captures(): Promise<CaptureSummary[]> {
    return this.checked('captures', () => this.call('GET', '/api/v1/captures').then(parseCaptures));
  }

  /** Clear a capture point set by HTTP, the CLI or MCP (a DAP session's is cleared in it). */
  async clearCapturePoint(id: string): Promise<void> {
    await this.call('DELETE', `/api/v1/capture-points/${encodeURIComponent(id)}`);
  }

  /** An answer that does not read as it should is the bridge's fault: said as such. */
  private async checked<T>(what: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (error instanceof InvalidCapture) throw new BridgeError('rejected', `the bridge's ${what}: ${error.message}`);
      throw error;
    }
  }

  /**
   * Pause a running worker where it is (no breakpoint needed); it is then listed as paused. A
   * worker blocked in native code (a collective) answers pending: it pauses when that call returns.
   */
  async pause(id: string): Promise<WorkerRecord | PendingPause> {
    const body = (await this.call('POST', `/api/v1/workers/${encodeURIComponent(id)}/pause`, {}, 120_000)) as {
      paused?: unknown;
      pending?: unknown;
      reason?: unknown;
    };
    if (body.pending === true) return { pending: true, reason: typeof body.reason === 'string' ? body.reason.slice(0, 1000) : '' };
    return parseRecord(body.paused);
  }

  private async call(method: string, path: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new BridgeError('unreachable', `cannot reach the bridge at ${this.base}: ${describe(error)}`);
    }
    const text = await response.text();
    if (text.length > MAX_ANSWER) {
      throw new BridgeError('rejected', `the bridge's answer to ${path} is larger than ${MAX_ANSWER} bytes`);
    }
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // An answer that is not JSON is reported below with its status.
    }
    if (!response.ok) {
      const message = errorMessage(parsed) ?? `${response.status} ${response.statusText}`;
      if (response.status === 401) throw new BridgeError('unauthorized', `the bridge refused the token: ${message}`);
      if (response.status === 403) throw new BridgeError('forbidden', message);
      throw new BridgeError('rejected', message);
    }
    if (parsed === null || typeof parsed !== 'object') {
      throw new BridgeError('rejected', `the bridge's answer to ${path} is not JSON`);
    }
    return parsed;
  }
}

function errorMessage(body: unknown): string | undefined {
  if (body && typeof body === 'object' && 'error' in body) {
    const error = (body as { error: unknown }).error;
    if (typeof error === 'string') return error;
  }
  return undefined;
}

/** The innermost cause of a fetch failure (ECONNREFUSED, a timeout), which says the most. */
export function describe(error: unknown): string {
  let current: unknown = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code;
    return typeof code === 'string' && !current.message.includes(code) ? `${code} ${current.message}` : current.message;
  }
  return String(current);
}
