/**
 * The "Ray Stacks" view's content as plain data: the bridge's merged stacks of a job (or of
 * every worker), one tree with a count on each frame, largest groups first, and each group's
 * workers under the frame where its path ends, to pause or attach to.
 */

import { meshPlaces, type MeshPlace } from './records';
import { basename, rankText } from './workerTree';

export interface StackNode {
  function: string;
  path: string;
  line: number;
  workers: string[];
  children: StackNode[];
}

export interface StacksAnswer {
  tree: StackNode;
  failed: { id: string; reason: string }[];
  /** `rank 3 (critic)` by worker id, where the bridge knows a worker's rank or role. */
  ranks: Map<string, string>;
}

export interface FrameItem {
  type: 'frame';
  label: string;
  description: string;
  tooltip: string;
  path: string;
  line: number;
  children: StackItem[];
}

export interface RankItem {
  type: 'rank';
  /** The worker id (``ID/thread`` for one thread of a worker). */
  id: string;
  label: string;
  description: string;
  /** Matched by the view's menus: only whole running workers can be paused. */
  contextValue: string;
}

export interface FailedItem {
  type: 'failed';
  label: string;
  description: string;
}

export type StackItem = FrameItem | RankItem | FailedItem;

/** A tree that size is refused rather than drawn (a thousand ranks x 200 frames fit). */
const MAX_NODES = 500_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The answer of `GET /api/v1/stacks`, checked field by field. */
export function parseStacks(body: unknown): StacksAnswer {
  let count = 0;
  const node = (value: unknown): StackNode => {
    if (++count > MAX_NODES) throw new Error(`the stacks tree has more than ${MAX_NODES} frames`);
    if (!isObject(value)) throw new Error('a stack frame is not an object');
    const { function: fn, path, line, workers, children } = value;
    if (typeof fn !== 'string' || typeof path !== 'string' || typeof line !== 'number') {
      throw new Error('a stack frame lacks function, path or line');
    }
    if (!Array.isArray(workers) || !workers.every((w) => typeof w === 'string')) {
      throw new Error('a stack frame lacks its list of workers');
    }
    if (!Array.isArray(children)) throw new Error('a stack frame lacks its children');
    return { function: fn, path, line, workers: workers as string[], children: children.map(node) };
  };
  if (!isObject(body)) throw new Error('the stacks answer is not an object');
  const failed = Array.isArray(body.failed)
    ? body.failed.filter(isObject).map((f) => ({ id: String(f.id), reason: String(f.reason) }))
    : [];
  const ranks = new Map<string, string>();
  for (const worker of Array.isArray(body.workers) ? body.workers.filter(isObject) : []) {
    const rank = typeof worker.rank === 'number' && Number.isInteger(worker.rank) ? worker.rank : null;
    const role = typeof worker.role === 'string' ? worker.role.slice(0, 100) : null;
    let mesh: MeshPlace[] = [];
    try {
      mesh = meshPlaces(worker.mesh, 'mesh');
    } catch {
      // coordinates this extension cannot read: the rank alone is named
    }
    const text = rankText({ rank, role, mesh });
    if (typeof worker.id === 'string' && text) ranks.set(worker.id, text);
  }
  return { tree: node(body.tree), failed, ranks };
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** A worker under its frame: `rank 3 (critic) · 1a2b3c4d5e6f`, or its id where no rank is known. */
function rankLabel(id: string, ranks: Map<string, string>): string {
  const short = id.slice(0, 12) + id.slice(12).replace(/^[^/]*/, '');
  const rank = ranks.get(id.split('/')[0] ?? id);
  return rank ? `${rank} · ${short}` : short;
}

/** The view's top level: the outermost frames, then what could not be read. */
export function buildStackItems(answer: StacksAnswer): StackItem[] {
  const total = answer.tree.workers.length;
  const frame = (node: StackNode): FrameItem => {
    const ending = new Set(node.workers);
    for (const child of node.children) for (const w of child.workers) ending.delete(w);
    const ranks: RankItem[] = [...ending].map((id) => ({
      type: 'rank',
      id,
      label: rankLabel(id, answer.ranks),
      description: 'stack ends here',
      contextValue: id.includes('/') ? 'rank thread' : 'rank',
    }));
    return {
      type: 'frame',
      label: node.function,
      description: `${basename(node.path)}:${node.line} · ${node.workers.length === total ? `all ${total}` : `${node.workers.length} of ${total}`}`,
      tooltip: `${node.path}:${node.line}\n${plural(node.workers.length, 'worker')}: ${node.workers.join(', ')}`,
      path: node.path,
      line: node.line,
      children: [...node.children.map(frame), ...ranks],
    };
  };
  const failed: FailedItem[] = answer.failed.map((f) => ({ type: 'failed', label: `not read: ${f.id}`, description: f.reason }));
  return [...answer.tree.children.map(frame), ...failed];
}

/** The items from the top of the view down to a worker's item, to reveal it; null when the
 * worker is not in the stacks (it runs no task: a rank that finished). */
export function pathTo(items: StackItem[], workerId: string): StackItem[] | null {
  for (const item of items) {
    if (item.type === 'rank' && item.id.split('/')[0] === workerId) return [item];
    if (item.type === 'frame') {
      const below = pathTo(item.children, workerId);
      if (below) return [item, ...below];
    }
  }
  return null;
}
