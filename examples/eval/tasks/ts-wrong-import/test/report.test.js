const test = require("node:test");
const assert = require("node:assert");
const { heading } = require("../out/report.js");

test("heading", () => {
  assert.strictEqual(heading("Sales", new Date(Date.UTC(2024, 1, 29, 23))), "Sales (2024-02-29)");
});
