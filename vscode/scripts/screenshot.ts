/**
 * Renders images/screenshot.png for the README from real output: an example spec tokenized by
 * the extension's own grammars (through vscode-textmate, with the tm-grammars YAML grammar as
 * the source.yaml stand-in) next to the `Show Flow Graph` webview HTML for the same spec, drawn
 * by `lockgate graph`. Needs Chromium (`chromium --headless`).
 *
 * Usage: npm run screenshot [-- <spec file>]
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { graphHtml, escapeHtml } from "../src/graphHtml";
import { graphCommand } from "../src/serverCommand";
const tmtest = require("vscode-tmgrammar-test/dist/common/index.js");

const ROOT = path.resolve(__dirname, "..");
const spec = path.resolve(process.argv[2] ?? path.join(ROOT, "..", "examples", "code-review.stratum.yaml"));
const python = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

/** A Dark+-like palette for the scopes the grammars produce (the most specific rule wins). */
const COLORS: [RegExp, string][] = [
  [/^comment/, "#6a9955"],
  [/^punctuation\.section\.embedded/, "#c586c0"],
  [/^keyword\.other\.output/, "#c586c0"],
  [/^variable\.other\.step/, "#4ec9b0"],
  [/^variable\.other\.carry/, "#4fc1ff"],
  [/^variable\.language/, "#569cd6"],
  [/^variable\.other\.property/, "#9cdcfe"],
  [/^support\.function/, "#dcdcaa"],
  [/^constant\.numeric/, "#b5cea8"],
  [/^constant\.language/, "#569cd6"],
  [/^keyword\.operator/, "#d4d4d4"],
  [/^string\.quoted\.single\.stratum/, "#ce9178"],
  [/^meta\.embedded/, "#d4d4d4"],
  [/^entity\.name\.tag/, "#569cd6"],
  [/^string/, "#ce9178"],
  [/^constant/, "#569cd6"],
];

function colorOf(scopes: string[]): string {
  for (let i = scopes.length - 1; i >= 0; i--) {
    const hit = COLORS.find(([re]) => re.test(scopes[i]));
    if (hit) return hit[1];
  }
  return "#d4d4d4";
}

async function tokenizedHtml(text: string): Promise<string> {
  process.chdir(ROOT);
  const { grammars } = tmtest.loadConfiguration("package.json", undefined, ["node_modules/tm-grammars/grammars/yaml.json"]);
  const registry = tmtest.createRegistry(grammars);
  const grammar = await registry.loadGrammar("source.stratum-yaml");
  let state: unknown = null;
  const lines: string[] = [];
  text.replace(/\n$/, "").split("\n").forEach((line, i) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    const spans = result.tokens.map((t: { startIndex: number; endIndex: number; scopes: string[] }) =>
      `<span style="color:${colorOf(t.scopes)}">${escapeHtml(line.slice(t.startIndex, t.endIndex))}</span>`).join("");
    lines.push(`<div class="l"><span class="n">${i + 1}</span>${spans || " "}</div>`);
  });
  return lines.join("");
}

async function main(): Promise<void> {
  const text = readFileSync(spec, "utf8");
  const line = graphCommand([python], spec);
  const svg = execFileSync(line.command, [...line.args], { encoding: "utf8" });
  const webview = graphHtml({ title: `${path.basename(spec)}: change`, svg, note: "updated on save" });
  const page = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
    body { margin: 0; background: #1e1e1e; font: 13px/1.35 "DejaVu Sans Mono", monospace; display: flex; height: 100vh; }
    .tabs { height: 30px; background: #252526; color: #ccc; font: 12px system-ui, sans-serif; display: flex; align-items: center; padding-left: 12px; }
    .editor { width: 52%; overflow: hidden; } .code { padding: 8px 0; white-space: pre; }
    .l .n { display: inline-block; width: 36px; text-align: right; margin-right: 16px; color: #858585; }
    .graph { flex: 1; border-left: 1px solid #333; display: flex; flex-direction: column; }
    iframe { flex: 1; border: 0; background: #fff; }
  </style></head><body>
  <div class="editor"><div class="tabs">${escapeHtml(path.basename(spec))}</div><div class="code">${await tokenizedHtml(text)}</div></div>
  <div class="graph"><div class="tabs">Flow graph: ${escapeHtml(path.basename(spec))}</div><iframe srcdoc="${escapeHtml(webview)}"></iframe></div>
  </body></html>`;
  mkdirSync(path.join(ROOT, "out"), { recursive: true });
  const html = path.join(ROOT, "out", "screenshot.html");
  writeFileSync(html, page);
  const png = path.join(ROOT, "images", "screenshot.png");
  execFileSync("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", `--screenshot=${png}`,
    "--window-size=1400,940", `file://${html}`], { stdio: "ignore" });
  console.log(`wrote ${png}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
