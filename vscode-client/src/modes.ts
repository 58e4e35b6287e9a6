// Modes: Agent, Plan, Ask. The server enforces them (agent/mode: Plan and Ask run in a read-only sandbox
// and never ask for approvals; Ask runs no command); this module only picks, remembers per workspace, and
// restores the mode on every server start (a new server process starts in Agent mode).

import type { ModeResult } from './protocol.gen.js';

export const CHOOSE_MODE = 'lspAgent.chooseMode';
export const MODE_KEY = 'lspAgent.mode';
export type ModeId = ModeResult['mode'];

export interface ModesDeps {
  send<T>(method: string, params?: unknown): Promise<T>;
  pick<T extends { label: string; description?: string; detail?: string }>(items: T[], options: { title: string; placeHolder: string }): Promise<T | undefined>;
  memory: { get(key: string): unknown; update(key: string, value: unknown): Promise<void> };
}

export const MODE_LABELS: Record<ModeId, string> = { agent: 'Agent', plan: 'Plan', ask: 'Ask' };

export class Modes {
  private currentMode: ModeId = 'agent';
  private readonly listeners: ((mode: ModeId) => void)[] = [];

  constructor(private readonly deps: ModesDeps) {
    this.currentMode = this.remembered();
  }

  get mode(): ModeId {
    return this.currentMode;
  }

  onDidChange(listener: (mode: ModeId) => void): void {
    this.listeners.push(listener);
  }

  async chooseMode(): Promise<ModeId | undefined> {
    const state = await this.deps.send<ModeResult>('agent/mode', {});
    const picked = await this.deps.pick(
      state.modes.map((m) => ({ label: `${m.id === state.mode ? '$(check) ' : ''}${m.name}`, detail: m.description, id: m.id })),
      { title: 'LSP Agent: Choose a Mode', placeHolder: `Now: ${MODE_LABELS[state.mode]} (for the runs started from now on)` },
    );
    if (!picked) {
      return undefined;
    }
    return this.switchTo(picked.id);
  }

  async switchTo(mode: ModeId): Promise<ModeId> {
    const state = await this.deps.send<ModeResult>('agent/mode', { mode });
    await this.remember(state.mode);
    return state.mode;
  }

  /** On a server start: the mode this workspace was left in (the server itself starts in Agent). */
  async restore(): Promise<ModeId> {
    const wanted = this.remembered();
    const state = await this.deps.send<ModeResult>('agent/mode', wanted === 'agent' ? {} : { mode: wanted });
    await this.remember(state.mode);
    return state.mode;
  }

  private remembered(): ModeId {
    const value = this.deps.memory.get(MODE_KEY);
    return value === 'plan' || value === 'ask' ? value : 'agent';
  }

  private async remember(mode: ModeId): Promise<void> {
    this.currentMode = mode;
    await this.deps.memory.update(MODE_KEY, mode);
    for (const listener of this.listeners) {
      listener(mode);
    }
  }
}
