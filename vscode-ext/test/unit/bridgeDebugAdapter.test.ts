import assert from 'node:assert/strict';
import { test } from 'node:test';

import * as net from 'node:net';

import { BridgeDebugAdapter, REPLACED_EVENT } from '../../src/bridgeDebugAdapter';
import { overTcp, overWebSocket } from '../../src/dapTransport';
import { endpoints } from '../../src/settings';
import { eventually, startFakeBridge } from './fixtures';

type Message = { type: string; seq: number; command?: string; event?: string; success?: boolean; message?: string; body?: { output?: string } };

function collect(adapter: BridgeDebugAdapter): Message[] {
  const received: Message[] = [];
  adapter.onDidSendMessage((message) => received.push(message as Message));
  return received;
}

const initialize = { type: 'request', seq: 1, command: 'initialize', arguments: { adapterID: 'ray' } };

test('DAP messages go to /dap as text frames with the token, and replies come back', async () => {
  const fake = await startFakeBridge({ token: 't' });
  const adapter = new BridgeDebugAdapter(overWebSocket(endpoints(fake.url).dap, 't'));
  const received = collect(adapter);
  try {
    adapter.handleMessage(initialize); // sent before the socket is open: queued, not lost
    await eventually(() => fake.dapMessages.length === 1, 'the request at the bridge');
    assert.deepEqual(fake.dapMessages[0], initialize);
    fake.dapSockets[0]?.send(JSON.stringify({ type: 'response', seq: 1, request_seq: 1, command: 'initialize', success: true }));
    await eventually(() => received.length === 1, 'the response in the editor');
    assert.equal(received[0]?.command, 'initialize');
  } finally {
    adapter.dispose();
    await fake.close();
  }
});

test('a refused token ends the session with the reason, and later requests are answered', async () => {
  const fake = await startFakeBridge({ token: 'right' });
  const adapter = new BridgeDebugAdapter(overWebSocket(endpoints(fake.url).dap, 'wrong'));
  const received = collect(adapter);
  try {
    await eventually(() => received.some((m) => m.event === 'terminated'), 'terminated');
    assert.match(received[0]?.body?.output ?? '', /refused the token \(401\)/);
    adapter.handleMessage({ type: 'request', seq: 2, command: 'threads' });
    adapter.handleMessage({ type: 'request', seq: 3, command: 'disconnect' });
    const replies = received.filter((m) => m.type === 'response');
    assert.deepEqual(replies.map((m) => [m.command, m.success]), [['threads', false], ['disconnect', true]]);
    assert.match(replies[0]?.message ?? '', /refused the token/);
  } finally {
    adapter.dispose();
    await fake.close();
  }
});

test('the bridge going away mid-session ends the session once, saying so', async () => {
  const fake = await startFakeBridge();
  const adapter = new BridgeDebugAdapter(overWebSocket(endpoints(fake.url).dap, undefined));
  const received = collect(adapter);
  try {
    adapter.handleMessage(initialize);
    await eventually(() => fake.dapSockets.length === 1, 'the connection');
    fake.dapSockets[0]?.send('this is not json');
    await eventually(() => received.some((m) => m.event === 'terminated'), 'terminated');
    assert.equal(received.filter((m) => m.event === 'terminated').length, 1);
    assert.match(received[0]?.body?.output ?? '', /not JSON/);
  } finally {
    adapter.dispose();
    await fake.close();
  }
});

type Sent = { type: string; seq: number; command?: string; arguments?: Record<string, unknown> };

function answer(socket: { send(text: string): void } | undefined, request: Sent | undefined, ...then: object[]): void {
  socket?.send(JSON.stringify({ type: 'response', seq: 1, request_seq: request?.seq, command: request?.command, success: true }));
  for (const message of then) socket?.send(JSON.stringify({ seq: 1, ...message }));
}

test('a replaced bridge is left for the new one: held requests go on, unanswered ones are told', async () => {
  const fake = await startFakeBridge();
  const adapter = new BridgeDebugAdapter(overWebSocket(endpoints(fake.url).dap, undefined));
  const received = collect(adapter);
  const sent = fake.dapMessages as Sent[];
  const resume = { version: 1, ids: { threads: [['w1', 1, 1]] } };
  try {
    adapter.handleMessage(initialize);
    adapter.handleMessage({ type: 'request', seq: 2, command: 'attach', arguments: { follow: true } });
    adapter.handleMessage({ type: 'request', seq: 3, command: 'threads' });
    await eventually(() => sent.length === 3, 'three requests at the old bridge');
    const old = fake.dapSockets[0];
    old?.send(JSON.stringify({ type: 'event', seq: 9, event: REPLACED_EVENT, body: { pid: 7, message: 'replaced', resume } }));
    old?.send(JSON.stringify({ type: 'event', seq: 10, event: 'thread', body: { reason: 'exited', threadId: 1 } }));
    await eventually(() => received.some((m) => m.body?.output === 'raydap: the bridge was replaced by pid 7; resuming this session there\n'), 'the editor told');
    adapter.handleMessage({ type: 'request', seq: 4, command: 'stackTrace', arguments: { threadId: 1 } });

    await eventually(() => sent.length === 4, 'initialize at the new bridge');
    const again = fake.dapSockets[1];
    assert.deepEqual(sent[3]?.arguments, initialize.arguments);
    answer(again, sent[3]);
    await eventually(() => sent.length === 5, 'attach at the new bridge');
    assert.deepEqual(sent[4]?.arguments, { follow: true, resume });
    answer(again, sent[4], { type: 'event', event: 'initialized' });
    await eventually(() => sent.length === 6, 'configurationDone at the new bridge');
    answer(again, sent[5], { type: 'event', event: 'stopped', body: { threadId: 1 } });
    await eventually(() => sent.length === 7, 'the held request at the new bridge');
    assert.deepEqual(sent[6], { type: 'request', seq: 4, command: 'stackTrace', arguments: { threadId: 1 } });

    const threads = received.find((m) => m.type === 'response' && m.command === 'threads');
    assert.equal(threads?.success, false);
    assert.match(threads?.message ?? '', /replaced while this was asked; ask again/);
    assert.equal(received.filter((m) => m.event === 'initialized').length, 0); // the bridge's first one was never sent
    assert.deepEqual(received.filter((m) => m.type === 'event').map((m) => m.event), ['output', 'stopped', 'output']);
    assert.match(received.at(-1)?.body?.output ?? '', /reconnected/);
  } finally {
    adapter.dispose();
    await fake.close();
  }
});

test('over TCP, messages are framed as DAP, split or joined as the bytes come', async () => {
  const chunks: Buffer[] = [];
  let peer: net.Socket | undefined;
  const server = net.createServer((socket) => {
    peer = socket;
    socket.on('data', (data) => chunks.push(data));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const port = (server.address() as net.AddressInfo).port;
  const adapter = new BridgeDebugAdapter(overTcp('127.0.0.1', port));
  const received = collect(adapter);
  try {
    adapter.handleMessage(initialize);
    await eventually(() => Buffer.concat(chunks).toString().includes('"initialize"'), 'the request at the bridge');
    const text = Buffer.concat(chunks).toString();
    assert.equal(text, `Content-Length: ${Buffer.byteLength(JSON.stringify(initialize))}\r\n\r\n${JSON.stringify(initialize)}`);
    const frame = (message: object) => {
      const body = JSON.stringify(message);
      return `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const both = frame({ type: 'response', seq: 1, request_seq: 1, command: 'initialize', success: true }) + frame({ type: 'event', seq: 2, event: 'output', body: { output: 'é\n' } });
    peer?.write(both.slice(0, 30));
    await new Promise((wake) => setTimeout(wake, 20)); // a pause, so the two halves likely arrive apart
    peer?.write(both.slice(30));
    await eventually(() => received.length === 2, 'both messages in the editor');
    assert.deepEqual(received.map((m) => m.command ?? m.event), ['initialize', 'output']);
    assert.equal(received[1]?.body?.output, 'é\n');
    peer?.destroy();
    await eventually(() => received.some((m) => m.event === 'terminated'), 'terminated');
  } finally {
    adapter.dispose();
    server.close();
  }
});
