/**
 * The snippets expand to specs that `lockgate validate` accepts: the Spec snippet alone, and
 * every step snippet inside a small host spec (placeholders take their defaults).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { run } from "../../src/process";
import { validateCommand } from "../../src/serverCommand";
import { parseValidation } from "../../src/validation";
import { EXTENSION_DIR } from "./paths";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";
type Snippet = { prefix: string | string[]; body: string[]; description: string };
const SNIPPETS = JSON.parse(readFileSync(path.join(EXTENSION_DIR, "snippets", "stratum-yaml.code-snippets"), "utf8")) as Record<string, Snippet>;

/** Expands a snippet body the way accepting every default does: `${1:x}` → x, `${1|a,b|}` → a, `$0` → "", `\$` → `$`. */
export function expand(body: readonly string[]): string {
  let text = body.join("\n");
  for (let guard = 0; guard < 20 && /\$\{\d+[:|]/.test(text); guard++) {
    text = text.replace(/\$\{\d+:((?:[^{}]|\{[^{}]*\})*)\}/g, "$1").replace(/\$\{\d+\|([^,|]*)[^|]*\|\}/g, "$1");
  }
  return text.replace(/\$\d+/g, "").replace(/\\\$/g, "$");
}

const HOST = (steps: string) => `version: 1
contracts:
  Result:
    value: string
    ok: boolean
  ItemResult:
    ok: boolean
  List:
    items: string[]
flows:
  entry: main
  main:
    input:
      value: string
    output:
      from: "\${work.output}"
      contract: Result
    max_rounds: 2
    steps:
      - id: work
        do: "Work on \${input.value}"
        agent: claude
        out: Result
      - id: list
        do: "List things"
        agent: claude
        out: List
${steps}
  flow:
    input:
      field: string
    output:
      from: "\${inner.output}"
      contract: Result
    steps:
      - id: inner
        do: "Use \${input.field}"
        agent: claude
        out: Result
`;

function indent(text: string, by: string): string {
  return text.split("\n").map((l) => (l.trim() ? by + l : l)).join("\n");
}

describe("snippets", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "lockgate-snippets-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function errorsOf(name: string, text: string): Promise<string[]> {
    const file = path.join(dir, `${name}.stratum.yaml`);
    writeFileSync(file, text);
    const got = parseValidation(await run(validateCommand([PYTHON], [file], { lint: false, agents: [] })));
    assert.ok(got.ok, JSON.stringify(got));
    return got.ok ? got.files.flatMap((f) => f.problems.filter((p) => p.severity === "error").map((p) => `${p.code} ${p.message}`)) : [];
  }

  it("expands placeholders to their defaults", () => {
    assert.equal(expand(["a: ${1:x}", "b: ${2|one,two|}", "c: \"\\${${3:s}.output}\"$0"]), "a: x\nb: one\nc: \"${s.output}\"");
  });

  it("the Spec snippet is a valid spec", async () => {
    assert.deepEqual(await errorsOf("spec", expand(SNIPPETS["Spec"].body) + "\n"), []);
  });

  for (const name of ["Do step", "Set step", "Gate step", "Fanout step", "Run step"]) {
    it(`the ${name} snippet is a valid step`, async () => {
      const step = expand(SNIPPETS[name].body).replace(/\bid: (\w+)/, `id: ${name.split(" ")[0].toLowerCase()}_step`);
      assert.deepEqual(await errorsOf(name.replace(" ", "-"), HOST(indent(step, "      "))), []);
    });
  }

  it("the Ensure and Iterate snippets are valid inside a do step", async () => {
    const extra = indent(expand(SNIPPETS["Ensure"].body), "        ") + "\n" + indent(expand(SNIPPETS["Iterate"].body), "        ");
    const step = `      - id: extra\n        do: "More"\n        agent: claude\n        out: ItemResult\n${extra}`;
    assert.deepEqual(await errorsOf("ensure", HOST(step.replace("result.score >= 0.9", "result.ok"))), []);
  });

  it("the Contract and Flow snippets are valid in place", async () => {
    const contract = indent(expand(SNIPPETS["Contract"].body), "  ");
    const flow = indent(expand(SNIPPETS["Flow"].body), "  ");
    const text = HOST("").replace("contracts:\n", `contracts:\n${contract}\n`).replace(/\n  flow:\n[\s\S]*$/, `\n${flow}\n`);
    assert.deepEqual(await errorsOf("contract-flow", text), []);
  });
});
