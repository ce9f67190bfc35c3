import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test } from 'node:test';

import { BridgeApi, BridgeError } from '../../src/bridgeApi';
import { record, startFakeBridge } from './fixtures';

const bridges: { close(): Promise<void> }[] = [];
after(() => Promise.all(bridges.map((b) => b.close())));

async function bridge(options: Parameters<typeof startFakeBridge>[0] = {}) {
  const started = await startFakeBridge(options);
  bridges.push(started);
  return started;
}

test('records, health and continue, with the token as a Bearer header', async () => {
  const fake = await bridge({ token: 's3cret', records: [record()] });
  const api = new BridgeApi(fake.url, 's3cret');
  assert.deepEqual(await api.records(), [record()]);
  assert.equal((await api.health()).dap_port, 7801);
  await api.continueWorker('a1b2 c3');
  assert.deepEqual(await api.continueJob('02000000'), { continued: ['a', 'b'] });
  assert.deepEqual(fake.requests.slice(-2), [
    'POST /api/v1/breakpoints/a1b2%20c3/continue {}',
    'POST /api/v1/continue {"filter":{"job":"02000000"}}',
  ]);
});

test('a missing or wrong token is an "unauthorized" failure with the bridge\'s words', async () => {
  const fake = await bridge({ token: 's3cret' });
  for (const token of [undefined, 'wrong']) {
    await assert.rejects(new BridgeApi(fake.url, token).records(), (error: unknown) => {
      assert.ok(error instanceof BridgeError);
      assert.equal(error.reason, 'unauthorized');
      assert.match(error.message, /needs a token/);
      return true;
    });
  }
});

test('a view token asking to continue is "forbidden"; other refusals carry their message', async () => {
  const fake = await bridge({
    answer: (method, path) =>
      method === 'POST' && path.endsWith('/continue') && path.includes('breakpoints')
        ? { status: 403, body: '{"error": "the token \'ci\' may only look: use a debug token"}' }
        : path === '/api/v1/continue'
          ? { status: 400, body: 'not json at all' }
          : undefined,
  });
  const api = new BridgeApi(fake.url, undefined);
  await assert.rejects(api.continueWorker('x'), { reason: 'forbidden', message: /may only look/ });
  await assert.rejects(api.continueJob('1'), { reason: 'rejected', message: /400/ });
});

test('answers that are not what the bridge sends are refused, not half-used', async () => {
  const fake = await bridge({
    answer: (_method, path) =>
      path === '/api/v1/breakpoints'
        ? { status: 200, body: JSON.stringify({ breakpoints: [{ ...record(), kind: 'mystery' }] }) }
        : { status: 200, body: '{"status": "ok"}' },
  });
  const api = new BridgeApi(fake.url, undefined);
  await assert.rejects(api.records(), /kind is not one of/);
  await assert.rejects(api.health(), /without status and dap_port/);
});

test('no bridge at the address is "unreachable", with the cause', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as net.AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  await assert.rejects(new BridgeApi(`http://127.0.0.1:${port}`, undefined).records(), {
    reason: 'unreachable',
    message: /ECONNREFUSED/,
  });
});

test('a bridge that accepts but never answers times out as "unreachable"', async () => {
  const silent = net.createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as net.AddressInfo;
  try {
    await assert.rejects(new BridgeApi(`http://127.0.0.1:${port}`, undefined, 200).health(), { reason: 'unreachable' });
  } finally {
    silent.close();
  }
});
