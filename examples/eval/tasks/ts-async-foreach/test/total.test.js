const test = require("node:test");
const assert = require("node:assert");
const { totalSize } = require("../out/total.js");

test("sums every size", async () => {
  const sizes = { a: 1, b: 20, c: 300 };
  const size = (p) => new Promise((resolve) => setTimeout(() => resolve(sizes[p]), 5));
  assert.strictEqual(await totalSize(["a", "b", "c"], size), 321);
  assert.strictEqual(await totalSize([], size), 0);
});
