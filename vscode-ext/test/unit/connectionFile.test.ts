import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { findConnection, runtimeDir } from '../../src/connectionFile';

async function dirWith(files: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'raydap-ext-'));
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(dir, name), text);
  return dir;
}

const entry = (url: string, pid: number, token: string | null = 'secret-token'): string =>
  JSON.stringify({ url, dap_port: 7801, token, pid });

test('the live bridge at the configured URL gives its token', async () => {
  const dir = await dirWith({
    'bridge-1.json': entry('http://127.0.0.1:9999', process.pid, 'other'),
    [`bridge-${process.pid}.json`]: entry('http://127.0.0.1:7800', process.pid),
  });
  const found = await findConnection('http://127.0.0.1:7800/', dir);
  assert.deepEqual(found, { url: 'http://127.0.0.1:7800', dapPort: 7801, token: 'secret-token', pid: process.pid });
});

test('files of bridges that are gone, or that are not connection files, are ignored', async () => {
  const dir = await dirWith({
    'bridge-4194304.json': entry('http://127.0.0.1:7800', 4194304),
    'bridge-2.json': 'not json',
    'bridge-3.json': JSON.stringify({ url: 7800 }),
    'notes.json': entry('http://127.0.0.1:7800', process.pid),
  });
  assert.equal(await findConnection('http://127.0.0.1:7800', dir), undefined);
  assert.equal(await findConnection('http://127.0.0.1:7800', path.join(dir, 'missing')), undefined);
});

test('a bridge without a token is found without one', async () => {
  const dir = await dirWith({ 'bridge-9.json': entry('http://127.0.0.1:7800', process.pid, null) });
  assert.equal((await findConnection('http://127.0.0.1:7800', dir))?.token, undefined);
});

test('the runtime directory follows RAYDAP_RUNTIME_DIR, then XDG_RUNTIME_DIR', () => {
  assert.equal(runtimeDir({ RAYDAP_RUNTIME_DIR: '/r', XDG_RUNTIME_DIR: '/x' }), '/r');
  assert.equal(runtimeDir({ XDG_RUNTIME_DIR: '/run/user/1000' }), '/run/user/1000/raydap');
  assert.match(runtimeDir({}), /\.local\/share\/raydap\/runtime$/);
});
