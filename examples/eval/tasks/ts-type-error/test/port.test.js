const test = require("node:test");
const assert = require("node:assert");
const { parsePort } = require("../out/port.js");

test("valid ports", () => {
  assert.strictEqual(parsePort("8080"), 8080);
  assert.strictEqual(parsePort("1"), 1);
  assert.strictEqual(parsePort("65535"), 65535);
});

test("invalid ports throw RangeError", () => {
  for (const raw of ["abc", "0", "65536", "80.5", "-1"]) {
    assert.throws(() => parsePort(raw), RangeError, raw);
  }
});
