import assert from 'node:assert/strict';
import { test } from 'node:test';

import { localPath } from '../../src/paths';
import { parseRecord } from '../../src/records';
import { attachable, buildTree, pausedCount, pausedFor, workerNode, workerTitle } from '../../src/workerTree';
import { record } from './fixtures';

test('workers are grouped by job, jobs in id order, workers oldest first', () => {
  const tree = buildTree(
    [
      record({ id: 'late', job_id: '02000000', paused_since: 30 }),
      record({ id: 'other', job_id: '01000000', paused_since: 50 }),
      record({ id: 'early', job_id: '02000000', paused_since: 10 }),
      record({ id: 'orphan', job_id: null, paused_since: 5 }),
    ],
    100,
  );
  assert.deepEqual(
    tree.map((job) => [job.label, job.workers.map((w) => w.record.id)]),
    [
      ['Job 01000000', ['other']],
      ['Job 02000000', ['early', 'late']],
      ['Job not yet known', ['orphan']],
    ],
  );
  assert.equal(tree[1]?.description, '2 paused');
  assert.equal(tree[0]?.contextValue, 'job known');
  assert.equal(tree[2]?.contextValue, 'job', 'no job-wide actions without a job id');
});

test('a worker shows task, file:line, node, pid, paused time and attached clients', () => {
  const node = workerNode(record({ paused_since: 1_000, clients: 2 }), 1_125);
  assert.equal(node.label, 'train_step');
  assert.equal(node.description, 'train.py:12 · 10.0.0.7 · pid 4242 · 2 min 5 s · 2 clients');
  assert.match(node.tooltip, /\/home\/me\/job\/train.py:12 in train_step\(\)/);
  assert.match(node.tooltip, /job 02000000/);
  assert.equal(node.icon, 'debug-breakpoint');
  assert.equal(node.contextValue, 'worker breakpoint paused attachable');
});

test('actor methods, exceptions and legacy pdb stops are told apart', () => {
  const actor = workerNode(record({ task_name: 'Trainer.step', actor_id: 'ac7', actor_class: 'Trainer' }), 1_000);
  assert.equal(actor.label, 'Trainer.step');
  assert.match(actor.tooltip, /actor ac7/);

  const failed = workerNode(
    record({ kind: 'exception', exception: { type: 'ValueError', message: 'bad shape (3, 4)' } }),
    1_000,
  );
  assert.equal(failed.label, 'train_step (ValueError)');
  assert.match(failed.tooltip, /ValueError: bad shape \(3, 4\)/);
  assert.equal(failed.icon, 'error');

  const legacy = workerNode(record({ kind: 'legacy-pdb', state: 'connecting' }), 1_000);
  assert.equal(legacy.icon, 'terminal');
  assert.equal(attachable(legacy.record), false, 'legacy pdb speaks no DAP');
  assert.doesNotMatch(legacy.contextValue, /attachable/);
});

test('ranks are named by rank and role first, as the bridge names them', () => {
  const critic = workerNode(record({ task_name: 'WorkerDict.critic_compute_values', rank: 1, role: 'critic' }), 1_000);
  assert.equal(critic.label, 'rank 1 (critic) WorkerDict.critic_compute_values');
  assert.equal(workerNode(record({ rank: 3 }), 1_000).label, 'rank 3 train_step');
});

test('a worker whose location is not known yet, or that the bridge could not hold, says so', () => {
  const locating = workerNode(record({ location: null, state: 'connecting', task_name: null, pid: null }), 1_000);
  assert.equal(locating.label, 'worker a1b2c3d4');
  assert.equal(locating.description, 'locating… · 10.0.0.7 · 0 s');
  const failed = workerNode(record({ state: 'failed', error: 'connection refused' }), 1_000);
  assert.equal(failed.icon, 'warning');
  assert.match(failed.tooltip, /state failed: connection refused/);
  assert.equal(attachable(failed.record), false);
});

test('paused durations read naturally', () => {
  assert.equal(pausedFor(-3), '0 s');
  assert.equal(pausedFor(59.9), '59 s');
  assert.equal(pausedFor(61), '1 min 1 s');
  assert.equal(pausedFor(7_300), '2 h 1 min');
});

test('the status bar counts workers that wait, not ones already running', () => {
  assert.equal(pausedCount([record({ id: 'a' }), record({ id: 'b', state: 'running' }), record({ id: 'c', state: 'connecting' })]), 2);
});

test("working_dir packages map to the workspace folder; other paths stay", () => {
  const shipped = '/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_3f2a9c/train/loop.py';
  assert.equal(localPath(shipped, '/home/me/job/'), '/home/me/job/train/loop.py');
  assert.equal(localPath(shipped, undefined), shipped);
  assert.equal(localPath('/home/me/job/train.py', '/elsewhere'), '/home/me/job/train.py');
});

test('a live worker that runs is shown running, can be attached to and paused, not continued', () => {
  const running = record({ id: 'live1', state: 'running', live: true, location: null, paused_since: 10 });
  const node = workerNode(running, 500);
  assert.equal(node.description, 'running · 10.0.0.7 · pid 4242');
  assert.equal(node.icon, 'debug-start');
  assert.equal(node.contextValue, 'worker breakpoint running live attachable');
  assert.match(node.tooltip, /live: editor breakpoints and Pause reach it/);
  assert.ok(attachable(running));
  assert.ok(!attachable(record({ state: 'running' })), 'a worker resumed a moment ago has nothing to show');
  // The menus' when-clauses (package.json) tell the two apart by these flags.
  const pausable = /^worker \S+ running live/;
  const continuable = /^worker (?!\S+ running live)/;
  assert.ok(pausable.test(node.contextValue) && !continuable.test(node.contextValue));
  const paused = workerNode(record({ live: true }), 500).contextValue;
  assert.ok(continuable.test(paused) && !pausable.test(paused));

  const [job] = buildTree([running, record({ id: 'p' })], 500);
  assert.equal(job?.description, '1 paused · 1 running');
  assert.equal(pausedCount([running]), 0);
});

test('child processes are shown under the worker that started them, at any depth', () => {
  const worker = record({ id: 'w', task_name: 'Pool.run', live: true, state: 'running' });
  const child = record({ id: 'c', parent: 'w', task_name: 'SpawnProcess-1 child_loop', paused_since: 900 });
  const grandchild = record({ id: 'g', parent: 'c', task_name: 'DataLoader worker 0', live: true, state: 'running' });
  const orphan = record({ id: 'o', parent: 'gone', task_name: 'DataLoader worker 1' });
  const [job] = buildTree([grandchild, child, orphan, worker], 1_000);
  assert.deepEqual(job?.workers.map((w) => w.record.id), ['o', 'w']);
  const shown = job?.workers.find((w) => w.record.id === 'w');
  assert.deepEqual(shown?.children.map((c) => c.label), ['SpawnProcess-1 child_loop']);
  assert.deepEqual(shown?.children[0]?.children.map((c) => c.record.id), ['g']);
  assert.equal(job?.description, '2 paused · 2 running', 'children are counted as workers');
});

test('a live worker that lacks a hook raydap uses says so in its tooltip', () => {
  const node = workerNode(
    record({ live: true, unsupported: ['pydevd.PyDB.handle_breakpoint_condition: pydevd.PyDB.x is gone'] }),
    1_000,
  );
  assert.match(node.tooltip, /lacks what raydap uses.*handle_breakpoint_condition: pydevd\.PyDB\.x is gone/);
  assert.doesNotMatch(workerNode(record({ live: true }), 1_000).tooltip, /lacks/);
});

test('a rank of a device mesh is titled with its coordinates, as a rank set names them', () => {
  const axis = (dim: string, coord: number) => ({ dim, coord, size: 2, group: '1', spans: [[0, 2, 1]] });
  const raw = { ...record({ rank: 1, task_name: 'Rank.step' }), mesh: [
    { mesh: 0, axes: [axis('dp', 0), axis('tp', 1)] },
    { mesh: 1, axes: [axis('sp', 1)] },
  ] };
  assert.equal(workerTitle(parseRecord(raw)), 'rank 1 dp=0 tp=1 mesh1.sp=1 Rank.step');
  assert.throws(() => parseRecord({ ...raw, mesh: [{ mesh: 0, axes: [{ ...axis('dp', 0), spans: [[0, 2]] }] }] }), /spans/);
  assert.throws(() => parseRecord({ ...raw, mesh: 'dp=0' }), /mesh/);
});
