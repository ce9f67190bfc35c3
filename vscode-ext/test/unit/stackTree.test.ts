import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildStackItems, parseStacks, pathTo, type FrameItem } from '../../src/stackTree';

/** The shape `GET /api/v1/stacks` answers: two ranks waiting, one computing. */
const ANSWER = {
  tree: {
    function: '', path: '', line: 0, workers: ['aaaaaaaaaaaa', 'bbbbbbbbbbbb', 'cccccccccccc'],
    children: [{
      function: 'main_loop', path: '/ray/worker.py', line: 1069, workers: ['aaaaaaaaaaaa', 'bbbbbbbbbbbb', 'cccccccccccc'],
      children: [
        { function: 'wait_for_peers', path: '/job/hung.py', line: 12, workers: ['aaaaaaaaaaaa', 'bbbbbbbbbbbb'], children: [] },
        { function: 'compute', path: '/job/hung.py', line: 19, workers: ['cccccccccccc'], children: [] },
      ],
    }],
  },
  workers: [],
  failed: [{ id: 'dddddddddddd', reason: 'py-spy took over 5 s' }],
};

test('frames show where they are and how many of all the workers are there', () => {
  const [outer, failed] = buildStackItems(parseStacks(ANSWER));
  assert.equal(outer?.type, 'frame');
  const top = outer as FrameItem;
  assert.equal(top.label, 'main_loop');
  assert.equal(top.description, 'worker.py:1069 · all 3');
  const [waiting, computing] = top.children as FrameItem[];
  assert.equal(waiting?.description, 'hung.py:12 · 2 of 3');
  assert.equal(computing?.description, 'hung.py:19 · 1 of 3');
  assert.match(waiting?.tooltip ?? '', /aaaaaaaaaaaa, bbbbbbbbbbbb/);
  assert.deepEqual(failed, { type: 'failed', label: 'not read: dddddddddddd', description: 'py-spy took over 5 s' });
});

test('each worker hangs under the frame where its stack ends, ready to be paused', () => {
  const [outer] = buildStackItems(parseStacks(ANSWER));
  const [waiting] = (outer as FrameItem).children as FrameItem[];
  assert.deepEqual(
    waiting?.children.map((r) => (r.type === 'rank' ? [r.id, r.contextValue] : r.type)),
    [['aaaaaaaaaaaa', 'rank'], ['bbbbbbbbbbbb', 'rank']],
  );
});

test('one thread of a worker is shown but cannot be paused on its own', () => {
  const threads = structuredClone(ANSWER);
  threads.tree.children[0]!.children[1]!.workers = ['cccccccccccc/loader'];
  const [outer] = buildStackItems(parseStacks(threads));
  const rank = ((outer as FrameItem).children[1] as FrameItem).children[0];
  assert.deepEqual(rank?.type === 'rank' && [rank.label, rank.contextValue], ['cccccccccccc/loader', 'rank thread']);
});

test('ranks are named by rank and role where the bridge knows them', () => {
  const named = {
    ...structuredClone(ANSWER),
    workers: [{ id: 'aaaaaaaaaaaa', rank: 0, role: null }, { id: 'cccccccccccc', rank: 3, role: 'critic' }, 'junk'],
  };
  const [outer] = buildStackItems(parseStacks(named));
  const [waiting, computing] = (outer as FrameItem).children as FrameItem[];
  assert.deepEqual(waiting?.children.map((r) => r.label), ['rank 0 · aaaaaaaaaaaa', 'bbbbbbbbbbbb']);
  assert.deepEqual(computing?.children.map((r) => r.label), ['rank 3 (critic) · cccccccccccc']);
});

test('a malformed answer is refused with what is wrong', () => {
  assert.throws(() => parseStacks({ tree: { function: 'f', path: 'p', line: '3', workers: [], children: [] } }), /line/);
  assert.throws(() => parseStacks({ tree: { function: 'f', path: 'p', line: 3, workers: [1], children: [] } }), /workers/);
  assert.throws(() => parseStacks(null), /not an object/);
});

test('a worker is found under the frame where its stack ends, to be revealed; one not there is not', () => {
  const items = buildStackItems(parseStacks(ANSWER));
  const chain = pathTo(items, 'cccccccccccc');
  assert.deepEqual(chain?.map((item) => (item.type === 'rank' ? item.id : item.label)), ['main_loop', 'compute', 'cccccccccccc']);
  assert.equal(pathTo(items, 'eeeeeeeeeeee'), null);
});
