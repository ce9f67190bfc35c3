/**
 * The bridge's connection file, read when the extension runs on the bridge's machine (VS Code
 * Remote-SSH to the Ray head): `raydap serve` writes `{url, dap_port, token, pid}` as JSON,
 * readable only by its user, under RAYDAP_RUNTIME_DIR (default $XDG_RUNTIME_DIR/raydap, else
 * ~/.local/share/raydap/runtime). The extension then needs no token pasted; elsewhere it asks
 * once (SecretStorage).
 */

import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

export interface BridgeConnection {
  readonly url: string;
  readonly dapPort: number;
  readonly token: string | undefined;
  readonly pid: number;
}

const MAX_BYTES = 64 * 1024;

export function runtimeDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env['RAYDAP_RUNTIME_DIR']) return env['RAYDAP_RUNTIME_DIR'];
  if (env['XDG_RUNTIME_DIR']) return path.join(env['XDG_RUNTIME_DIR'], 'raydap');
  return path.join(os.homedir(), '.local', 'share', 'raydap', 'runtime');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parse(text: string): BridgeConnection | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  const fields = data as Record<string, unknown>;
  const { url, dap_port: dapPort, token, pid } = fields;
  if (typeof url !== 'string' || typeof dapPort !== 'number' || typeof pid !== 'number') return undefined;
  if (token !== undefined && token !== null && typeof token !== 'string') return undefined;
  return { url, dapPort, token: token ?? undefined, pid };
}

const normalise = (url: string): string => url.replace(/\/+$/, '').toLowerCase();

/** The live bridge serving `bridgeUrl` on this machine, if its connection file is here. */
export async function findConnection(bridgeUrl: string, dir: string = runtimeDir()): Promise<BridgeConnection | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return undefined;
  }
  for (const name of names.filter((n) => /^bridge-\d+\.json$/.test(n)).sort()) {
    try {
      const file = path.join(dir, name);
      if ((await fs.stat(file)).size > MAX_BYTES) continue;
      const found = parse(await fs.readFile(file, 'utf8'));
      if (found && normalise(found.url) === normalise(bridgeUrl) && alive(found.pid)) return found;
    } catch {
      continue;
    }
  }
  return undefined;
}
