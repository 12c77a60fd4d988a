import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { run } from "../../src/process";
import { validateCommand } from "../../src/serverCommand";
import { parseValidation, summarise, toUtf16, type Problem } from "../../src/validation";
import { EXAMPLES_DIR } from "./paths";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

describe("Validate Workspace against the real CLI", () => {
  it("checks every example spec with no errors", async () => {
    const result = await run(validateCommand([PYTHON], [EXAMPLES_DIR], { lint: true, agents: ["scanner", "measurer", "reporter"] }));
    const got = parseValidation(result);
    assert.ok(got.ok, JSON.stringify(got));
    if (!got.ok) return;
    assert.ok(got.files.length >= 5, `found ${got.files.length} examples`);
    assert.deepEqual(got.files.flatMap((f) => f.problems.filter((p) => p.severity === "error")), []);
    assert.match(summarise(got.files), /^\d+ specs checked/);
  });

  it("reports an unknown step with its code, range and hint", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "lockgate-validate-"));
    try {
      const text = "version: 1\nflows:\n  entry: main\n  main:\n    input: {}\n    steps:\n      - id: a\n        set: {x: \"1\"}\n        out: R\n        after: [nope]\n";
      writeFileSync(path.join(dir, "bad.stratum.yaml"), text);
      writeFileSync(path.join(dir, "ignored.yaml"), "not: a spec\n");
      const got = parseValidation(await run(validateCommand([PYTHON], [dir], { lint: false, agents: [] })));
      assert.ok(got.ok, JSON.stringify(got));
      if (!got.ok) return;
      assert.deepEqual(got.files.map((f) => path.basename(f.file)), ["bad.stratum.yaml"]);
      const problems = got.files[0].problems;
      assert.ok(problems.every((p) => /^LG\d{3}$/.test(p.code)), JSON.stringify(problems));
      const nope = problems.find((p) => p.message.includes("nope"));
      assert.ok(nope, JSON.stringify(problems));
      assert.deepEqual(nope.range, { start: { line: 9, character: 16 }, end: { line: 9, character: 20 } });
      assert.match(summarise(got.files), /^1 spec checked: \d+ errors? in 1 file$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("treats a folder without specs as nothing to report", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "lockgate-empty-"));
    try {
      const got = parseValidation(await run(validateCommand([PYTHON], [dir], { lint: true, agents: [] })));
      assert.deepEqual(got, { ok: true, files: [] });
      assert.equal(summarise([]), "no spec files found (*.stratum.yaml, *.stratum.yml)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("parseValidation", () => {
  it("turns unusable output into an error message", () => {
    assert.deepEqual(parseValidation({ code: 2, stdout: "", stderr: "Error: boom\n" }), { ok: false, error: "Error: boom" });
    assert.deepEqual(parseValidation({ code: null, stdout: "", stderr: "", errorCode: "ENOENT", errorMessage: "spawn python9 ENOENT" }),
      { ok: false, error: "spawn python9 ENOENT" });
    assert.equal(parseValidation({ code: 0, stdout: "{}", stderr: "" }).ok, false);
  });

  it("skips malformed entries and clamps malformed positions", () => {
    const stdout = JSON.stringify([
      { file: "a.stratum.yaml", diagnostics: [{ code: "LG101", message: "m", severity: "weird", range: { start: { line: -1, character: "x" } } }, 5] },
      { nofile: true },
    ]);
    const got = parseValidation({ code: 1, stdout, stderr: "" });
    assert.deepEqual(got, { ok: true, files: [{ file: "a.stratum.yaml", problems: [
      { code: "LG101", message: "m", severity: "error", range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } } },
    ] }] });
  });

  it("counts errors, warnings and affected files", () => {
    const p = (severity: Problem["severity"]): Problem => ({ code: "LG1", message: "", severity, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } } });
    assert.equal(summarise([{ file: "a", problems: [p("error"), p("warning"), p("warning")] }, { file: "b", problems: [] }]),
      "2 specs checked: 1 error, 2 warnings in 1 file");
    assert.equal(summarise([{ file: "a", problems: [] }]), "1 spec checked: no problems");
  });
});

describe("toUtf16", () => {
  it("shifts characters after astral code points on the same line", () => {
    const text = "do: \"🚀 go ${x}\"\nnext: 1\n";
    const problem: Problem = { code: "LG1", message: "", severity: "error", range: { start: { line: 0, character: 10 }, end: { line: 1, character: 4 } } };
    const [got] = toUtf16([problem], text);
    assert.deepEqual(got.range, { start: { line: 0, character: 11 }, end: { line: 1, character: 4 } });
    assert.equal(text.split("\n")[0].slice(got.range.start.character, got.range.start.character + 4), "${x}");
  });
});
