// models.ts and modes.ts over the real VS Code API: quick picks, a password box, SecretStorage, the
// lspAgent.model setting and the extension's state. Kept apart so the logic stays testable without vscode.

import * as vscode from 'vscode';

import type { ModelsDeps, SettingScope } from './models.js';

// looked up when used, not at load: the module loads with the extension, before any picker is opened
function target(scope: SettingScope): vscode.ConfigurationTarget {
  const targets = vscode.ConfigurationTarget;
  return scope === 'workspaceFolder' ? targets.WorkspaceFolder : scope === 'workspace' ? targets.Workspace : targets.Global;
}

export function modelsDeps(
  context: vscode.ExtensionContext,
  send: <T>(method: string, params?: unknown) => Promise<T>,
  openSetting: () => Promise<unknown>,
): ModelsDeps {
  const folder = (): vscode.Uri | undefined => vscode.workspace.workspaceFolders?.[0]?.uri;
  return {
    send,
    openSetting,
    pick: async (items, options) => {
      const shown: vscode.QuickPickItem[] = items.map((item) => ({
        label: item.label,
        ...(item.description === undefined ? {} : { description: item.description }),
        ...(item.detail === undefined ? {} : { detail: item.detail }),
        kind: item.kind === 'separator' ? vscode.QuickPickItemKind.Separator : vscode.QuickPickItemKind.Default,
      }));
      const picked = await vscode.window.showQuickPick(shown, { ...options, matchOnDescription: true, matchOnDetail: true });
      return picked ? items[shown.indexOf(picked)] : undefined;
    },
    askSecret: async (options) => vscode.window.showInputBox({ ...options, password: true, ignoreFocusOut: true }),
    info: async (message) => vscode.window.showInformationMessage(message),
    warn: async (message) => vscode.window.showWarningMessage(message),
    setting: {
      inspect: () => vscode.workspace.getConfiguration('lspAgent', folder()).inspect('model'),
      update: async (value, scope) => vscode.workspace.getConfiguration('lspAgent', folder()).update('model', value, target(scope)),
    },
    secrets: {
      get: async (key) => context.secrets.get(key),
      store: async (key, value) => context.secrets.store(key, value),
      delete: async (key) => context.secrets.delete(key),
    },
    memory: {
      get: (key) => context.globalState.get(key),
      update: async (key, value) => context.globalState.update(key, value),
    },
  };
}
