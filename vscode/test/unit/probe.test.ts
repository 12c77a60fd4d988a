import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { installCommand, parseProbe, probe, problemMessage, pythonFor } from "../../src/probe";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

describe("probe (a real interpreter)", () => {
  it("finds lockgate and the lsp extra in the interpreter the tests run with", async () => {
    const got = await probe([PYTHON]);
    assert.equal(got.ok, true, JSON.stringify(got));
    if (got.ok) {
      assert.match(got.lockgateVersion, /^\d+\.\d+/);
      assert.ok(got.python.length > 0);
    }
  });

  it("reports a missing lockgate, with the pip fix for that interpreter", async () => {
    // -I -S: no site-packages, so lockgate cannot be imported (a bare interpreter)
    const got = await probe([PYTHON, "-I", "-S"]);
    assert.equal(got.ok, false);
    if (!got.ok) {
      assert.equal(got.problem, "no-lockgate");
      assert.match(got.detail, /ModuleNotFoundError/);
      const message = problemMessage(got, [PYTHON, "-I", "-S"]);
      assert.match(message, /not installed in/);
      assert.match(message, /-m pip install 'lockgate\[lsp\]'/);
    }
  });

  it("reports an interpreter that does not exist", async () => {
    const got = await probe(["/nonexistent/bin/python3"]);
    assert.deepEqual({ ok: got.ok, problem: !got.ok && got.problem }, { ok: false, problem: "no-interpreter" });
    if (!got.ok) assert.match(problemMessage(got, ["/nonexistent/bin/python3"]), /cannot start the Python interpreter '\/nonexistent\/bin\/python3'/);
  });

  it("reports a program that is not Python", async () => {
    const got = await probe(["false"]);
    assert.equal(!got.ok && got.problem, "broken-interpreter");
  });
});

describe("parseProbe", () => {
  it("names the missing parts of the lsp extra", () => {
    const got = parseProbe({ code: 0, stdout: JSON.stringify({ python: "/v/bin/python", lockgate: "0.1.0", missing: ["pygls"] }) + "\n", stderr: "" });
    assert.deepEqual(got, { ok: false, problem: "no-lsp-extra", detail: "missing pygls", python: "/v/bin/python" });
    assert.match(problemMessage(got as Extract<typeof got, { ok: false }>, ["python3"]), /Fix: \/v\/bin\/python -m pip install 'lockgate\[lsp\]'/);
  });

  it("reads the last line (site customisations may print before it)", () => {
    const got = parseProbe({ code: 0, stdout: "hello from sitecustomize\n" + JSON.stringify({ python: "/p", lockgate: "1.2.3", missing: [] }), stderr: "" });
    assert.deepEqual(got, { ok: true, python: "/p", lockgateVersion: "1.2.3" });
  });

  it("keeps a command prefix when installing (uv run python)", () => {
    assert.deepEqual(pythonFor({ python: "/x/python" }, ["uv", "run", "python"]), ["uv", "run", "python"]);
    assert.deepEqual(pythonFor({ python: "/x/python" }, ["python3"]), ["/x/python"]);
    assert.equal(installCommand(["uv", "run", "python"]), "uv run python -m pip install 'lockgate[lsp]'");
  });

  it("treats a timeout as a broken interpreter", () => {
    const got = parseProbe({ code: null, stdout: "", stderr: "", errorCode: "ETIMEDOUT", errorMessage: "timed out after 20000 ms" });
    assert.deepEqual(got, { ok: false, problem: "broken-interpreter", detail: "timed out after 20000 ms" });
  });
});
