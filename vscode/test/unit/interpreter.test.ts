import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultPython, describeInterpreter, expandVariables, normaliseCommand, resolveInterpreter } from "../../src/interpreter";

describe("resolveInterpreter", () => {
  it("prefers the lockgate.interpreter setting over the Python extension", () => {
    const got = resolveInterpreter({ configured: "/opt/venv/bin/python", pythonExtension: ["/usr/bin/python3.12"], platform: "linux" });
    assert.deepEqual(got, { command: ["/opt/venv/bin/python"], source: "setting" });
  });

  it("accepts a command line such as uv run python", () => {
    const got = resolveInterpreter({ configured: ["uv", "run", "python"], platform: "linux" });
    assert.deepEqual(got.command, ["uv", "run", "python"]);
    assert.equal(got.source, "setting");
  });

  it("uses the Python extension's interpreter when the setting is empty", () => {
    for (const configured of [undefined, null, "", "   ", []]) {
      const got = resolveInterpreter({ configured, pythonExtension: "/home/me/.venv/bin/python", platform: "linux" });
      assert.deepEqual(got, { command: ["/home/me/.venv/bin/python"], source: "python-extension" }, JSON.stringify(configured));
    }
  });

  it("falls back to python3, or python on Windows", () => {
    assert.deepEqual(resolveInterpreter({ configured: undefined, platform: "linux" }), { command: ["python3"], source: "default" });
    assert.deepEqual(resolveInterpreter({ configured: undefined, platform: "darwin" }).command, ["python3"]);
    assert.deepEqual(resolveInterpreter({ configured: undefined, platform: "win32" }).command, ["python"]);
    assert.equal(defaultPython("win32"), "python");
  });

  it("ignores an unusable Python-extension answer", () => {
    assert.equal(resolveInterpreter({ configured: undefined, pythonExtension: [], platform: "linux" }).source, "default");
    assert.equal(resolveInterpreter({ configured: undefined, pythonExtension: "", platform: "linux" }).source, "default");
  });

  it("warns about a malformed setting and falls through", () => {
    for (const configured of [42, { path: "python" }, ["python", 3], [""], true]) {
      const got = resolveInterpreter({ configured, platform: "linux" });
      assert.equal(got.source, "default", JSON.stringify(configured));
      assert.match(got.warning ?? "", /ignored lockgate\.interpreter/);
    }
  });

  it("expands ${workspaceFolder}, ${userHome} and ${env:NAME} in the setting", () => {
    const got = resolveInterpreter({
      configured: ["${workspaceFolder}/.venv/bin/python", "-X", "${env:MODE}"],
      variables: { workspaceFolder: "/repo", env: { MODE: "dev" } },
    });
    assert.deepEqual(got.command, ["/repo/.venv/bin/python", "-X", "dev"]);
    assert.equal(expandVariables("${userHome}/py", { userHome: "/home/u" }), "/home/u/py");
    assert.equal(expandVariables("${env:UNSET}x", { env: {} }), "x");
    assert.equal(expandVariables("${workspaceFolder}/p", {}), "${workspaceFolder}/p", "unknown stays as written");
    assert.equal(expandVariables("${config:x}", {}), "${config:x}");
  });

  it("describes where the interpreter came from", () => {
    assert.equal(describeInterpreter({ command: ["python3"], source: "default" }), "python3 (default)");
    assert.equal(describeInterpreter({ command: ["/v/python"], source: "python-extension" }), "/v/python (from the Python extension)");
  });
});

describe("normaliseCommand", () => {
  it("trims the program but keeps arguments verbatim", () => {
    assert.deepEqual(normaliseCommand("  /usr/bin/python3 "), ["/usr/bin/python3"]);
    assert.deepEqual(normaliseCommand([" py ", " -3 "]), ["py", " -3 "]);
    assert.equal(normaliseCommand(["", "x"]), undefined);
  });
});
