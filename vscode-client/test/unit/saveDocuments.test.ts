import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { saveDocuments } from '../../src/saveDocuments.js';
import type { SavableDocument } from '../../src/saveDocuments.js';

function doc(isDirty: boolean, save: () => Promise<boolean>): SavableDocument & { saves: number } {
  const d = {
    isDirty,
    saves: 0,
    save: () => {
      d.saves += 1;
      return save();
    },
  };
  return d;
}

describe('saveDocuments', () => {
  it('saves dirty documents and reports clean ones as saved without writing', async () => {
    const dirty = doc(true, () => Promise.resolve(true));
    const clean = doc(false, () => Promise.resolve(true));
    const docs = new Map([['file:///a.py', dirty], ['file:///b.py', clean]]);
    const result = await saveDocuments({ uris: ['file:///a.py', 'file:///b.py'] }, { find: (uri) => docs.get(uri) });
    assert.deepEqual(result, { saved: ['file:///a.py', 'file:///b.py'], failed: [] });
    assert.equal(dirty.saves, 1);
    assert.equal(clean.saves, 0);
  });

  it('reports documents that are not open, refuse to save or throw', async () => {
    const refused = doc(true, () => Promise.resolve(false));
    const broken = doc(true, () => Promise.reject(new Error('disk full')));
    const docs = new Map([['file:///r.py', refused], ['file:///x.py', broken]]);
    const result = await saveDocuments({ uris: ['file:///gone.py', 'file:///r.py', 'file:///x.py'] }, { find: (uri) => docs.get(uri) });
    assert.deepEqual(result.saved, []);
    assert.deepEqual(result.failed.map((f) => f.uri), ['file:///gone.py', 'file:///r.py', 'file:///x.py']);
    assert.equal(result.failed[0]!.reason, 'not open in VS Code');
    assert.match(result.failed[1]!.reason, /did not save/);
    assert.equal(result.failed[2]!.reason, 'disk full');
  });

  it('answers malformed params with an empty result instead of failing', async () => {
    assert.deepEqual(await saveDocuments(null, { find: () => undefined }), { saved: [], failed: [] });
    assert.deepEqual(await saveDocuments({ uris: [1, 'file:///z'] }, { find: () => undefined }), {
      saved: [],
      failed: [{ uri: 'file:///z', reason: 'not open in VS Code' }],
    });
  });
});
