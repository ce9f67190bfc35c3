import assert from 'node:assert/strict';
import { test } from 'node:test';

import { applyEvent, InvalidRecord, parseEvent, parseRecord, type WorkerRecord } from '../../src/records';
import { record } from './fixtures';

test('a record as the bridge sends it is read field by field; unknown fields are dropped', () => {
  const parsed = parseRecord({ ...record(), debugger_port: 5678, worker_id: 'w' });
  assert.deepEqual(parsed, record());
  assert.equal('debugger_port' in parsed, false);
});

test('records that would draw wrongly are refused with the field named', () => {
  assert.throws(() => parseRecord({ ...record(), kind: 'mystery' }), /record a1b2c3d4e5f6: kind/);
  assert.throws(() => parseRecord({ ...record(), paused_since: 'yesterday' }), /paused_since is not a number/);
  assert.throws(() => parseRecord({ ...record(), location: { path: '/x.py', line: '3', function: 'f' } }), /location.line/);
  assert.throws(() => parseRecord({ ...record(), task_name: 'x'.repeat(5000) }), /task_name/);
  assert.throws(() => parseRecord(['not', 'an', 'object']), InvalidRecord);
  assert.throws(() => parseRecord({ ...record(), id: 7 }), /record id/);
});

test('exceptions and missing locations are kept as the bridge says', () => {
  const raw = record({ kind: 'exception', location: null, exception: { type: 'ZeroDivisionError', message: 'division by zero' } });
  assert.deepEqual(parseRecord(raw), raw);
});

test('a long exception message is cut for display, not refused', () => {
  const long = 'tensor([' + '0.1, '.repeat(20_000) + '])';
  const parsed = parseRecord(record({ kind: 'exception', exception: { type: 'ValueError', message: long } }));
  assert.equal(parsed.exception?.message.length, 4097);
  assert.ok(parsed.exception?.message.endsWith('…'));
});

test('a snapshot replaces what was known, then changes apply in order', () => {
  const known = new Map<string, WorkerRecord>([['old', record({ id: 'old' })]]);
  applyEvent(known, parseEvent({ kind: 'snapshot', records: [record({ id: 'a' }), record({ id: 'b' })] }));
  assert.deepEqual([...known.keys()], ['a', 'b']);
  applyEvent(known, parseEvent({ kind: 'updated', record: record({ id: 'a', clients: 2 }) }));
  applyEvent(known, parseEvent({ kind: 'removed', record: record({ id: 'b' }) }));
  applyEvent(known, parseEvent({ kind: 'added', record: record({ id: 'c' }) }));
  assert.deepEqual([...known.keys()], ['a', 'c']);
  assert.equal(known.get('a')?.clients, 2);
});

test('events without their records are refused, and kinds of a newer bridge ignored', () => {
  assert.throws(() => parseEvent({ kind: 42 }), /an event without a kind/);
  assert.throws(() => parseEvent({ kind: 'snapshot' }), /snapshot without records/);
  assert.throws(() => parseEvent({ kind: 'added' }), /record is not an object/);
  const known = new Map<string, WorkerRecord>([['a', record({ id: 'a' })]]);
  const newer = parseEvent({ kind: 'recording', recording: { id: 'rec-1' } });
  assert.deepEqual(newer, { kind: 'other', name: 'recording' });
  applyEvent(known, newer);
  const capture = parseEvent({ kind: 'capture', capture: { id: 'cap-0123456789ab' } });
  assert.deepEqual(capture, { kind: 'captures' });
  applyEvent(known, capture);
  assert.deepEqual([...known.keys()], ['a']);
});

test('only a true live flag makes a record live (older bridges send none)', () => {
  assert.equal(parseRecord({ ...record(), live: true }).live, true);
  assert.equal(parseRecord({ ...record(), live: 'yes' }).live, false);
  const { live: _, ...older } = record();
  assert.equal(parseRecord(older).live, false);
});

test('a hang verdict carries its collective verdict, the ranks at fault first, and its report', () => {
  const collective = {
    group: '0', group_desc: 'default_pg', world: '127.0.0.1:29500', seq: 6, op: 'all_reduce', p2p: false,
    waiting: [0, 1, 3], missing: [2], mismatch: [], members: [],
    summary: 'all_reduce #6 (default_pg): rank 2 never joined (its last: #5)',
  };
  const straggler = { worker: 'w2', rank: 2, role: null, function: 'train', path: '/job/train.py', line: 44,
                      why: 'never joined all_reduce #6 (its last: #5)', coords: { dp: 1, tp: 0 } };
  const verdict = { job: '02000000', state: 'suspected_hang', since: 1, groups: [], stragglers: [straggler],
                    summary: 'no progress', collective, unread: [], report: '/state/raydap/hangs/02000000-x' };
  const event = parseEvent({ kind: 'hang', type: 'hang', verdict });
  assert.equal(event.kind, 'hang');
  if (event.kind !== 'hang') return;
  assert.deepEqual(event.verdict.collective?.missing, [2]);
  assert.equal(event.verdict.collective?.seq, 6);
  assert.equal(event.verdict.stragglers[0]?.why, 'never joined all_reduce #6 (its last: #5)');
  assert.deepEqual(event.verdict.stragglers[0]?.coords, { dp: 1, tp: 0 });
  assert.equal(event.verdict.report, '/state/raydap/hangs/02000000-x');
  // A verdict without them (an older bridge, or no recorder) still reads
  const plain = parseEvent({ kind: 'hang', type: 'hang', verdict: { ...verdict, collective: undefined, report: undefined } });
  assert.equal(plain.kind === 'hang' && plain.verdict.collective, null);
  assert.throws(() => parseEvent({ kind: 'hang', type: 'hang', verdict: { ...verdict, collective: { ...collective, missing: ['2'] } } }),
    /collective.missing/);
});
