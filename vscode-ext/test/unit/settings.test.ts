import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ConfigError, DEFAULT_SETTINGS, endpoints, readSettings, resolveAttach, withToken, type Settings } from '../../src/settings';

const settings: Settings = { bridgeUrl: 'http://head:7800', transport: 'tcp', dapPort: 0 };

test('the bridge URL gives the HTTP, events and DAP addresses on one port', () => {
  assert.deepEqual(endpoints('http://127.0.0.1:7800/'), {
    http: 'http://127.0.0.1:7800',
    events: 'ws://127.0.0.1:7800/api/v1/events',
    dap: 'ws://127.0.0.1:7800/dap',
    host: '127.0.0.1',
    secure: false,
  });
  const behindIngress = endpoints('https://ray.example.com/raydap');
  assert.equal(behindIngress.events, 'wss://ray.example.com/raydap/api/v1/events');
  assert.equal(behindIngress.secure, true);
  assert.equal(endpoints('http://[::1]:7800').host, '::1');
});

test('bad bridge URLs are refused with what is wrong', () => {
  assert.throws(() => endpoints('ws://head:7800'), /must start with http/);
  assert.throws(() => endpoints('127.0.0.1:7800'), /not a URL such as http:\/\/127.0.0.1:7800/);
  assert.throws(() => endpoints('http://me:secret@head:7800'), /must not carry credentials/);
});

test('settings are read with defaults and checked', () => {
  assert.deepEqual(readSettings(() => undefined), DEFAULT_SETTINGS);
  const values: Record<string, unknown> = { bridgeUrl: 'https://head', transport: 'websocket', dapPort: 17801 };
  assert.deepEqual(readSettings((key) => values[key]), { bridgeUrl: 'https://head', transport: 'websocket', dapPort: 17801 });
  assert.throws(() => readSettings((key) => (key === 'transport' ? 'carrier-pigeon' : undefined)), ConfigError);
  assert.throws(() => readSettings((key) => (key === 'dapPort' ? 70000 : undefined)), /port number/);
});

test('an attach configuration gets the settings and the workspace as localRoot', () => {
  const resolved = resolveAttach({ type: 'ray', request: 'attach', name: 'one', breakpoint: 'a1b2' }, settings, '/home/me/job');
  assert.deepEqual(resolved, {
    type: 'ray',
    request: 'attach',
    name: 'one',
    breakpoint: 'a1b2',
    bridgeUrl: 'http://head:7800',
    transport: 'tcp',
    dapPort: 0,
    localRoot: '/home/me/job',
  });
});

test("a configuration's own bridge, transport and localRoot win over the defaults", () => {
  const resolved = resolveAttach(
    { type: 'ray', request: 'attach', name: 'x', bridgeUrl: 'http://other:9000', transport: 'websocket', localRoot: '/src', follow: { job: '03000000' } },
    settings,
    '/home/me/job',
  );
  assert.equal(resolved.bridgeUrl, 'http://other:9000');
  assert.equal(resolved.transport, 'websocket');
  assert.equal(resolved.localRoot, '/src');
});

test('a child session configuration from the bridge resolves like a user one', () => {
  const child = resolveAttach({ type: 'ray', request: 'attach', name: 'rank 3', breakpoint: 'ffee', localRoot: '/src', token: 't' }, settings, undefined);
  assert.equal(child.breakpoint, 'ffee');
  assert.equal(child.localRoot, '/src');
});

test('a capture is opened by its id, as the Captures view starts it', () => {
  const opened = resolveAttach({ type: 'ray', request: 'attach', name: 'Ray capture', capture: 'cap-0123456789ab' }, settings, '/w');
  assert.equal(opened.capture, 'cap-0123456789ab');
  assert.equal(opened.follow, undefined);
});

test('configuration mistakes are reported before connecting', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ request: 'launch' }, /use "request": "attach"/],
    [{ breakpoint: 'a', follow: true }, /not several/],
    [{ capture: 'cap-12', follow: true }, /not several/],
    [{ capture: 'a1b2' }, /"capture" must be a capture id/],
    [{ breakpoint: '' }, /worker id/],
    [{ follow: 'job 2' }, /"follow" must be true or a filter/],
    [{ follow: { jobs: '02' } }, /filters by job, task, actor, node/],
    [{ transport: 'udp' }, /"transport" must be "tcp" or "websocket"/],
    [{ bridgeUrl: 'ftp://head' }, /http/],
    [{ localRoot: 3 }, /"localRoot" must be a folder path/],
  ];
  for (const [config, message] of cases) {
    assert.throws(() => resolveAttach({ type: 'ray', name: 'x', ...config }, settings, '/w'), message, JSON.stringify(config));
  }
});

test('the token rides in the attach arguments only on the TCP transport', () => {
  const tcp = resolveAttach({ name: 'x' }, settings, undefined);
  assert.equal(withToken(tcp, 's3cret').token, 's3cret');
  assert.equal(withToken(tcp, undefined).token, undefined);
  const ws = resolveAttach({ name: 'x', transport: 'websocket' }, settings, undefined);
  assert.equal(withToken(ws, 's3cret').token, undefined, 'over WebSocket it goes in the Authorization header');
});
