/**
 * The `ray` debug type: configurations are checked and completed here, and each session is
 * an inline adapter (`bridgeDebugAdapter.ts`) connected to the bridge over its DAP TCP port or
 * its `/dap` WebSocket, as the `raydap.transport` setting says; it survives a bridge replace.
 */

import * as vscode from 'vscode';

import { BridgeApi } from './bridgeApi';
import { ConfigError, endpoints, resolveAttach, withToken, type AttachConfiguration } from './settings';
import type { Connection } from './connection';
import { BridgeDebugAdapter } from './bridgeDebugAdapter';
import { overTcp, overWebSocket } from './dapTransport';

export const DEBUG_TYPE = 'ray';

export const FOLLOW_ALL: vscode.DebugConfiguration = {
  type: DEBUG_TYPE,
  request: 'attach',
  name: 'Ray: follow all paused workers',
  follow: true,
};

export class RayConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(private readonly connection: Connection) {}

  provideDebugConfigurations(): vscode.DebugConfiguration[] {
    return [FOLLOW_ALL];
  }

  /** F5 with no launch.json gives an empty configuration: follow every paused worker. */
  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration {
    return config.type || config.request || config.name ? config : { ...FOLLOW_ALL };
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    const workspace = folder ?? vscode.workspace.workspaceFolders?.[0];
    try {
      const resolved = resolveAttach(config, this.connection.settings(), workspace?.uri.fsPath);
      return withToken(resolved, await this.connection.token());
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      void vscode.window.showErrorMessage(`raydap: ${error.message}`);
      return undefined; // aborts the launch
    }
  }
}

export class RayAdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  constructor(
    private readonly connection: Connection,
    private readonly log: vscode.OutputChannel,
  ) {}

  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const config = session.configuration as AttachConfiguration;
    const where = endpoints(config.bridgeUrl);
    const token = await this.connection.token();
    // Node's TCP socket speaks plain TCP only; a TLS bridge is reached over wss.
    if (config.transport === 'websocket' || where.secure) {
      this.log.appendLine(`session "${session.name}": DAP over ${where.dap}`);
      return new vscode.DebugAdapterInlineImplementation(new BridgeDebugAdapter(overWebSocket(where.dap, token)));
    }
    const port = config.dapPort || (await new BridgeApi(config.bridgeUrl, token).health()).dap_port;
    this.log.appendLine(`session "${session.name}": DAP over tcp://${where.host}:${port}`);
    return new vscode.DebugAdapterInlineImplementation(new BridgeDebugAdapter(overTcp(where.host, port)));
  }
}

export function registerDebugType(
  context: vscode.ExtensionContext,
  connection: Connection,
  log: vscode.OutputChannel,
): void {
  context.subscriptions.push(
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new RayConfigurationProvider(connection)),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new RayAdapterFactory(connection, log)),
  );
}
