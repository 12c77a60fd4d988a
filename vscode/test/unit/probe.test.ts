import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { fixCommand, installCommand, LSP_REQUIREMENTS, parseProbe, probe, problemMessage, pythonFor } from "../../src/probe";
import { REPO_DIR } from "./paths";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

/** A folder holding an importable `pygls` whose installed version is `version`, for PYTHONPATH. */
function fakePygls(version: string): string {
  const root = mkdtempSync(path.join(tmpdir(), "lockgate-probe-"));
  mkdirSync(path.join(root, "pygls"));
  writeFileSync(path.join(root, "pygls", "__init__.py"), "");
  mkdirSync(path.join(root, `pygls-${version}.dist-info`));
  writeFileSync(path.join(root, `pygls-${version}.dist-info`, "METADATA"), `Metadata-Version: 2.1\nName: pygls\nVersion: ${version}\n`);
  return root;
}

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

  describe("with pygls 1.x first on the path", () => {
    const folder = fakePygls("1.3.1");
    after(() => rmSync(folder, { recursive: true, force: true }));

    it("refuses it, naming the interpreter, the version it has and the one the server needs", async () => {
      const got = await probe([PYTHON], { env: { ...process.env, PYTHONPATH: folder } });
      assert.equal(got.ok, false, JSON.stringify(got));
      if (got.ok) return;
      assert.deepEqual({ problem: got.problem, detail: got.detail, upgrade: got.upgrade },
        { problem: "old-lsp-extra", detail: "pygls 1.3.1, the server needs pygls>=2.0", upgrade: ["pygls>=2.0"] });
      const message = problemMessage(got, [PYTHON]);
      assert.ok(got.python && message.includes(`cannot run in ${got.python}: it has pygls 1.3.1, the server needs pygls>=2.0`), message);
      assert.ok(message.endsWith(`Fix: ${installCommand([got.python], ["pygls>=2.0"])}`), message);
    });
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

  it("refuses an old major of each part of the lsp extra, and accepts newer ones", () => {
    const probed = (versions: Record<string, string>) => parseProbe({ code: 0, stdout: JSON.stringify({ python: "/v/bin/python", lockgate: "0.1.0", missing: [], versions }), stderr: "" });
    const both = probed({ pygls: "1.3.1", lsprotocol: "2023.0.1" });
    assert.deepEqual(both, {
      ok: false, problem: "old-lsp-extra", python: "/v/bin/python", upgrade: ["pygls>=2.0", "lsprotocol>=2025.0.0"],
      detail: "pygls 1.3.1, the server needs pygls>=2.0; lsprotocol 2023.0.1, the server needs lsprotocol>=2025.0.0",
    });
    assert.equal(fixCommand(both as Extract<typeof both, { ok: false }>, ["python3"]), "/v/bin/python -m pip install 'pygls>=2.0' 'lsprotocol>=2025.0.0'");
    assert.equal(probed({ pygls: "2.0.0a1", lsprotocol: "2025.0.0" }).ok, true);
    assert.equal(probed({ pygls: "3.1", lsprotocol: "2026.1" }).ok, true);
    assert.equal(probed({ pygls: "unknown" }).ok, true, "a version it cannot read is left to the server's start");
    assert.equal(parseProbe({ code: 0, stdout: JSON.stringify({ python: "/p", lockgate: "0.1.0", missing: [] }), stderr: "" }).ok, true);
  });

  it("has no install fix for an interpreter that does not run", () => {
    assert.equal(fixCommand({ ok: false, problem: "no-interpreter", detail: "ENOENT" }, ["python9"]), undefined);
    assert.equal(fixCommand({ ok: false, problem: "no-lsp-extra", detail: "missing pygls", python: "/p" }, ["python3"]), "/p -m pip install 'lockgate[lsp]'");
  });

  it("checks the majors pyproject.toml's lsp extra requires", () => {
    const pyproject = readFileSync(path.join(REPO_DIR, "pyproject.toml"), "utf8");
    const extra = /^lsp = \[(.*)\]$/m.exec(pyproject);
    assert.ok(extra, "pyproject.toml has an lsp extra on one line");
    const required = [...extra[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(LSP_REQUIREMENTS.map((r) => r.requirement), required);
    for (const r of LSP_REQUIREMENTS) assert.match(r.requirement, new RegExp(`^${r.module}>=${r.major}(\\.|$)`));
  });

  it("treats a timeout as a broken interpreter", () => {
    const got = parseProbe({ code: null, stdout: "", stderr: "", errorCode: "ETIMEDOUT", errorMessage: "timed out after 20000 ms" });
    assert.deepEqual(got, { ok: false, problem: "broken-interpreter", detail: "timed out after 20000 ms" });
  });
});
