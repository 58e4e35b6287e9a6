// The "LSP Agent: … Skill …" commands (docs/skills.md): pick a candidate from agent/skill/list,
// then run the server's command for it. Propose, validate and promote go through
// workspace/executeCommand (the same path as the code actions, so promote opens the new SKILL.md
// with window/showDocument); retire and list are plain agent/skill/* requests.

import { UserError } from './agentClient.js';
import type { Logger } from './agentClient.js';
import type { Host, PickItem } from './host.js';
import { EXECUTE_COMMAND, SkillMethods, SkillServerCommands } from './protocol.js';
import type { SkillCandidate, SkillInfo, SkillListResult, SkillResult } from './protocol.js';
import { describeError, errorFacts, isMethodNotFound } from './rpc.js';

export const SkillCommandIds = {
  propose: 'lspAgent.skill.propose',
  validate: 'lspAgent.skill.validate',
  promote: 'lspAgent.skill.promote',
  retire: 'lspAgent.skill.retire',
  list: 'lspAgent.skill.list',
} as const;

/** What the skill commands need from the AgentClient. */
export interface SkillRequester {
  send<T>(method: string, params?: unknown): Promise<T>;
}

export interface CandidatePick extends PickItem {
  candidate: SkillCandidate;
}

export interface EvidencePick extends PickItem {
  uri?: string;
}

export type ListPick = PickItem & ({ skill: SkillInfo } | { candidate: SkillCandidate });

// --- which candidates each command offers (the server re-checks every rule) --------------------

/** Validate: pending and not validated yet (a second validation is refused with `wrong_state`). */
export function validatable(candidates: readonly SkillCandidate[]): SkillCandidate[] {
  return candidates.filter((c) => c.state === 'pending' && !c.validated);
}

/** Promote: pending with independent evidence recorded. */
export function promotable(candidates: readonly SkillCandidate[]): SkillCandidate[] {
  return candidates.filter((c) => c.state === 'pending' && c.validated);
}

/** Retire: anything not retired yet (pending, active, or a retirement that was interrupted). */
export function retirable(candidates: readonly SkillCandidate[]): SkillCandidate[] {
  return candidates.filter((c) => c.state !== 'retired');
}

export function stateLabel(candidate: SkillCandidate): string {
  return candidate.state === 'pending' && candidate.validated ? 'pending (validated)' : candidate.state;
}

export function candidatePicks(candidates: readonly SkillCandidate[]): CandidatePick[] {
  return candidates.map((candidate) => ({ label: candidate.name, description: stateLabel(candidate), detail: candidate.description, candidate }));
}

export function listPicks(list: SkillListResult): ListPick[] {
  const skills: ListPick[] = list.skills.map((skill) => ({ label: `$(book) ${skill.name}`, description: skill.path, detail: skill.description, skill }));
  const candidates: ListPick[] = list.candidates.map((candidate) => ({
    label: `$(beaker) ${candidate.name}`,
    description: `candidate · ${stateLabel(candidate)}`,
    detail: candidate.description,
    candidate,
  }));
  return [...skills, ...candidates];
}

/** The workspace/executeCommand params of a server command: `arguments` is `[params]`. */
export function executeParams(command: string, params: Record<string, unknown>): { command: string; arguments: unknown[] } {
  return { command, arguments: [params] };
}

/** A one-line report of a skill operation; refusals name the rule that failed. */
export function skillOutcome(what: string, result: SkillResult): { ok: boolean; text: string } {
  if (result.ok) {
    return { ok: true, text: `${what}: ${result.message}` };
  }
  return { ok: false, text: `${what} refused${result.rule ? ` (${result.rule})` : ''}: ${result.message}` };
}

const CHOOSE_FILE = 'Choose a file…';

export class SkillCommands {
  constructor(
    private readonly host: Host,
    private readonly client: SkillRequester,
    private readonly log: Logger,
  ) {}

  private async guard(what: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      if (error instanceof UserError || isMethodNotFound(error)) {
        await this.host.showWarning(error instanceof UserError ? error.message : describeError(what, error));
      } else {
        this.log.error(`${what}: ${errorFacts(error).message}`);
        await this.host.showError(describeError(what, error));
      }
    }
  }

  propose(): Promise<void> {
    return this.guard('Propose Skill Candidate', async () => {
      const doc = this.host.activeDocument();
      if (!doc) {
        throw new UserError('Open the proposal JSON (e.g. a draft from "Propose skill from this verification") first.');
      }
      await this.execute('Propose Skill Candidate', SkillServerCommands.propose, { uri: doc.uri });
    });
  }

  validate(): Promise<void> {
    return this.guard('Validate Skill Candidate', async () => {
      const candidate = await this.pickCandidate(validatable, 'Validate which candidate?', 'No pending candidate waits for validation.');
      if (!candidate) {
        return;
      }
      const uri = await this.pickEvidence(candidate.name);
      if (!uri) {
        return;
      }
      await this.execute('Validate Skill Candidate', SkillServerCommands.validate, { name: candidate.name, uri });
    });
  }

  promote(): Promise<void> {
    return this.guard('Promote Skill Candidate', async () => {
      const candidate = await this.pickCandidate(promotable, 'Promote which candidate?', 'No validated candidate to promote: validate one first.');
      if (candidate) {
        await this.execute('Promote Skill Candidate', SkillServerCommands.promote, { name: candidate.name });
      }
    });
  }

  retire(): Promise<void> {
    return this.guard('Retire Skill', async () => {
      const candidate = await this.pickCandidate(retirable, 'Retire which skill?', 'There is no skill candidate to retire.');
      if (candidate) {
        this.report('Retire Skill', await this.client.send<SkillResult>(SkillMethods.retire, { name: candidate.name }));
      }
    });
  }

  list(): Promise<void> {
    return this.guard('List Skills', async () => {
      const list = await this.client.send<SkillListResult>(SkillMethods.list, {});
      const picks = listPicks(list);
      if (picks.length === 0) {
        await this.host.showInfo('No skills or skill candidates in this workspace yet.');
        return;
      }
      await this.host.quickPick(picks, {
        title: `LSP Agent: Skills (${list.skills.length} active, ${list.candidates.length} candidate${list.candidates.length === 1 ? '' : 's'})`,
        placeHolder: 'The skills the agent sees, then every candidate',
      });
    });
  }

  private async execute(what: string, command: string, params: Record<string, unknown>): Promise<void> {
    this.report(what, await this.client.send<SkillResult>(EXECUTE_COMMAND, executeParams(command, params)));
  }

  private report(what: string, result: SkillResult): void {
    const outcome = skillOutcome(what, result);
    if (outcome.ok) {
      void this.host.showInfo(outcome.text);
    } else {
      void this.host.showWarning(outcome.text);
    }
  }

  private async pickCandidate(
    filter: (candidates: readonly SkillCandidate[]) => SkillCandidate[],
    placeHolder: string,
    none: string,
  ): Promise<SkillCandidate | undefined> {
    const list = await this.client.send<SkillListResult>(SkillMethods.list, {});
    const offered = filter(list.candidates);
    if (offered.length === 0) {
      throw new UserError(none);
    }
    return (await this.host.quickPick(candidatePicks(offered), { title: 'LSP Agent: Skill Candidates', placeHolder }))?.candidate;
  }

  /** The independent evidence file: the active editor's document, or one chosen in a dialog. */
  private async pickEvidence(name: string): Promise<string | undefined> {
    const doc = this.host.activeDocument();
    if (doc) {
      const picks: EvidencePick[] = [
        { label: 'Active editor', description: doc.path, uri: doc.uri },
        { label: CHOOSE_FILE, description: 'a validation file citing another session\'s verification' },
      ];
      const picked = await this.host.quickPick(picks, { title: `LSP Agent: Evidence for ${name}`, placeHolder: 'Which file holds the independent evidence?' });
      if (!picked) {
        return undefined;
      }
      if (picked.uri) {
        return picked.uri;
      }
    }
    return this.host.pickFile({ title: `LSP Agent: Evidence for ${name}`, openLabel: 'Validate' });
  }
}
