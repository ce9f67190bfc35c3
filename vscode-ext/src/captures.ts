/**
 * The "Ray Captures" view's content as plain data: the bridge's capture points, each with the
 * captures it took (newest first), then the captures of failed tasks and of cleared points. Everything comes from the
 * bridge, so it is checked field by field before anything shows it.
 */

import { basename } from './workerTree';

export interface CapturePoint {
  id: string;
  path: string;
  line: number;
  owner: string;
  condition: string | null;
  rank: number | null;
  job: string | null;
  captures: number;
  expired: boolean;
  /** Why it turned itself off (its worker's words), if it did. */
  disabled: string | null;
}

export interface CaptureSummary {
  id: string;
  kind: 'point' | 'exception';
  job: string | null;
  worker: string;
  rank: number | null;
  pid: number | null;
  node: string | null;
  time: number;
  path: string;
  line: number;
  function: string;
  point: string | null;
  exception: string | null;
  truncated: boolean;
  hit: number | null;
}

export interface PointItem {
  type: 'point';
  point: CapturePoint;
  label: string;
  description: string;
  tooltip: string;
  children: CaptureItem[];
}

export interface GroupItem {
  type: 'group';
  label: string;
  description: string;
  children: CaptureItem[];
}

export interface CaptureItem {
  type: 'capture';
  capture: CaptureSummary;
  label: string;
  description: string;
  tooltip: string;
}

export type CaptureTreeItem = PointItem | GroupItem | CaptureItem;

/** The most captures shown under one point: the newest (the page and the CLI list them all). */
export const SHOWN_PER_POINT = 100;
const MAX_TEXT = 2000;

export class InvalidCapture extends Error {}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidCapture(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function text(raw: Record<string, unknown>, key: string): string {
  const value = raw[key];
  if (typeof value !== 'string') throw new InvalidCapture(`"${key}" is not a string`);
  return value.slice(0, MAX_TEXT);
}

function optionalText(raw: Record<string, unknown>, key: string): string | null {
  return raw[key] === null || raw[key] === undefined ? null : text(raw, key);
}

function count(raw: Record<string, unknown>, key: string): number {
  const value = raw[key];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidCapture(`"${key}" is not a count`);
  return value;
}

function optionalCount(raw: Record<string, unknown>, key: string): number | null {
  return raw[key] === null || raw[key] === undefined ? null : count(raw, key);
}

function list(body: unknown, key: string): unknown[] {
  const value = object(body, 'the answer')[key];
  if (!Array.isArray(value)) throw new InvalidCapture(`the answer has no "${key}" list`);
  return value;
}

/** `GET /api/v1/capture-points`, checked. */
export function parsePoints(body: unknown): CapturePoint[] {
  return list(body, 'points').map((value) => {
    const raw = object(value, 'a capture point');
    return {
      id: text(raw, 'id'), path: text(raw, 'path'), line: count(raw, 'line'), owner: text(raw, 'owner'),
      condition: optionalText(raw, 'condition'), rank: optionalCount(raw, 'rank'), job: optionalText(raw, 'job'),
      captures: count(raw, 'captures'), expired: raw.expired === true, disabled: optionalText(raw, 'disabled'),
    };
  });
}

/** One capture's summary, as `GET /api/v1/captures` lists it and the events feed announces it. */
export function parseCapture(value: unknown): CaptureSummary {
  const raw = object(value, 'a capture');
  const kind = raw.kind;
  if (kind !== 'point' && kind !== 'exception') throw new InvalidCapture(`a capture of kind ${String(kind)}`);
  return {
    id: text(raw, 'id'), kind, job: optionalText(raw, 'job'), worker: text(raw, 'worker'),
    rank: optionalCount(raw, 'rank'), pid: optionalCount(raw, 'pid'), node: optionalText(raw, 'node'),
    time: count(raw, 'time'), path: text(raw, 'path'), line: count(raw, 'line'), function: text(raw, 'function'),
    point: optionalText(raw, 'point'), exception: optionalText(raw, 'exception'), truncated: raw.truncated === true,
    hit: optionalCount(raw, 'hit'),
  };
}

export function parseCaptures(body: unknown): CaptureSummary[] {
  return list(body, 'captures').map(parseCapture);
}

function who(capture: CaptureSummary): string {
  return capture.rank === null ? `pid ${capture.pid ?? '?'}` : `rank ${capture.rank}`;
}

function clock(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(11, 19);
}

function captureItem(capture: CaptureSummary): CaptureItem {
  const where = `${basename(capture.path)}:${capture.line}`;
  const what = capture.exception ?? (capture.hit === null ? '' : `hit ${capture.hit}`);
  return {
    type: 'capture',
    capture,
    label: `${who(capture)} · ${clock(capture.time)}`,
    description: [capture.exception ? where : '', what, capture.truncated ? 'cut short' : ''].filter(Boolean).join(' · '),
    tooltip: `${capture.id}: ${capture.function} (${capture.path}:${capture.line}) on ${capture.node ?? '?'}, job ${capture.job ?? '?'}. Click to open it as a read-only stop.`,
  };
}

function pointState(point: CapturePoint): string {
  if (point.disabled) return `off: ${point.disabled}`;
  return point.expired ? 'expired' : `${point.captures} captured`;
}

/** Each point with its captures (newest first), then the failed tasks' captures. */
export function buildCaptureItems(points: readonly CapturePoint[], captures: readonly CaptureSummary[]): CaptureTreeItem[] {
  const newestFirst = [...captures].sort((a, b) => b.time - a.time);
  const items: CaptureTreeItem[] = points.map((point) => {
    const only = [point.job && `job ${point.job}`, point.rank !== null && `rank ${point.rank}`, point.condition && `if ${point.condition}`]
      .filter(Boolean)
      .join(', ');
    return {
      type: 'point',
      point,
      label: `${basename(point.path)}:${point.line}`,
      description: [pointState(point), only].filter(Boolean).join(' · '),
      tooltip: `${point.id}, set by ${point.owner}: ${point.path}:${point.line}`,
      children: newestFirst.filter((c) => c.point === point.id).slice(0, SHOWN_PER_POINT).map(captureItem),
    };
  });
  const listed = new Set(points.map((p) => p.id));
  const groups: [string, CaptureSummary[]][] = [
    ['Failed tasks', newestFirst.filter((c) => c.kind === 'exception')],
    ['Cleared points', newestFirst.filter((c) => c.kind === 'point' && !listed.has(c.point ?? ''))],
  ];
  for (const [label, members] of groups) {
    if (!members.length) continue;
    items.push({
      type: 'group', label, description: `${members.length} captured`,
      children: members.slice(0, SHOWN_PER_POINT).map(captureItem),
    });
  }
  return items;
}
