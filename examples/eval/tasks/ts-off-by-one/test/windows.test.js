const test = require("node:test");
const assert = require("node:assert");
const { windows, last } = require("../out/windows.js");

test("windows", () => {
  assert.deepStrictEqual(windows([1, 2, 3], 2), [[1, 2], [2, 3]]);
  assert.deepStrictEqual(windows([1, 2], 2), [[1, 2]]);
  assert.deepStrictEqual(windows([1], 2), []);
});

test("last", () => {
  assert.strictEqual(last([1, 2, 3]), 3);
  assert.strictEqual(last([]), undefined);
});
