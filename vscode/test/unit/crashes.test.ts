/**
 * The crash policy and the messages for a server that ends: restarts counted in a window, no
 * restart of a server that never started, and notifications that quote what the real server
 * printed (a wrong `lockgate.serverArgs` run against the real `lockgate lsp`).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { CrashPolicy, gaveUpMessage, isReplacedClientMessage, OutputTail, startFailureMessage } from "../../src/crashes";
import { run } from "../../src/process";
import { buildServerCommand, formatCommandLine } from "../../src/serverCommand";
import { EXTENSION_DIR } from "./paths";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

describe("CrashPolicy", () => {
  it("restarts a running server four times within three minutes, then gives up", () => {
    let now = 0;
    const policy = new CrashPolicy(4, 180_000, () => now);
    const decisions = [1, 2, 3, 4, 5].map(() => {
      now += 10_000;
      return policy.onEnded(true);
    });
    assert.deepEqual(decisions.map((d) => d.restart), [true, true, true, true, false]);
    assert.equal(decisions[4].crashes, 5);
  });

  it("forgets crashes older than the window", () => {
    let now = 0;
    const policy = new CrashPolicy(1, 1_000, () => now);
    assert.equal(policy.onEnded(true).restart, true);
    now = 5_000;
    assert.deepEqual(policy.onEnded(true), { restart: true, crashes: 1 });
    assert.deepEqual(policy.onEnded(true), { restart: false, crashes: 2 });
  });

  it("never restarts a server that ended before it was running", () => {
    assert.deepEqual(new CrashPolicy().onEnded(false), { restart: false, crashes: 1 });
  });
});

describe("OutputTail", () => {
  it("keeps the last non-blank lines across chunks, bounded", () => {
    const tail = new OutputTail(40);
    tail.push("x".repeat(100) + "\nTraceback (most");
    tail.push(" recent call last):\n\n  boom\r\nValueError: bad\n");
    assert.equal(tail.lastLines(2), "boom / ValueError: bad");
    tail.clear();
    assert.equal(tail.lastLines(), "");
  });
});

describe("messages", () => {
  it("a start failure quotes the server's stderr, else the client's error, and names the settings", () => {
    const withStderr = startFailureMessage("python3 -m lockgate lsp --x", "Error: No such option '--x'.", "Error: connection closed");
    assert.match(withStderr, /exited while starting \(python3 -m lockgate lsp --x\): Error: No such option '--x'\./);
    assert.match(withStderr, /lockgate\.serverArgs and lockgate\.interpreter.*Lockgate: Restart Server/);
    assert.match(startFailureMessage("python3 -m lockgate lsp", "", "Error: connection closed"), /\): Error: connection closed\. Check/);
  });

  it("giving up says how often, what the server said last, and how to try again", () => {
    const message = gaveUpMessage(5, "MemoryError");
    assert.match(message, /stopped 5 times in 3 minutes and is not restarted again\. Its last output: MemoryError\./);
    assert.match(message, /Lockgate: Restart Server/);
    assert.doesNotMatch(gaveUpMessage(5, ""), /last output/);
  });

  it("replaces exactly the client notifications about a dead server, as vscode-languageclient words them", () => {
    const client = readFileSync(path.join(EXTENSION_DIR, "node_modules", "vscode-languageclient", "lib", "common", "client.js"), "utf8");
    for (const text of ["client: couldn't create connection to server.", "Restarting server failed", "Server will not be restarted."]) {
      assert.ok(client.includes(text), `vscode-languageclient no longer says ${JSON.stringify(text)}`);
      assert.ok(isReplacedClientMessage(`Lockgate ${text}`), text);
    }
    assert.equal(isReplacedClientMessage("Request textDocument/hover failed."), false);
  });
});

describe("a wrong lockgate.serverArgs against the real server", () => {
  it("ends the process at once, and the notification quotes why", async () => {
    const launch = buildServerCommand([PYTHON], ["--no-such-option"]);
    const result = await run(launch, { timeoutMs: 30_000 });
    assert.notEqual(result.code, 0);
    const tail = new OutputTail();
    tail.push(result.stderr);
    const message = startFailureMessage(formatCommandLine(launch), tail.lastLines(), "connection closed");
    assert.match(message, /No such option '--no-such-option'/);
    assert.match(message, /lockgate\.serverArgs/);
  });
});
