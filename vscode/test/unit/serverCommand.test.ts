import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildServerCommand, formatCommandLine, graphCommand, lockgateCommand, serverArgs, serverExecutable, shellQuote, validateCommand,
} from "../../src/serverCommand";

describe("buildServerCommand", () => {
  it("is <interpreter> -m lockgate lsp by default", () => {
    assert.deepEqual(buildServerCommand(["python3"], undefined), { command: "python3", args: ["-m", "lockgate", "lsp"], problems: [] });
  });

  it("keeps an interpreter prefix and appends lockgate.serverArgs", () => {
    const got = buildServerCommand(["uv", "run", "python"], ["--log-file", "/tmp/l.log", "--log-level", "debug"]);
    assert.equal(got.command, "uv");
    assert.deepEqual(got.args, ["run", "python", "-m", "lockgate", "lsp", "--log-file", "/tmp/l.log", "--log-level", "debug"]);
    assert.deepEqual(got.problems, []);
  });

  it("drops non-strings and transport options from serverArgs, saying why", () => {
    const got = buildServerCommand(["python3"], ["--tcp", "127.0.0.1:2087", 7, "--log-level=debug", "--tcp=:1"]);
    assert.deepEqual(got.args, ["-m", "lockgate", "lsp", "--log-level=debug"]);
    assert.equal(got.problems.length, 3);
    assert.match(got.problems[0], /--tcp is not supported/);
    assert.match(got.problems[1], /serverArgs\[2\] is not a string/);
  });

  it("rejects a serverArgs value that is not an array", () => {
    assert.deepEqual(serverArgs("--log-level debug").args, []);
    assert.match(serverArgs("--log-level debug").problems[0], /must be an array of strings/);
    assert.deepEqual(serverArgs(null), { args: [], problems: [] });
  });

  it("hands vscode-languageclient the exact arguments, with no transport (which would append --stdio)", () => {
    const executable = serverExecutable(buildServerCommand(["python3"], ["--log-level", "debug"]), "/w");
    assert.deepEqual(executable, { command: "python3", args: ["-m", "lockgate", "lsp", "--log-level", "debug"], options: { cwd: "/w" } });
    assert.ok(!("transport" in executable));
    assert.deepEqual(serverExecutable({ command: "python3", args: [] }).options, {});
  });

  it("refuses an empty interpreter", () => {
    assert.throws(() => lockgateCommand([], ["lsp"]), TypeError);
  });
});

describe("CLI command lines", () => {
  it("draws a graph as SVG, for a named flow when given", () => {
    assert.deepEqual(graphCommand(["python3"], "/w/a.stratum.yaml").args, ["-m", "lockgate", "graph", "/w/a.stratum.yaml", "--format", "svg"]);
    assert.deepEqual(graphCommand(["python3"], "/w/a.stratum.yaml", "main").args.slice(-2), ["--flow", "main"]);
  });

  it("validates folders as JSON with the lint and agent settings", () => {
    const line = validateCommand(["python3"], ["/w", "/x y"], { lint: false, agents: ["scanner", "reporter"] });
    assert.deepEqual(line.args, ["-m", "lockgate", "validate", "--format", "json", "--no-lint", "--agent", "scanner", "--agent", "reporter", "--", "/w", "/x y"]);
    assert.ok(!validateCommand(["python3"], ["/w"], { lint: true, agents: [] }).args.includes("--no-lint"));
  });

  it("renders a command line to paste into a shell", () => {
    assert.equal(formatCommandLine({ command: "/a b/python", args: ["-m", "lockgate", "it's"] }), `'/a b/python' -m lockgate 'it'\\''s'`);
    assert.equal(shellQuote("lockgate[lsp]"), "'lockgate[lsp]'");
    assert.equal(shellQuote("/usr/bin/python3"), "/usr/bin/python3");
  });
});
