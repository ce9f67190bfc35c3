/**
 * The bridge's records of held workers (paused, or running live), as the events
 * WebSocket send them. They come from outside the editor, so they are checked field by field
 * before anything shows them; a malformed one is an error, never a half-drawn tree item.
 */

export type Kind = 'breakpoint' | 'exception' | 'legacy-pdb';
export type RecordState = 'connecting' | 'paused' | 'running' | 'failed';

export interface Location {
  path: string;
  line: number;
  function: string;
}

export interface WorkerRecord {
  id: string;
  kind: Kind;
  state: RecordState;
  job_id: string | null;
  task_name: string | null;
  actor_id: string | null;
  actor_class: string | null;
  node_id: string | null;
  node_ip: string;
  pid: number | null;
  paused_since: number;
  location: Location | null;
  exception: { type: string; message: string } | null;
  clients: number;
  error: string | null;
  /** A `raydap.live` worker: held while it runs (state `running`), paused on demand. */
  live: boolean;
  /** Its rank in the job (torch.distributed, Ray Train, verl) and role (verl), where known. */
  rank: number | null;
  role: string | null;
  /** Where it sits in each device mesh its job built (mesh 0 first): empty without a mesh. */
  mesh: MeshPlace[];
  /** A child process of a worker (a DataLoader worker, a multiprocessing child): that worker's id. */
  parent: string | null;
  /** The private debugpy and Ray hooks raydap uses that this live worker lacks (`name: why`). */
  unsupported: string[];
}

/** A rank's coordinate along one mesh dimension, and its peers along it (runs of global ranks). */
export interface MeshAxis {
  dim: string;
  coord: number;
  size: number;
  group: string;
  spans: [number, number, number][];
}

export interface MeshPlace {
  mesh: number;
  axes: MeshAxis[];
}

/** Where a hung job's ranks stopped agreeing, from their Flight Recorders. */
export interface CollectiveVerdict {
  group: string;
  seq: number;
  op: string;
  waiting: number[];
  missing: number[];
  mismatch: { rank: number; op: string }[];
  summary: string;
}

/** A hung job's rank: the ranks at fault come first, with why. */
export interface Straggler {
  worker: string;
  rank: number | null;
  role: string | null;
  /** Its device-mesh coordinates, as rank sets name them (`{ dp: 1, tp: 1 }`). */
  coords: Record<string, number>;
  function: string;
  path: string;
  line: number;
  why: string | null;
}

/** A watched job's hang verdict, as the events WebSocket announces a new one. */
export interface HangVerdict {
  job: string;
  state: 'progressing' | 'suspected_hang';
  summary: string;
  stragglers: Straggler[];
  collective: CollectiveVerdict | null;
  /** Where the bridge wrote its report (on the bridge's machine). */
  report: string | null;
}

/** One message of `/api/v1/events`: every record first, then one change at a time. */
export type BridgeEvent =
  | { kind: 'snapshot'; records: WorkerRecord[] }
  | { kind: 'added' | 'updated' | 'removed'; record: WorkerRecord }
  | { kind: 'hang'; verdict: HangVerdict }
  /** A capture came, or a capture point turned itself off: the captures view reads them again. */
  | { kind: 'captures' }
  /** A kind a newer bridge sends that this extension does not show. */
  | { kind: 'other'; name: string };

export class InvalidRecord extends Error {}

const KINDS: readonly string[] = ['breakpoint', 'exception', 'legacy-pdb'];
const STATES: readonly string[] = ['connecting', 'paused', 'running', 'failed'];
const MAX_TEXT = 4096;

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidRecord(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function text(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length > MAX_TEXT) {
    throw new InvalidRecord(`${what} is not a string of at most ${MAX_TEXT} characters`);
  }
  return value;
}

/** Messages (an exception's, a failure's) may be long, as a tensor's repr is: cut, not refused. */
function message(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new InvalidRecord(`${what} is not a string`);
  return value.length > MAX_TEXT ? `${value.slice(0, MAX_TEXT)}…` : value;
}

function optionalText(value: unknown, what: string): string | null {
  return value === null || value === undefined ? null : text(value, what);
}

function number(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidRecord(`${what} is not a number`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly string[], what: string): T {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw new InvalidRecord(`${what} is not one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/** A record as the bridge sends it, checked; unknown fields are dropped. */
export function parseRecord(value: unknown): WorkerRecord {
  const raw = object(value, 'record');
  const id = text(raw.id, 'record id');
  const at = (field: string): string => `record ${id}: ${field}`;
  let location: Location | null = null;
  if (raw.location !== null && raw.location !== undefined) {
    const where = object(raw.location, at('location'));
    location = {
      path: text(where.path, at('location.path')),
      line: number(where.line, at('location.line')),
      function: text(where.function, at('location.function')),
    };
  }
  let exception: WorkerRecord['exception'] = null;
  if (raw.exception !== null && raw.exception !== undefined) {
    const error = object(raw.exception, at('exception'));
    exception = {
      type: text(error.type, at('exception.type')),
      message: message(error.message, at('exception.message')),
    };
  }
  return {
    id,
    kind: oneOf<Kind>(raw.kind, KINDS, at('kind')),
    state: oneOf<RecordState>(raw.state, STATES, at('state')),
    job_id: optionalText(raw.job_id, at('job_id')),
    task_name: optionalText(raw.task_name, at('task_name')),
    actor_id: optionalText(raw.actor_id, at('actor_id')),
    actor_class: optionalText(raw.actor_class, at('actor_class')),
    node_id: optionalText(raw.node_id, at('node_id')),
    node_ip: text(raw.node_ip, at('node_ip')),
    pid: raw.pid === null || raw.pid === undefined ? null : number(raw.pid, at('pid')),
    paused_since: number(raw.paused_since, at('paused_since')),
    location,
    exception,
    clients: raw.clients === undefined ? 0 : number(raw.clients, at('clients')),
    error: raw.error === null || raw.error === undefined ? null : message(raw.error, at('error')),
    live: raw.live === true,
    rank: raw.rank === null || raw.rank === undefined ? null : number(raw.rank, at('rank')),
    role: optionalText(raw.role, at('role')),
    mesh: meshPlaces(raw.mesh, at('mesh')),
    parent: optionalText(raw.parent, at('parent')),
    unsupported: texts(raw.unsupported, at('unsupported')),
  };
}

const MAX_MESHES = 16;
const MAX_AXES = 16;
const MAX_SPANS = 4096;

/** A record's mesh places (absent: none), each checked: they come from the job's processes. */
export function meshPlaces(value: unknown, what: string): MeshPlace[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_MESHES) throw new InvalidRecord(`${what} is not a list of meshes`);
  return value.map((item: unknown, index: number) => {
    const place = object(item, `${what}[${index}]`);
    if (!Array.isArray(place.axes) || place.axes.length > MAX_AXES) throw new InvalidRecord(`${what}[${index}].axes`);
    return {
      mesh: number(place.mesh, `${what}[${index}].mesh`),
      axes: place.axes.map((raw: unknown, n: number) => {
        const at = `${what}[${index}].axes[${n}]`;
        const axis = object(raw, at);
        if (!Array.isArray(axis.spans) || axis.spans.length > MAX_SPANS) throw new InvalidRecord(`${at}.spans`);
        return {
          dim: text(axis.dim, `${at}.dim`),
          coord: number(axis.coord, `${at}.coord`),
          size: number(axis.size, `${at}.size`),
          group: text(axis.group, `${at}.group`),
          spans: axis.spans.map((span: unknown, k: number) => {
            if (!Array.isArray(span) || span.length !== 3) throw new InvalidRecord(`${at}.spans[${k}]`);
            return [0, 1, 2].map((i) => number(span[i], `${at}.spans[${k}]`)) as [number, number, number];
          }),
        };
      }),
    };
  });
}

const MAX_UNSUPPORTED = 64;

/** A list of messages (absent: none), at most {@link MAX_UNSUPPORTED}. */
function texts(value: unknown, what: string): string[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_UNSUPPORTED) {
    throw new InvalidRecord(`${what} is not a list of at most ${MAX_UNSUPPORTED} messages`);
  }
  return value.map((item: unknown, index: number) => message(item, `${what}[${index}]`));
}

const MAX_STRAGGLERS = 1000;

function parseVerdict(value: unknown): HangVerdict {
  const raw = object(value, 'verdict');
  const state = raw.state === 'suspected_hang' ? 'suspected_hang' : raw.state === 'progressing' ? 'progressing' : null;
  if (state === null) throw new InvalidRecord(`verdict state ${JSON.stringify(raw.state)}`);
  if (!Array.isArray(raw.stragglers) || raw.stragglers.length > MAX_STRAGGLERS) throw new InvalidRecord('verdict stragglers');
  return {
    job: text(raw.job, 'verdict.job'),
    state,
    summary: message(raw.summary, 'verdict.summary'),
    stragglers: raw.stragglers.map((item: unknown, index: number) => {
      const straggler = object(item, `straggler ${index}`);
      return {
        worker: text(straggler.worker, 'straggler.worker'),
        rank: straggler.rank === null || straggler.rank === undefined ? null : number(straggler.rank, 'straggler.rank'),
        role: optionalText(straggler.role, 'straggler.role'),
        coords: coordinates(straggler.coords, 'straggler.coords'),
        function: text(straggler.function, 'straggler.function'),
        path: text(straggler.path, 'straggler.path'),
        line: number(straggler.line, 'straggler.line'),
        why: optionalText(straggler.why, 'straggler.why'),
      };
    }),
    collective: raw.collective === null || raw.collective === undefined ? null : parseCollective(raw.collective),
    report: optionalText(raw.report, 'verdict.report'),
  };
}

const MAX_RANKS = 100_000;
const MAX_COORDS = 256;

/** A rank's mesh coordinates (`{ dp: 1, tp: 1 }`); none where a bridge sent none. */
function coordinates(value: unknown, at: string): Record<string, number> {
  if (value === undefined || value === null) return {};
  const raw = object(value, at);
  const entries = Object.entries(raw);
  if (entries.length > MAX_COORDS) throw new InvalidRecord(at);
  return Object.fromEntries(entries.map(([dim, coord]) => [text(dim, `${at} name`), number(coord, `${at}.${dim}`)]));
}

function ranks(value: unknown, at: string): number[] {
  if (!Array.isArray(value) || value.length > MAX_RANKS) throw new InvalidRecord(at);
  return value.map((rank: unknown, index: number) => number(rank, `${at}[${index}]`));
}

function parseCollective(value: unknown): CollectiveVerdict {
  const raw = object(value, 'collective');
  if (!Array.isArray(raw.mismatch) || raw.mismatch.length > MAX_RANKS) throw new InvalidRecord('collective.mismatch');
  return {
    group: text(raw.group, 'collective.group'),
    seq: number(raw.seq, 'collective.seq'),
    op: text(raw.op, 'collective.op'),
    waiting: ranks(raw.waiting, 'collective.waiting'),
    missing: ranks(raw.missing, 'collective.missing'),
    mismatch: raw.mismatch.map((item: unknown, index: number) => {
      const odd = object(item, `mismatch ${index}`);
      return { rank: number(odd.rank, 'mismatch.rank'), op: text(odd.op, 'mismatch.op') };
    }),
    summary: message(raw.summary, 'collective.summary'),
  };
}

/** One events message, checked. */
export function parseEvent(value: unknown): BridgeEvent {
  const raw = object(value, 'event');
  switch (raw.kind) {
    case 'snapshot': {
      if (!Array.isArray(raw.records)) throw new InvalidRecord('snapshot without records');
      return { kind: 'snapshot', records: raw.records.map(parseRecord) };
    }
    case 'added':
    case 'updated':
    case 'removed':
      return { kind: raw.kind, record: parseRecord(raw.record) };
    case 'hang':
      return { kind: 'hang', verdict: parseVerdict(raw.verdict) };
    case 'capture':
    case 'capture_point_disabled':
      // Not a record: the captures view reads the bridge again (the summary is not needed).
      return { kind: 'captures' };
    default:
      // A newer bridge may send kinds this extension does not know: ignored, never fatal.
      if (typeof raw.kind !== 'string') throw new InvalidRecord('an event without a kind');
      return { kind: 'other', name: raw.kind.slice(0, 100) };
  }
}

/** Records keyed by id, kept current by applying events in order. */
export function applyEvent(records: Map<string, WorkerRecord>, event: BridgeEvent): void {
  if (event.kind === 'snapshot') {
    records.clear();
    for (const record of event.records) records.set(record.id, record);
  } else if (event.kind === 'removed') {
    records.delete(event.record.id);
  } else if (event.kind === 'hang' || event.kind === 'captures' || event.kind === 'other') {
    return; // not a record: verdicts and captures go to the stream's own listeners, others nowhere
  } else {
    records.set(event.record.id, event.record);
  }
}
