import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { lineRange, selectionCorrection } from '../../src/corrections.js';

const selection = { path: 'src/app.py', startLine: 10, endLine: 12, text: 'def f():\n    return 1\n', languageId: 'python' };

describe('selectionCorrection', () => {
  it('puts the note first, then the file, line range and the code', () => {
    assert.equal(
      selectionCorrection(selection, 'Keep this signature'),
      'Keep this signature\n\nFrom src/app.py, lines 10-12:\n```python\ndef f():\n    return 1\n\n```',
    );
  });

  it('has a default note and a single-line range', () => {
    const text = selectionCorrection({ ...selection, startLine: 4, endLine: 4 }, '  ');
    assert.match(text, /^Look at this part of the code/);
    assert.match(text, /From src\/app.py, line 4:/);
    assert.equal(lineRange({ startLine: 1, endLine: 2 }), 'lines 1-2');
  });

  it('uses a fence longer than any backticks in the selection', () => {
    const text = selectionCorrection({ ...selection, text: 'x = """```"""' }, 'n');
    assert.match(text, /````python\nx = """```"""\n````$/);
  });

  it('cuts the selection (never the note) to fit the server limit, and says so', () => {
    const text = selectionCorrection({ ...selection, text: 'y'.repeat(500) }, 'the note', 200);
    assert.ok(text.length <= 200);
    assert.ok(text.startsWith('the note'));
    assert.match(text, /\[selection cut: 500 characters selected\]$/);
  });
});
