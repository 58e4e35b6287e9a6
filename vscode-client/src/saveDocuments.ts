// agent/saveDocuments: before verify_project runs, the server asks the client to save the open
// documents the agent edited, so the checks test what is in the buffers. The documents are
// reached through a small interface (VS Code's workspace.textDocuments in the extension).

import type { SaveDocumentsParams, SaveDocumentsResult } from './protocol.js';

/** What this client always sends back: both lists, possibly empty. */
export type SaveAnswer = Required<SaveDocumentsResult>;

export interface SavableDocument {
  readonly isDirty: boolean;
  save(): PromiseLike<boolean>;
}

export interface OpenDocuments {
  /** The open document with this URI, or undefined when it is not open. */
  find(uri: string): SavableDocument | undefined;
}

function uris(params: unknown): string[] {
  const raw = (params as Partial<SaveDocumentsParams> | null)?.uris;
  return Array.isArray(raw) ? raw.filter((u): u is string => typeof u === 'string') : [];
}

export async function saveDocuments(params: unknown, documents: OpenDocuments): Promise<SaveAnswer> {
  const result: SaveAnswer = { saved: [], failed: [] };
  for (const uri of uris(params)) {
    const document = documents.find(uri);
    if (!document) {
      result.failed.push({ uri, reason: 'not open in VS Code' });
      continue;
    }
    if (!document.isDirty) {
      result.saved.push(uri); // the buffer already equals the file
      continue;
    }
    try {
      if (await document.save()) {
        result.saved.push(uri);
      } else {
        result.failed.push({ uri, reason: 'VS Code did not save it (read-only file, or a save participant refused)' });
      }
    } catch (error) {
      result.failed.push({ uri, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return result;
}
