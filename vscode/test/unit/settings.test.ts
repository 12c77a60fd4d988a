import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { affectsServer, answerConfiguration, DEFAULTS, needsRestart, readerFromObject, toServerSettings } from "../../src/settings";

describe("toServerSettings", () => {
  it("gives the server's defaults when nothing is set", () => {
    assert.deepEqual(toServerSettings(() => undefined), { ...DEFAULTS, agents: [] });
  });

  it("maps the VS Code settings to the server's flat section", () => {
    const read = readerFromObject({
      lint: { enable: false }, inlayHints: { enable: false }, diagnostics: { debounceMs: 400 }, maxDocumentBytes: 0,
      agents: ["scanner", "reporter"], interpreter: ["python3"],
    });
    assert.deepEqual(toServerSettings(read), { lint: false, inlayHints: false, debounceMs: 400, maxDocumentBytes: 0, agents: ["scanner", "reporter"] });
  });

  it("replaces malformed values with defaults and drops invalid agent names", () => {
    const read = readerFromObject({
      lint: { enable: "no" }, diagnostics: { debounceMs: -5 }, agents: ["ok", "Bad Name", 3, "also-ok_2"],
    });
    assert.deepEqual(toServerSettings(read), { lint: true, inlayHints: true, debounceMs: 150, maxDocumentBytes: 5_000_000, agents: ["ok", "also-ok_2"] });
    assert.equal(toServerSettings(readerFromObject({ diagnostics: { debounceMs: 1.5 } })).debounceMs, 150);
    assert.equal(toServerSettings(readerFromObject({ diagnostics: { debounceMs: 20000 } })).debounceMs, 150);
    assert.deepEqual(toServerSettings(readerFromObject({ agents: "scanner" })).agents, []);
    assert.equal(toServerSettings(readerFromObject({ maxDocumentBytes: -1 })).maxDocumentBytes, 5_000_000);
    assert.equal(toServerSettings(readerFromObject({ maxDocumentBytes: 2.5 })).maxDocumentBytes, 5_000_000);
  });
});

describe("workspaceRoot", () => {
  it("is not sent, even when an old settings file still sets it (the server resolves no file predicate)", () => {
    assert.deepEqual(toServerSettings(readerFromObject({ workspaceRoot: "/elsewhere" })), { ...DEFAULTS, agents: [] });
    const [answer] = answerConfiguration([{ section: "lockgate" }], [null], () => readerFromObject({ workspaceRoot: "/elsewhere" }));
    assert.deepEqual(answer, { ...DEFAULTS, agents: [] });
  });
});

describe("configuration changes", () => {
  const affects = (...keys: string[]) => (section: string) => keys.some((k) => k === section || k.startsWith(section + "."));

  it("restarts the server for the interpreter and server arguments only", () => {
    assert.ok(needsRestart(affects("lockgate.interpreter")));
    assert.ok(needsRestart(affects("lockgate.serverArgs")));
    assert.ok(!needsRestart(affects("lockgate.lint.enable")));
    assert.ok(!needsRestart(affects("editor.tabSize")));
  });

  it("pushes settings the server reads without a restart", () => {
    assert.ok(affectsServer(affects("lockgate.lint.enable")));
    assert.ok(affectsServer(affects("lockgate.agents")));
    assert.ok(!affectsServer(affects("lockgate.trace.server")));
  });
});

describe("answerConfiguration", () => {
  it("answers the lockgate section in the server's shape and passes other sections through", () => {
    const items = [{ section: "lockgate", scopeUri: "file:///w" }, { section: "editor" }];
    const scopes: (string | undefined)[] = [];
    const got = answerConfiguration(items, [{ lint: { enable: false } }, { tabSize: 2 }], (scope) => {
      scopes.push(scope);
      return readerFromObject({ lint: { enable: false } });
    });
    assert.deepEqual(got, [{ lint: false, inlayHints: true, debounceMs: 150, maxDocumentBytes: 5_000_000, agents: [] }, { tabSize: 2 }]);
    assert.deepEqual(scopes, ["file:///w"]);
  });
});
