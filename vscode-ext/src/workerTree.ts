/**
 * The "Ray" view's content as plain data: paused workers grouped by job, with the words and
 * icons a person reads. The VS Code tree provider only copies these into tree items.
 */

import type { MeshPlace, WorkerRecord } from './records';

export interface WorkerNode {
  type: 'worker';
  record: WorkerRecord;
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id. */
  icon: string;
  /** Matched by the `when` clauses of the view's menus (see package.json). */
  contextValue: string;
  /** Its child processes, shown under it. */
  children: WorkerNode[];
}

export interface JobNode {
  type: 'job';
  jobId: string | null;
  label: string;
  description: string;
  workers: WorkerNode[];
  contextValue: string;
}

export type TreeNode = JobNode | WorkerNode;

/** Task name, or `Actor.method` for an actor (the bridge already names methods that way). */
export function workerTitle(record: WorkerRecord): string {
  const rank = rankText(record);
  const name = record.task_name ?? (record.actor_class ? `${record.actor_class} actor` : `worker ${record.id.slice(0, 8)}`);
  return rank ? `${rank} ${name}` : name;
}

/**
 * `rank 3 (critic)`, `rank 3`, `critic`, or '' where neither is known, then its mesh coordinates
 * (`rank 1 dp=0 tp=1`, as a rank set names them), as the bridge says it.
 */
export function rankText(record: Pick<WorkerRecord, 'rank' | 'role'> & { mesh?: MeshPlace[] }): string {
  const who = record.rank === null ? (record.role ?? '') : record.role ? `rank ${record.rank} (${record.role})` : `rank ${record.rank}`;
  return [who, meshText(record.mesh ?? [])].filter((part) => part).join(' ');
}

/** `dp=0 tp=1` for mesh 0, `mesh1.dp=0` for the next: what a rank set says. */
export function meshText(places: MeshPlace[]): string {
  return places
    .flatMap((place) => place.axes.map((axis) => `${place.mesh ? `mesh${place.mesh}.` : ''}${axis.dim}=${axis.coord}`))
    .join(' ');
}

export function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** "4 s", "3 min 5 s", "2 h 10 min": how long a worker has waited for someone. */
export function pausedFor(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function kindText(record: WorkerRecord): string {
  if (record.kind === 'exception') {
    return record.exception ? `${record.exception.type}: ${record.exception.message}` : 'exception';
  }
  return record.kind === 'legacy-pdb' ? 'legacy pdb' : 'breakpoint';
}

function icon(record: WorkerRecord): string {
  if (record.state === 'failed') return 'warning';
  if (record.kind === 'exception') return 'error';
  if (record.kind === 'legacy-pdb') return 'terminal';
  if (record.state === 'running') return record.live ? 'debug-start' : 'debug-continue';
  return 'debug-breakpoint';
}

/** A live worker that runs: its breakpoints come from the editor, and it pauses on demand. */
export function runningLive(record: WorkerRecord): boolean {
  return record.live && record.state === 'running';
}

/** Legacy pdb workers and failed ones cannot take a DAP session; running ones have no stop,
 * except live ones, which a session attaches to while they run (then Pause or a breakpoint). */
export function attachable(record: WorkerRecord): boolean {
  if (record.kind === 'legacy-pdb') return false;
  return record.state === 'paused' || record.state === 'connecting' || runningLive(record);
}

export function workerNode(record: WorkerRecord, nowSeconds: number): WorkerNode {
  const running = runningLive(record);
  const where = running
    ? 'running'
    : record.location
      ? `${basename(record.location.path)}:${record.location.line}`
      : 'locating…';
  const clients = record.clients === 1 ? '1 client' : record.clients > 1 ? `${record.clients} clients` : '';
  const waited = running ? '' : pausedFor(nowSeconds - record.paused_since);
  const description = [where, record.node_ip, record.pid === null ? '' : `pid ${record.pid}`, waited, clients]
    .filter(Boolean)
    .join(' · ');
  const lines = [
    `${workerTitle(record)} — ${kindText(record)}`,
    record.location ? `${record.location.path}:${record.location.line} in ${record.location.function}()` : '',
    `node ${record.node_ip}${record.node_id ? ` (${record.node_id.slice(0, 12)})` : ''}, pid ${record.pid ?? '?'}`,
    record.actor_id ? `actor ${record.actor_id}` : '',
    `job ${record.job_id ?? 'unknown'} · ${running ? 'running' : `paused ${waited}`} · ${record.clients} client(s) attached`,
    `state ${record.state}${record.live ? ' (live: editor breakpoints and Pause reach it)' : ''}${record.error ? `: ${record.error}` : ''}`,
    `id ${record.id}`,
    record.unsupported.length > 0
      ? `this worker lacks what raydap uses, so some debugging works less here (raydap doctor): ${record.unsupported.join('; ')}`
      : '',
  ];
  const flags = [record.kind, record.state, record.live ? 'live' : '', attachable(record) ? 'attachable' : ''].filter(Boolean);
  return {
    type: 'worker',
    record,
    label: record.kind === 'exception' && record.exception ? `${workerTitle(record)} (${record.exception.type})` : workerTitle(record),
    description,
    tooltip: lines.filter(Boolean).join('\n'),
    icon: icon(record),
    contextValue: `worker ${flags.join(' ')}`,
    children: [],
  };
}

/** Workers with their child processes under them, at any depth (a child whose worker is not
 * listed stands on its own). */
function nest(nodes: WorkerNode[]): WorkerNode[] {
  const byId = new Map(nodes.map((node) => [node.record.id, node]));
  const top: WorkerNode[] = [];
  for (const node of nodes) {
    const parent = node.record.parent === null ? undefined : byId.get(node.record.parent);
    if (parent === undefined) top.push(node);
    else parent.children.push(node);
  }
  return top;
}

/** Jobs in id order (Ray's job ids grow), workers by when they paused, oldest first, each
 * with its child processes under it. */
export function buildTree(records: Iterable<WorkerRecord>, nowSeconds: number): JobNode[] {
  const jobs = new Map<string | null, WorkerRecord[]>();
  for (const record of records) {
    const list = jobs.get(record.job_id) ?? [];
    list.push(record);
    jobs.set(record.job_id, list);
  }
  const ids = [...jobs.keys()].sort((a, b) =>
    a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1,
  );
  return ids.map((jobId) => {
    const records = (jobs.get(jobId) ?? []).sort(
      (a, b) => a.paused_since - b.paused_since || (a.id < b.id ? -1 : 1),
    );
    const workers = nest(records.map((record) => workerNode(record, nowSeconds)));
    const paused = pausedCount(records);
    const running = records.filter(runningLive).length;
    return {
      type: 'job',
      jobId,
      label: jobId ? `Job ${jobId}` : 'Job not yet known',
      description: running ? `${paused} paused · ${running} running` : `${paused} paused`,
      workers,
      contextValue: jobId ? 'job known' : 'job',
    };
  });
}

/** How many workers wait for someone: what the status bar shows. */
export function pausedCount(records: Iterable<WorkerRecord>): number {
  let count = 0;
  for (const record of records) if (record.state !== 'running') count += 1;
  return count;
}
