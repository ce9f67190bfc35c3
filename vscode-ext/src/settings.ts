/**
 * Settings and debug configurations, as plain data: what the user wrote, checked, with the
 * defaults filled in. Kept free of the `vscode` module so it is tested on its own.
 */

export type Transport = 'tcp' | 'websocket';

export interface Settings {
  /** The bridge's HTTP address; the events and DAP WebSockets live on the same port. */
  bridgeUrl: string;
  /** How debug sessions reach the bridge: its DAP TCP port, or `/dap` over WebSocket. */
  transport: Transport;
  /** DAP TCP port; 0 asks the bridge (`/healthz` says which port it bound). */
  dapPort: number;
}

export const DEFAULT_SETTINGS: Settings = {
  bridgeUrl: 'http://127.0.0.1:7800',
  transport: 'tcp',
  dapPort: 0,
};

export class ConfigError extends Error {}

/** The bridge's addresses derived from its URL. */
export interface Endpoints {
  http: string;
  events: string;
  dap: string;
  host: string;
  secure: boolean;
}

export function endpoints(bridgeUrl: string): Endpoints {
  let url: URL;
  try {
    url = new URL(bridgeUrl);
  } catch {
    throw new ConfigError(`raydap.bridgeUrl is not a URL such as http://127.0.0.1:7800: ${JSON.stringify(bridgeUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`raydap.bridgeUrl must start with http:// or https://, not ${url.protocol}`);
  }
  if (url.username || url.password) {
    throw new ConfigError('raydap.bridgeUrl must not carry credentials; use "Ray: Set Bridge Token"');
  }
  const secure = url.protocol === 'https:';
  const base = url.pathname.replace(/\/+$/, '');
  const http = `${url.protocol}//${url.host}${base}`;
  const ws = `${secure ? 'wss' : 'ws'}://${url.host}${base}`;
  return {
    http,
    events: `${ws}/api/v1/events`,
    dap: `${ws}/dap`,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    secure,
  };
}

/** Settings from `get(key)` (VS Code's configuration), each checked. */
export function readSettings(get: (key: keyof Settings) => unknown): Settings {
  const bridgeUrl = get('bridgeUrl') ?? DEFAULT_SETTINGS.bridgeUrl;
  if (typeof bridgeUrl !== 'string') throw new ConfigError('raydap.bridgeUrl must be a string');
  endpoints(bridgeUrl);
  return {
    bridgeUrl,
    transport: transport(get('transport') ?? DEFAULT_SETTINGS.transport, 'raydap.transport'),
    dapPort: port(get('dapPort') ?? DEFAULT_SETTINGS.dapPort, 'raydap.dapPort'),
  };
}

function transport(value: unknown, what: string): Transport {
  if (value !== 'tcp' && value !== 'websocket') {
    throw new ConfigError(`${what} must be "tcp" or "websocket", not ${JSON.stringify(value)}`);
  }
  return value;
}

function port(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    throw new ConfigError(`${what} must be a port number (0 asks the bridge)`);
  }
  return value;
}

/** A `ray` attach configuration after `resolveAttach`: what the adapter factory needs. */
export interface AttachConfiguration {
  type: string;
  request: 'attach';
  name: string;
  bridgeUrl: string;
  transport: Transport;
  dapPort: number;
  localRoot?: string;
  breakpoint?: string;
  follow?: boolean | Record<string, string>;
  /** A capture's id: a read-only session over what it holds. */
  capture?: string;
  childSessions?: boolean;
  [key: string]: unknown;
}

const FILTER_KEYS = ['job', 'task', 'actor', 'node'];

/**
 * Fill in a user's (or a child session's) configuration: bridge and transport from the
 * settings unless the configuration names them, `localRoot` from the workspace folder so
 * `_ray_pkg_<hash>` paths map to the user's files. Mistakes are reported before any
 * connection is made.
 */
export function resolveAttach(
  config: Record<string, unknown>,
  settings: Settings,
  workspaceFolder: string | undefined,
): AttachConfiguration {
  const request = config.request ?? 'attach';
  if (request !== 'attach') {
    throw new ConfigError('a "ray" configuration attaches to paused workers: use "request": "attach"');
  }
  const resolved: AttachConfiguration = {
    ...config,
    type: typeof config.type === 'string' ? config.type : 'ray',
    request: 'attach',
    name: typeof config.name === 'string' ? config.name : 'Ray: follow all workers',
    bridgeUrl: settings.bridgeUrl,
    transport: settings.transport,
    dapPort: settings.dapPort,
  };
  if (config.bridgeUrl !== undefined) {
    if (typeof config.bridgeUrl !== 'string') throw new ConfigError('"bridgeUrl" must be a string');
    endpoints(config.bridgeUrl);
    resolved.bridgeUrl = config.bridgeUrl;
  }
  if (config.transport !== undefined) resolved.transport = transport(config.transport, '"transport"');
  if (config.dapPort !== undefined) resolved.dapPort = port(config.dapPort, '"dapPort"');
  if (config.breakpoint !== undefined && (typeof config.breakpoint !== 'string' || !config.breakpoint)) {
    throw new ConfigError('"breakpoint" must be a worker id (or a unique prefix of one)');
  }
  if (config.capture !== undefined && (typeof config.capture !== 'string' || !/^cap-[0-9a-f]{1,12}$/.test(config.capture))) {
    throw new ConfigError('"capture" must be a capture id such as cap-1a2b3c4d5e6f (or a unique prefix of one)');
  }
  const targets = ['breakpoint', 'follow', 'capture'].filter((key) => config[key] !== undefined);
  if (targets.length > 1) {
    throw new ConfigError('give one of "breakpoint" (one worker), "follow" (many) or "capture" (a capture), not several');
  }
  if (config.follow !== undefined && typeof config.follow !== 'boolean') {
    const filter = config.follow;
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
      throw new ConfigError('"follow" must be true or a filter such as {"job": "02000000"}');
    }
    for (const [key, value] of Object.entries(filter)) {
      if (!FILTER_KEYS.includes(key) || typeof value !== 'string') {
        throw new ConfigError(`"follow" filters by ${FILTER_KEYS.join(', ')} (strings); got "${key}"`);
      }
    }
  }
  if (config.localRoot === undefined && workspaceFolder !== undefined) {
    resolved.localRoot = workspaceFolder;
  } else if (config.localRoot !== undefined && typeof config.localRoot !== 'string') {
    throw new ConfigError('"localRoot" must be a folder path');
  }
  return resolved;
}

/**
 * The DAP TCP listener checks a token given in the attach arguments (VS Code sends the whole
 * configuration as those); over WebSocket the token travels in the upgrade's header instead.
 */
export function withToken(config: AttachConfiguration, token: string | undefined): AttachConfiguration {
  return token && config.transport === 'tcp' ? { ...config, token } : config;
}
