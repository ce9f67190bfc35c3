/**
 * Test fixtures: records shaped like the bridge's, and a small HTTP + WebSocket server that
 * answers the way `raydap serve` does (status codes, Bearer check, events, /dap). The unit
 * tests use it to exercise the client code over real sockets; the end-to-end test in
 * tests/e2e/test_vscode_extension.py runs the extension against the real bridge.
 */

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

import type { WorkerRecord } from '../../src/records';

export function record(fields: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id: 'a1b2c3d4e5f6',
    kind: 'breakpoint',
    state: 'paused',
    job_id: '02000000',
    task_name: 'train_step',
    actor_id: null,
    actor_class: null,
    node_id: 'f'.repeat(56),
    node_ip: '10.0.0.7',
    pid: 4242,
    paused_since: 1_000,
    location: { path: '/home/me/job/train.py', line: 12, function: 'train_step' },
    exception: null,
    clients: 0,
    error: null,
    live: false,
    rank: null,
    role: null,
    mesh: [],
    parent: null,
    unsupported: [],
    ...fields,
  };
}

export interface FakeBridge {
  url: string;
  /** Requests seen, as "METHOD /path body". */
  requests: string[];
  /** Open events sockets; tests push changes through them. */
  events: WebSocket[];
  /** Messages received on /dap sockets. */
  dapMessages: unknown[];
  dapSockets: WebSocket[];
  close(): Promise<void>;
}

export interface FakeBridgeOptions {
  token?: string;
  port?: number;
  records?: WorkerRecord[];
  /** Answer for one HTTP request; undefined falls through to the defaults. */
  answer?: (method: string, path: string) => { status: number; body: string } | undefined;
}

export async function startFakeBridge(options: FakeBridgeOptions = {}): Promise<FakeBridge> {
  const requests: string[] = [];
  const events: WebSocket[] = [];
  const dapMessages: unknown[] = [];
  const dapSockets: WebSocket[] = [];
  const authorized = (header: string | undefined): boolean =>
    options.token === undefined || header === `Bearer ${options.token}`;

  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const method = request.method ?? 'GET';
      const path = request.url ?? '/';
      requests.push(`${method} ${path}${body ? ` ${body}` : ''}`);
      const send = (status: number, text: string): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(text);
      };
      const custom = options.answer?.(method, path);
      if (custom) return send(custom.status, custom.body);
      if (path !== '/healthz' && !authorized(request.headers.authorization)) {
        return send(401, JSON.stringify({ error: "this bridge needs a token: send 'Authorization: Bearer <secret>'" }));
      }
      if (path === '/healthz') return send(200, JSON.stringify({ status: 'ok', held: 1, dap_port: 7801 }));
      if (path === '/api/v1/breakpoints') return send(200, JSON.stringify({ breakpoints: options.records ?? [] }));
      if (method === 'POST' && path === '/api/v1/continue') return send(200, JSON.stringify({ continued: ['a', 'b'] }));
      const one = /^\/api\/v1\/breakpoints\/([^/]+)\/continue$/.exec(path);
      if (method === 'POST' && one) return send(200, JSON.stringify({ continued: [decodeURIComponent(one[1] ?? '')] }));
      return send(404, JSON.stringify({ error: `no such path ${path}` }));
    });
  });
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    if (!authorized(request.headers.authorization)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => {
      if (request.url === '/api/v1/events') {
        events.push(ws);
        ws.send(JSON.stringify({ kind: 'snapshot', records: options.records ?? [] }));
      } else if (request.url === '/dap') {
        dapSockets.push(ws);
        ws.on('message', (data) => dapMessages.push(JSON.parse(data.toString())));
      } else {
        ws.close(1008, 'no such socket');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    events,
    dapMessages,
    dapSockets,
    close: async () => {
      for (const ws of sockets.clients) ws.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Wait until `check` holds (polling a few ms apart), or fail saying what was awaited. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
