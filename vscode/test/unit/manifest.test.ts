/** package.json against the code: contributed commands, settings, grammars and snippets. */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { COMMANDS, SERVER_GRAPH_COMMAND } from "../../src/commands";
import { RESTART_KEYS, SERVER_KEYS } from "../../src/settings";
import { EXTENSION_DIR, REPO_DIR } from "./paths";

interface Setting {
  type?: string | string[];
  default?: unknown;
  description?: string;
  markdownDescription?: string;
  enum?: unknown[];
}

interface Manifest {
  main: string;
  activationEvents: string[];
  engines: { vscode: string };
  devDependencies: Record<string, string>;
  contributes: {
    languages: { id: string; filenamePatterns: string[]; configuration: string }[];
    grammars: { language?: string; scopeName: string; path: string; injectTo?: string[] }[];
    snippets: { language: string; path: string }[];
    yamlValidation: { fileMatch: string; url: string }[];
    commands: { command: string; title: string; category: string }[];
    configuration: { properties: Record<string, Setting> };
  };
}

const manifest = JSON.parse(readFileSync(path.join(EXTENSION_DIR, "package.json"), "utf8")) as Manifest;
const json = (rel: string): Record<string, unknown> => JSON.parse(readFileSync(path.join(EXTENSION_DIR, rel), "utf8"));

describe("package.json", () => {
  it("contributes exactly the commands the extension registers, none clashing with the server's", () => {
    const ids: string[] = manifest.contributes.commands.map((c) => c.command).sort();
    assert.deepEqual(ids, Object.values(COMMANDS).sort());
    assert.ok(!new Set<string>(ids).has(SERVER_GRAPH_COMMAND), "vscode-languageclient registers the server's command itself");
    assert.ok(manifest.contributes.commands.every((c) => c.category === "Lockgate"));
    assert.deepEqual(manifest.contributes.commands.map((c) => `${c.category}: ${c.title}`).sort(),
      ["Lockgate: Restart Server", "Lockgate: Show Flow Graph", "Lockgate: Show Output", "Lockgate: Validate Workspace"]);
  });

  it("declares every setting the extension reads", () => {
    const declared = Object.keys(manifest.contributes.configuration.properties).sort();
    assert.deepEqual(declared, [...RESTART_KEYS, ...SERVER_KEYS, "lockgate.trace.server"].sort());
  });

  it("activates for stratum-yaml documents and spec workspaces, never for plain YAML", () => {
    assert.deepEqual(manifest.activationEvents, ["onLanguage:stratum-yaml", "workspaceContains:**/*.stratum.{yaml,yml}"]);
  });

  it("documents every setting with a type, a default of that type and a description", () => {
    const ofType = (value: unknown, type: string): boolean =>
      type === "array" ? Array.isArray(value) : type === "integer" ? Number.isInteger(value) : typeof value === type;
    for (const [key, setting] of Object.entries(manifest.contributes.configuration.properties)) {
      const types = typeof setting.type === "string" ? [setting.type] : setting.type ?? [];
      assert.ok(types.length > 0, `${key} has a type`);
      assert.ok("default" in setting && types.some((t) => ofType(setting.default, t)), `${key}: default ${JSON.stringify(setting.default)} is a ${types}`);
      if (setting.enum) assert.ok(setting.enum.includes(setting.default), `${key}: the default is one of its values`);
      assert.ok((setting.description ?? setting.markdownDescription ?? "").length > 20, `${key} is described`);
    }
  });

  it("documents every setting and command in the README", () => {
    const readme = readFileSync(path.join(EXTENSION_DIR, "README.md"), "utf8");
    for (const key of Object.keys(manifest.contributes.configuration.properties)) assert.ok(readme.includes(`\`${key}\``), key);
    for (const c of manifest.contributes.commands) assert.ok(readme.includes(`\`${c.category}: ${c.title}\``), c.title);
    for (const section of ["## Install", "## Settings", "## Troubleshooting", "files.associations"]) assert.ok(readme.includes(section), section);
  });

  it("declares the stratum-yaml language for *.stratum.yaml and *.stratum.yml", () => {
    const [language] = manifest.contributes.languages;
    assert.equal(language.id, "stratum-yaml");
    assert.deepEqual(language.filenamePatterns, ["*.stratum.yaml", "*.stratum.yml"]);
    const config = json(language.configuration);
    assert.deepEqual(config.comments, { lineComment: "#" });
  });

  it("gives the YAML extension lockgate's spec schema, built into the extension, for the language's file patterns", () => {
    const [language] = manifest.contributes.languages;
    const entries = manifest.contributes.yamlValidation;
    assert.deepEqual(entries.map((v) => v.fileMatch), language.filenamePatterns, "one string fileMatch each: older YAML extensions read no arrays");
    const urls = new Set(entries.map((v) => v.url));
    assert.deepEqual([...urls], ["./dist/spec.v1.schema.json"]);
    const built = path.join(EXTENSION_DIR, "dist", "spec.v1.schema.json");
    assert.ok(existsSync(built), `${built} is built (npm run build:schema)`);
    const source = readFileSync(path.join(REPO_DIR, "lockgate", "dsl", "schema", "spec.v1.schema.json"));
    assert.ok(readFileSync(built).equals(source), "the built schema is lockgate/dsl/schema/spec.v1.schema.json");
    const schema = JSON.parse(source.toString("utf8")) as { required: string[] };
    assert.deepEqual(schema.required, ["version", "contracts", "flows"]);
    const ignore = readFileSync(path.join(EXTENSION_DIR, ".vscodeignore"), "utf8").split("\n");
    assert.ok(ignore.includes("!dist/spec.v1.schema.json"), ".vscodeignore lets the schema into the .vsix");
  });

  it("has grammars that parse, for a declared language, with injections into it", () => {
    const scopes = new Set(manifest.contributes.grammars.map((g) => g.scopeName));
    for (const grammar of manifest.contributes.grammars) {
      const raw = json(grammar.path);
      assert.equal(raw.scopeName, grammar.scopeName, grammar.path);
      if (grammar.language) assert.equal(grammar.language, "stratum-yaml");
      for (const target of grammar.injectTo ?? []) assert.ok(scopes.has(target), `${grammar.path} injects into ${target}`);
      if (grammar.injectTo) assert.match(String(raw.injectionSelector), /^L:source\.stratum-yaml -comment/);
    }
    const root = json("syntaxes/stratum-yaml.tmLanguage.json");
    assert.deepEqual(root.patterns, [{ include: "source.yaml" }]);
  });

  it("bundles the client and targets a VS Code at least as new as its typings", () => {
    assert.equal(manifest.main, "./dist/extension.js");
    const types = manifest.devDependencies["@types/vscode"];
    assert.equal(manifest.engines.vscode, `^${types}`);
    assert.equal(manifest.devDependencies["@vscode/vsce"], "3.7.1", "vsce 4 needs Node 22");
    for (const doc of ["LICENSE", "README.md", "CHANGELOG.md"]) assert.ok(existsSync(path.join(EXTENSION_DIR, doc)), doc);
  });
});
