import assert from 'node:assert/strict';
import { test } from 'node:test';

import { WebSocketDebugAdapter } from '../../src/webSocketAdapter';
import { endpoints } from '../../src/settings';
import { eventually, startFakeBridge } from './fixtures';

type Message = { type: string; seq: number; command?: string; event?: string; success?: boolean; message?: string; body?: { output?: string } };

function collect(adapter: WebSocketDebugAdapter): Message[] {
  const received: Message[] = [];
  adapter.onDidSendMessage((message) => received.push(message as Message));
  return received;
}

const initialize = { type: 'request', seq: 1, command: 'initialize', arguments: { adapterID: 'ray' } };

test('DAP messages go to /dap as text frames with the token, and replies come back', async () => {
  const fake = await startFakeBridge({ token: 't' });
  const adapter = new WebSocketDebugAdapter(endpoints(fake.url).dap, 't');
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
  const adapter = new WebSocketDebugAdapter(endpoints(fake.url).dap, 'wrong');
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
  const adapter = new WebSocketDebugAdapter(endpoints(fake.url).dap, undefined);
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
