import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { statusView } from "../../src/status";

describe("statusView", () => {
  it("shows each server state, and alarms only on failure", () => {
    assert.deepEqual(
      (["starting", "running", "stopped", "failed"] as const).map((s) => [statusView(s).text, statusView(s).alarm]),
      [["$(sync~spin) Lockgate", false], ["$(check) Lockgate", false], ["$(circle-slash) Lockgate", false], ["$(error) Lockgate", true]],
    );
  });

  it("puts the detail in the tooltip", () => {
    assert.match(statusView("failed", "lockgate is not installed in /usr/bin/python3").tooltip, /not running\nlockgate is not installed/);
  });
});
