/**
 * The extension against the bridge's record model: `test/schema/record.schema.json` is the JSON
 * schema of the Python `BreakpointRecord` (tests/unit/bridge/workers/test_record_schema.py keeps
 * it equal to the model). A field or state added in Python and not handled here fails this test.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import { parseRecord } from '../../src/records';

interface Schema {
  type?: string;
  items?: Schema;
  /** A tuple's items, each of its own schema (a run of ranks: start, stop, step). */
  prefixItems?: Schema[];
  enum?: unknown[];
  anyOf?: Schema[];
  $ref?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  $defs?: Record<string, Schema>;
}

// Compiled to out/test/unit: the schema stays in the sources.
const SCHEMA: Schema = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'schema', 'record.schema.json'), 'utf8'),
);

/** Fields the extension does not show, and why. Anything else must come through parseRecord. */
const IGNORED: Record<string, string> = {
  task_id: 'the bridge names the task; the id only serves its task-end watch',
  worker_id: 'Ray’s id of the process; records are keyed by their own id',
  worker_type: 'a driver is named in task_name already',
  debugger_port: 'the bridge holds the connection; editors attach through the bridge',
  working_dir: 'the bridge maps paths with it',
  answers: 'which of raydap’s own requests the bridge may send the worker: the bridge’s concern',
  world_size: 'not drawn yet: rank N is enough in a tree item',
};

/** A schema with its `$ref` followed (an enum, a nested model). */
function resolved(schema: Schema, name: string): Schema {
  if (schema.$ref === undefined) return schema;
  const defined = SCHEMA.$defs?.[schema.$ref.replace('#/$defs/', '')];
  assert.ok(defined, `${name}: ${schema.$ref} is not in $defs`);
  return defined;
}

/** A value of the schema's type, not null, so that a field the parser drops shows. */
function sample(schema: Schema, name: string): unknown {
  if (schema.$ref !== undefined) return sample(resolved(schema, name), name);
  if (schema.anyOf !== undefined) {
    const notNull = schema.anyOf.find((option) => option.type !== 'null');
    assert.ok(notNull, `${name}: only null`);
    return sample(notNull, name);
  }
  if (schema.enum !== undefined) return schema.enum[0];
  switch (schema.type) {
    case 'string':
      return `${name}-value`;
    case 'integer':
      return 7;
    case 'number':
      return 7.5;
    case 'boolean':
      return true;
    case 'array':
      if (schema.prefixItems !== undefined) return schema.prefixItems.map((item, i) => sample(item, `${name}[${i}]`));
      assert.ok(schema.items, `${name}: an array of what?`);
      return [sample(schema.items, `${name}[0]`)];
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, field]) => [key, sample(field, `${name}.${key}`)]),
      );
    default:
      assert.fail(`${name}: a schema type the extension's parser was never taught (${JSON.stringify(schema)})`);
  }
}

function full(): Record<string, unknown> {
  const properties = SCHEMA.properties ?? {};
  return Object.fromEntries(Object.entries(properties).map(([key, field]) => [key, sample(field, key)]));
}

test('every field of the bridge’s records is read by the extension or named as ignored', () => {
  const raw = full();
  const parsed = parseRecord(raw) as unknown as Record<string, unknown>;
  for (const field of Object.keys(raw)) {
    if (field in IGNORED) {
      assert.equal(field in parsed, false, `${field} is read: take it out of IGNORED`);
      continue;
    }
    assert.ok(field in parsed, `the bridge sends ${field}; records.ts drops it (read it, or add it to IGNORED with why)`);
    assert.deepEqual(parsed[field], raw[field], `${field} is changed on the way in`);
  }
  for (const field of Object.keys(IGNORED)) {
    assert.ok(field in raw, `IGNORED names ${field}, which the bridge no longer sends`);
  }
});

test('every state and kind a record can have is one the extension accepts', () => {
  const properties = SCHEMA.properties ?? {};
  for (const field of ['state', 'kind']) {
    const values = properties[field] && resolved(properties[field], field).enum;
    assert.ok(values && values.length > 0, `${field} has no enum in the schema`);
    for (const value of values) {
      assert.doesNotThrow(() => parseRecord({ ...full(), [field]: value }), `${field} ${String(value)}`);
    }
  }
});

test('a field the bridge requires is one the extension requires too', () => {
  for (const field of SCHEMA.required ?? []) {
    const raw = full();
    delete raw[field];
    assert.throws(() => parseRecord(raw), new RegExp(field), `a record without ${field} is accepted`);
  }
});
