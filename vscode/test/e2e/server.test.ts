/**
 * End to end: start the language server with exactly the command line the extension builds
 * (`python3 -m lockgate lsp`, or the interpreter in LOCKGATE_TEST_INTERPRETER, resolved the way
 * the `lockgate.interpreter` setting is) and talk LSP to it over stdio with vscode-jsonrpc.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { resolveInterpreter } from "../../src/interpreter";
import { buildServerCommand, serverExecutable } from "../../src/serverCommand";
import { answerConfiguration, readerFromObject, SECTION, toServerSettings } from "../../src/settings";

const TIMEOUT_MS = 30_000;

const INVALID = `version: 1
contracts:
  Result:
    summary: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "\${check.output}"
      contract: Result
    steps:
      - id: write
        do: "Write about \${input.topic}"
        agent: claude
        out: Result
      - id: check
        after: [wirte]
        do: "Check \${write.output.summary}"
        agent: claude
        out: Result
`;
const VALID = INVALID.replace("[wirte]", "[write]");
const WITH_UNUSED_CONTRACT = VALID.replace("contracts:\n", "contracts:\n  Unused:\n    note: string\n");

interface Diagnostic {
  code?: string | number;
  message: string;
  severity?: number;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

interface Publish { uri: string; version?: number; diagnostics: Diagnostic[] }

/** A server process and a JSON-RPC connection to it, with the client side of settings. */
class Session {
  readonly published: Publish[] = [];
  private waiters: { test: (p: Publish) => boolean; resolve: (p: Publish) => void }[] = [];
  settings: Record<string, unknown> = {};
  readonly configurationRequests: unknown[] = [];

  constructor(readonly proc: ChildProcessWithoutNullStreams, readonly connection: MessageConnection, readonly stderr: string[]) {
    connection.onNotification("textDocument/publishDiagnostics", (p: Publish) => {
      this.published.push(p);
      this.waiters = this.waiters.filter((w) => (w.test(p) ? (w.resolve(p), false) : true));
    });
    connection.onRequest("workspace/configuration", (params: { items: { section?: string; scopeUri?: string }[] }) => {
      this.configurationRequests.push(params);
      return answerConfiguration(params.items, params.items.map(() => null), () => readerFromObject(this.settings));
    });
    connection.onRequest("client/registerCapability", () => null);
    connection.onRequest("window/workDoneProgress/create", () => null);
    connection.listen();
  }

  /** The first publish (already received or future) for `uri` that passes `test`. */
  diagnostics(uri: string, test: (d: Diagnostic[]) => boolean): Promise<Publish> {
    const match = (p: Publish) => p.uri === uri && test(p.diagnostics);
    const seen = this.published.find(match);
    if (seen) return Promise.resolve(seen);
    return withTimeout(new Promise((resolve) => this.waiters.push({ test: match, resolve })), `diagnostics for ${uri}`, this.stderr);
  }
}

function withTimeout<T>(promise: Promise<T>, what: string, stderr: string[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${TIMEOUT_MS} ms; server stderr:\n${stderr.join("")}`)), TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function launch(cwd: string): Session {
  const interpreter = resolveInterpreter({ configured: process.env.LOCKGATE_TEST_INTERPRETER, platform: process.platform });
  const executable = serverExecutable(buildServerCommand(interpreter.command, []), cwd);
  const proc = spawn(executable.command, executable.args, { ...executable.options, stdio: ["pipe", "pipe", "pipe"] });
  const stderr: string[] = [];
  proc.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
  const connection = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
  return new Session(proc, connection, stderr);
}

async function initialize(session: Session, root: string, capabilities: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = await withTimeout(session.connection.sendRequest("initialize", {
    processId: process.pid,
    clientInfo: { name: "lockgate-vscode-e2e" },
    rootUri: pathToFileURL(root).href,
    workspaceFolders: [{ uri: pathToFileURL(root).href, name: "w" }],
    initializationOptions: { [SECTION]: toServerSettings(readerFromObject(session.settings)) },
    capabilities,
  }), "initialize result", session.stderr) as Record<string, unknown>;
  await session.connection.sendNotification("initialized", {});
  return result;
}

async function shutdown(session: Session): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => session.proc.once("exit", (code) => resolve(code)));
  await withTimeout(session.connection.sendRequest("shutdown"), "shutdown answer", session.stderr);
  await session.connection.sendNotification("exit");
  const code = await withTimeout(exited, "server exit", session.stderr);
  session.connection.dispose();
  return code;
}

const PUSH_CAPABILITIES = {
  workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false }, workspaceFolders: true },
  textDocument: {
    synchronization: { didSave: true },
    publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true, dataSupport: true },
  },
  general: { positionEncodings: ["utf-16"] },
};

/** The range of the first `needle` in `text`, as LSP line/character (ASCII text: UTF-16 = code points). */
function rangeOf(text: string, needle: string) {
  const offset = text.indexOf(needle);
  const before = text.slice(0, offset).split("\n");
  const line = before.length - 1;
  const character = before[line].length;
  return { start: { line, character }, end: { line, character: character + needle.length } };
}

describe("lockgate lsp, started as the extension starts it", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "lockgate-vscode-e2e-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("publishes an LG diagnostic for an invalid spec, clears it when fixed, and follows the lint setting", async () => {
    const session = launch(dir);
    try {
      session.settings = { lint: { enable: true } };
      const init = await initialize(session, dir, PUSH_CAPABILITIES);
      assert.equal((init.serverInfo as { name?: string } | undefined)?.name, "lockgate");

      const uri = pathToFileURL(path.join(dir, "flow.stratum.yaml")).href;
      await session.connection.sendNotification("textDocument/didOpen", {
        textDocument: { uri, languageId: "stratum-yaml", version: 1, text: INVALID },
      });
      const first = await session.diagnostics(uri, (d) => d.length > 0);
      const unknown = first.diagnostics.find((d) => d.message.includes("wirte"));
      assert.ok(unknown, `a diagnostic about 'wirte' in ${JSON.stringify(first.diagnostics)}`);
      assert.match(String(unknown.code), /^LG\d{3}$/);
      assert.equal(unknown.severity, 1, "an error");
      assert.deepEqual(unknown.range, rangeOf(INVALID, "wirte"));

      await session.connection.sendNotification("textDocument/didChange", {
        textDocument: { uri, version: 2 },
        contentChanges: [{ text: WITH_UNUSED_CONTRACT }],
      });
      const fixed = await session.diagnostics(uri, (d) => !d.some((x) => x.message.includes("wirte")));
      assert.deepEqual(fixed.diagnostics.filter((d) => d.severity === 1), [], "no errors once fixed");
      const lint = fixed.diagnostics.filter((d) => String(d.code).startsWith("LG9"));
      assert.ok(lint.some((d) => d.message.includes("Unused")), `a lint warning about the unused contract in ${JSON.stringify(fixed.diagnostics)}`);

      // the extension's settings path: didChangeConfiguration, the server pulls `lockgate`, we answer lint off
      session.settings = { lint: { enable: false } };
      const before = session.configurationRequests.length;
      await session.connection.sendNotification("workspace/didChangeConfiguration", { settings: null });
      await session.diagnostics(uri, (d) => d.length === 0);
      assert.ok(session.configurationRequests.length > before, "the server asked for its settings");

      assert.equal(await shutdown(session), 0);
    } finally {
      if (session.proc.exitCode === null) session.proc.kill("SIGKILL");
    }
  });

  it("answers pull diagnostics the way vscode-languageclient asks for them", async () => {
    const session = launch(dir);
    try {
      await initialize(session, dir, {
        ...PUSH_CAPABILITIES,
        textDocument: { ...PUSH_CAPABILITIES.textDocument, diagnostic: { dynamicRegistration: false, relatedDocumentSupport: false } },
      });
      const uri = pathToFileURL(path.join(dir, "pull.stratum.yaml")).href;
      await session.connection.sendNotification("textDocument/didOpen", {
        textDocument: { uri, languageId: "stratum-yaml", version: 1, text: INVALID },
      });
      const report = await withTimeout(session.connection.sendRequest("textDocument/diagnostic", { textDocument: { uri } }),
        "a diagnostic report", session.stderr) as { kind: string; items: Diagnostic[] };
      assert.equal(report.kind, "full");
      const unknown = report.items.find((d) => d.message.includes("wirte"));
      assert.ok(unknown);
      assert.match(String(unknown.code), /^LG\d{3}$/);
      assert.deepEqual(unknown.range, rangeOf(INVALID, "wirte"));
      assert.equal(session.published.length, 0, "a pull client gets no pushed diagnostics");
      assert.equal(await shutdown(session), 0);
    } finally {
      if (session.proc.exitCode === null) session.proc.kill("SIGKILL");
    }
  });
});
