import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EventStream, type StreamState } from '../../src/eventStream';
import type { HangVerdict, WorkerRecord } from '../../src/records';
import { eventually, record, startFakeBridge } from './fixtures';

function watch(url: string, token?: string) {
  const seen: { ids: string[]; state: StreamState }[] = [];
  const stream = new EventStream(url, token, (records: ReadonlyMap<string, WorkerRecord>, state) => {
    seen.push({ ids: [...records.keys()], state });
  }, 50, 200);
  stream.start();
  const last = () => seen[seen.length - 1];
  return { stream, seen, last };
}

test('the snapshot, then each change, reach the listener as they happen', async () => {
  const fake = await startFakeBridge({ token: 't', records: [record({ id: 'a' })] });
  const { stream, last } = watch(fake.url, 't');
  try {
    await eventually(() => last()?.ids.join() === 'a', 'the snapshot');
    assert.equal(last()?.state.status, 'connected');
    fake.events[0]?.send(JSON.stringify({ kind: 'added', record: record({ id: 'b' }) }));
    await eventually(() => last()?.ids.join() === 'a,b', 'the added record');
    fake.events[0]?.send(JSON.stringify({ kind: 'removed', record: record({ id: 'a' }) }));
    await eventually(() => last()?.ids.join() === 'b', 'the removed record');
  } finally {
    stream.stop();
    await fake.close();
  }
});

test('a refused token is reported and not retried', async () => {
  const fake = await startFakeBridge({ token: 'right' });
  const { stream, seen, last } = watch(fake.url, 'wrong');
  try {
    await eventually(() => last()?.state.status === 'unauthorized', 'the refusal');
    assert.match((last()?.state as { message: string }).message, /Set Bridge Token/);
    const count = seen.length;
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(seen.length, count, 'no retries with a refused token');
  } finally {
    stream.stop();
    await fake.close();
  }
});

test('while the bridge is away the view is emptied, and it fills again when the bridge is back', async () => {
  const fake = await startFakeBridge({ records: [record({ id: 'a' })] });
  const port = Number(new URL(fake.url).port);
  const { stream, last } = watch(fake.url);
  try {
    await eventually(() => last()?.ids.join() === 'a', 'the first snapshot');
    await fake.close();
    await eventually(() => last()?.state.status === 'unreachable', 'the outage');
    assert.deepEqual(last()?.ids, [], 'stale records are not shown');
    // A new bridge on the same port: the stream reconnects by itself.
    const again = await startFakeBridge({ port, records: [record({ id: 'z' })] });
    try {
      await eventually(() => last()?.ids.join() === 'z' && last()?.state.status === 'connected', 'the reconnect');
    } finally {
      await again.close();
    }
  } finally {
    stream.stop();
  }
});

test('a malformed message drops the connection and starts again from a snapshot', async () => {
  const fake = await startFakeBridge({ records: [record({ id: 'a' })] });
  const { stream, seen, last } = watch(fake.url);
  try {
    await eventually(() => last()?.ids.join() === 'a', 'the snapshot');
    fake.events[0]?.send('{"kind": "added", "record": {"id": 3}}');
    await eventually(() => seen.some((s) => s.state.status === 'unreachable' && /bad message/.test((s.state as { message: string }).message)), 'the complaint');
    await eventually(() => fake.events.length === 2 && last()?.ids.join() === 'a', 'a fresh snapshot');
  } finally {
    stream.stop();
    await fake.close();
  }
});


test('a hang verdict reaches its own listener and leaves the records as they were', async () => {
  const fake = await startFakeBridge({ token: 't', records: [record({ id: 'a' })] });
  const verdicts: HangVerdict[] = [];
  const seen: string[][] = [];
  const stream = new EventStream(fake.url, 't', (records) => seen.push([...records.keys()]), 50, 200, (v) => verdicts.push(v));
  stream.start();
  try {
    await eventually(() => seen[seen.length - 1]?.join() === 'a', 'the snapshot');
    const straggler = { worker: 'w3', rank: 3, role: null, function: 'fetch_batch', path: '/job/train.py', line: 12 };
    const verdict = { job: '02000000', state: 'suspected_hang', since: 1, groups: [], stragglers: [straggler], summary: 'no progress' };
    fake.events[0]?.send(JSON.stringify({ kind: 'hang', type: 'hang', verdict }));
    await eventually(() => verdicts.length === 1, 'the verdict');
    assert.equal(verdicts[0]?.stragglers[0]?.rank, 3);
    assert.equal(stream.state.status, 'connected'); // not taken for a bad message
    assert.deepEqual(seen[seen.length - 1], ['a']);
  } finally {
    stream.stop();
    await fake.close();
  }
});

test('a capture or a point turned off tells the captures listener, and no record changes', async () => {
  const fake = await startFakeBridge({ token: 't', records: [record({ id: 'a' })] });
  const seen: string[][] = [];
  let told = 0;
  const stream = new EventStream(fake.url, 't', (records) => seen.push([...records.keys()]), 50, 200, undefined, () => told++);
  stream.start();
  try {
    await eventually(() => seen[seen.length - 1]?.join() === 'a', 'the snapshot');
    fake.events[0]?.send(JSON.stringify({ kind: 'capture', capture: { id: 'cap-0123456789ab', kind: 'point' } }));
    fake.events[0]?.send(JSON.stringify({ kind: 'capture_point_disabled', point: 'cp-1', reason: 'over budget' }));
    await eventually(() => told === 2, 'both messages');
    assert.equal(stream.state.status, 'connected');
    assert.deepEqual(seen[seen.length - 1], ['a']);
  } finally {
    stream.stop();
    await fake.close();
  }
});
