import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildCaptureItems, parseCapture, parseCaptures, parsePoints, type PointItem } from '../../src/captures';

/** As `GET /api/v1/capture-points` answers: one point of a DAP session, one set over HTTP. */
const POINTS = {
  points: [
    { id: 'cp-aaaaaaaaaa', path: '/job/train.py', line: 38, owner: 'a DAP session', condition: null, rank: null, job: null,
      interval: 1, most: 100, budget_ms: 50, until: 0, expired: false, captures: 2, disabled: null },
    { id: 'cp-bbbbbbbbbb', path: '/job/train.py', line: 40, owner: 'ci (HTTP)', condition: 'step > 3', rank: 2, job: '02000000',
      interval: 1, most: 100, budget_ms: 50, until: 0, expired: false, captures: 0, disabled: 'a hit cost 80 ms, over the 50 ms budget' },
  ],
};

function capture(id: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id, kind: 'point', job: '02000000', worker: 'w1', rank: 0, node: '10.0.0.3', pid: 81, time: 1_700_000_000,
    path: '/job/train.py', line: 38, function: 'Rank.train', point: 'cp-aaaaaaaaaa', exception: null, truncated: false, hit: 7,
    ...fields,
  };
}

test('points list their captures newest first, with what limits them and why one is off', () => {
  const captures = parseCaptures({ captures: [
    capture('cap-000000000001', { rank: 0, time: 1_700_000_000 }),
    capture('cap-000000000002', { rank: 1, time: 1_700_000_005, truncated: true }),
    capture('cap-000000000003', { kind: 'exception', point: null, hit: null, exception: 'ValueError: bad batch', line: 52 }),
    capture('cap-000000000004', { point: 'cp-cleared0000' }),
  ] });
  const [first, second, failed, cleared] = buildCaptureItems(parsePoints(POINTS), captures);
  const dap = first as PointItem;
  assert.equal(dap.label, 'train.py:38');
  assert.equal(dap.description, '2 captured');
  assert.deepEqual(dap.children.map((c) => [c.capture.id, c.label, c.description]), [
    ['cap-000000000002', 'rank 1 · 22:13:25', 'hit 7 · cut short'],
    ['cap-000000000001', 'rank 0 · 22:13:20', 'hit 7'],
  ]);
  assert.equal((second as PointItem).description, 'off: a hit cost 80 ms, over the 50 ms budget · job 02000000, rank 2, if step > 3');
  assert.equal(failed?.label, 'Failed tasks');
  assert.equal(failed?.type === 'group' && failed.children[0]?.description, 'train.py:52 · ValueError: bad batch');
  assert.equal(cleared?.label, 'Cleared points');
});

test('what the bridge sends is checked before it is shown', () => {
  assert.throws(() => parsePoints({ points: [{ id: 'cp-1' }] }), /"path" is not a string/);
  assert.throws(() => parsePoints({}), /no "points" list/);
  assert.throws(() => parseCapture(capture('cap-1', { kind: 'snapshot' })), /a capture of kind snapshot/);
  assert.throws(() => parseCapture(capture('cap-1', { time: -1 })), /"time" is not a count/);
  assert.equal(parseCapture(capture('cap-1', { function: 'x'.repeat(5000) })).function.length, 2000);
});
