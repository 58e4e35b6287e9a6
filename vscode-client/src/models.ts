// The model picker, provider keys and "test the connection". The server lists the models (agent/models:
// the one in use, the settings', the built-in table's and each server's /v1/models); a chosen model is
// written to lspAgent.model where the user's value already lives. Keys live in VS Code's SecretStorage
// and travel to the server only as agent/providerKey, which keeps them in memory: never settings.json,
// never a file, never the log (nothing here logs a key or an error that could quote one).

import type { ModelOut, ModelsResult, ProviderOut } from './protocol.gen.js';

export const CHOOSE_MODEL = 'lspAgent.chooseModel';
export const SET_PROVIDER_KEY = 'lspAgent.setProviderKey';
export const TEST_CONNECTION = 'lspAgent.testConnection';
/** SecretStorage key of a provider's API key */
export const secretName = (provider: string): string => `lspAgent.providerKey.${provider}`;
/** globalState: the providers that have a key in SecretStorage (SecretStorage cannot list its keys) */
export const KEYED_PROVIDERS = 'lspAgent.keyedProviders';

export const TYPE_IN_SETTINGS = '$(edit) Type a model name in Settings…';

export type SettingScope = 'workspaceFolder' | 'workspace' | 'global';

export interface ModelSetting {
  /** where lspAgent.model is set now, most specific first */
  inspect(): { workspaceFolderValue?: unknown; workspaceValue?: unknown; globalValue?: unknown } | undefined;
  update(value: string, scope: SettingScope): Promise<void>;
}

export interface Secrets {
  get(key: string): Promise<string | undefined>;
  store(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface Memory {
  get(key: string): unknown;
  update(key: string, value: unknown): Promise<void>;
}

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
  kind?: 'separator';
}

export interface ModelsDeps {
  send<T>(method: string, params?: unknown): Promise<T>;
  pick<T extends PickItem>(items: T[], options: { title: string; placeHolder: string }): Promise<T | undefined>;
  /** a password input box: what is typed is not shown */
  askSecret(options: { title: string; prompt: string }): Promise<string | undefined>;
  /** the Settings editor on lspAgent.model, for a name the list does not have */
  openSetting(): Promise<unknown>;
  info(message: string): Promise<unknown>;
  warn(message: string): Promise<unknown>;
  setting: ModelSetting;
  secrets: Secrets;
  memory: Memory;
}

type Action =
  | { kind: 'model'; model: ModelOut }
  | { kind: 'key'; provider: string }
  | { kind: 'test'; provider: string }
  | { kind: 'setting' }
  | { kind: 'none' };
type Item = PickItem & { action: Action };

const SOURCE: Record<ModelOut['source'], string> = {
  current: 'in use',
  configured: 'from your settings',
  server: 'listed by the server',
  known: 'built-in',
};

/** The scope a chosen model is written to: where the user set it before (so it takes effect), else User. */
export function modelScope(setting: ModelSetting): SettingScope {
  const seen = setting.inspect();
  if (seen?.workspaceFolderValue !== undefined) {
    return 'workspaceFolder';
  }
  if (seen?.workspaceValue !== undefined) {
    return 'workspace';
  }
  return 'global';
}

export function providerLine(provider: ProviderOut): string {
  const key = provider.key === 'editor' ? 'key entered in VS Code' : provider.key === 'environment' ? `key from ${provider.keyEnv ?? 'the environment'}` : 'no key';
  if (provider.failure) {
    return `${provider.failure.kind}: ${provider.failure.message}`;
  }
  if (!provider.asked) {
    return `not asked (${key}); test the connection to ask its server`;
  }
  return `${provider.models} model${provider.models === 1 ? '' : 's'} listed${provider.truncated ? ' (more not shown)' : ''} · ${key}`;
}

/** The picker's items: models grouped by provider, each provider's state and its key and test actions. */
export function pickerItems(result: ModelsResult): Item[] {
  const items: Item[] = [];
  const providers = new Map(result.providers.map((p) => [p.name, p]));
  const names = [...new Set([...result.models.map((m) => m.provider), ...result.providers.map((p) => p.name)])];
  for (const name of names) {
    const provider = providers.get(name);
    const models = result.models.filter((m) => m.provider === name);
    if (models.length === 0 && !provider?.asked && !provider?.failure) {
      continue; // a provider nobody set up and that offers nothing: not worth a row
    }
    items.push({ label: name, kind: 'separator', action: { kind: 'none' } });
    for (const model of models) {
      const current = model.name === result.current;
      items.push({ label: `${current ? '$(check) ' : ''}${model.name}`, description: SOURCE[model.source], action: { kind: 'model', model } });
    }
    if (provider) {
      const warn = provider.failure ? '$(warning) ' : '';
      items.push({ label: `${warn}$(key) Enter a key for ${name}…`, detail: providerLine(provider), action: { kind: 'key', provider: name } });
      items.push({ label: `$(plug) Test the connection to ${name}`, description: provider.baseUrl ?? 'no base URL', action: { kind: 'test', provider: name } });
    }
  }
  items.push({ label: 'other', kind: 'separator', action: { kind: 'none' } });
  items.push({ label: TYPE_IN_SETTINGS, description: 'lspAgent.model, as provider/model', action: { kind: 'setting' } });
  return items;
}

export function connectionMessage(provider: ProviderOut): string {
  if (provider.failure) {
    return `LSP Agent: ${provider.name} — ${provider.failure.kind.replace('_', ' ')}: ${provider.failure.message}`;
  }
  return `LSP Agent: ${provider.name} answers at ${provider.baseUrl ?? '?'} — ${provider.models} model${provider.models === 1 ? '' : 's'} listed.`;
}

export class ModelsAndKeys {
  constructor(private readonly deps: ModelsDeps) {}

  async chooseModel(): Promise<string | undefined> {
    const result = await this.deps.send<ModelsResult>('agent/models', {});
    const picked = await this.deps.pick(pickerItems(result), {
      title: 'LSP Agent: Choose a Model',
      placeHolder: result.current ? `In use: ${result.current} — pick another, or set up a provider` : 'No model yet: pick one',
    });
    switch (picked?.action.kind) {
      case 'model': {
        const name = picked.action.model.name;
        await this.deps.setting.update(name, modelScope(this.deps.setting));
        return name;
      }
      case 'key':
        await this.setProviderKey(picked.action.provider);
        return undefined;
      case 'test':
        await this.testConnection(picked.action.provider);
        return undefined;
      case 'setting':
        await this.deps.openSetting();
        return undefined;
      default:
        return undefined;
    }
  }

  /** Ask for a key (hidden input), keep it in SecretStorage, hand it to the server; '' forgets it. */
  async setProviderKey(provider?: string): Promise<boolean> {
    const name = provider ?? (await this.pickProvider('Enter a Key for a Provider'));
    if (!name) {
      return false;
    }
    const key = await this.deps.askSecret({
      title: `LSP Agent: API key for ${name}`,
      prompt: `Kept in VS Code's secret storage and given to the server in memory only. Leave empty to forget the key for ${name}.`,
    });
    if (key === undefined) {
      return false;
    }
    const keyed = new Set(this.keyedProviders());
    const trimmed = key.trim();
    if (trimmed === '') {
      await this.deps.send('agent/providerKey', { provider: name, key: null });
      await this.deps.secrets.delete(secretName(name));
      keyed.delete(name);
      await this.deps.memory.update(KEYED_PROVIDERS, [...keyed].sort());
      await this.deps.info(`LSP Agent: the key for ${name} is forgotten.`);
      return true;
    }
    try {
      await this.deps.send('agent/providerKey', { provider: name, key: trimmed });
    } catch (error) {
      // the server's message says why and never quotes the key
      await this.deps.warn(`LSP Agent: the key for ${name} was not accepted: ${messageOf(error)}`);
      return false;
    }
    await this.deps.secrets.store(secretName(name), trimmed);
    keyed.add(name);
    await this.deps.memory.update(KEYED_PROVIDERS, [...keyed].sort());
    await this.testConnection(name);
    return true;
  }

  /** agent/models for one provider: the server asks its /v1/models and says what happened. */
  async testConnection(provider?: string): Promise<ProviderOut | undefined> {
    const name = provider ?? (await this.pickProvider('Test the Connection'));
    if (!name) {
      return undefined;
    }
    const result = await this.deps.send<ModelsResult>('agent/models', { provider: name });
    const found = result.providers.find((p) => p.name === name);
    if (found) {
      await (found.failure ? this.deps.warn(connectionMessage(found)) : this.deps.info(connectionMessage(found)));
    }
    return found;
  }

  /** After every server start: the keys in SecretStorage go to the new process (it kept none). */
  async sendStoredKeys(): Promise<string[]> {
    const sent: string[] = [];
    for (const name of this.keyedProviders()) {
      const key = await this.deps.secrets.get(secretName(name));
      if (!key) {
        continue;
      }
      try {
        await this.deps.send('agent/providerKey', { provider: name, key });
        sent.push(name);
      } catch (error) {
        await this.deps.warn(`LSP Agent: the stored key for ${name} could not be given to the server: ${messageOf(error)}`);
      }
    }
    return sent;
  }

  private keyedProviders(): string[] {
    const names = this.deps.memory.get(KEYED_PROVIDERS);
    return Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [];
  }

  private async pickProvider(title: string): Promise<string | undefined> {
    const result = await this.deps.send<ModelsResult>('agent/models', {});
    const picked = await this.deps.pick(
      result.providers.map((p) => ({ label: p.name, description: p.baseUrl ?? 'no base URL', detail: providerLine(p) })),
      { title: `LSP Agent: ${title}`, placeHolder: 'Pick a provider' },
    );
    return picked?.label;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
