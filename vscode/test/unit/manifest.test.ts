/** package.json against the code: contributed commands, settings, grammars and snippets. */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { COMMANDS, SERVER_GRAPH_COMMAND } from "../../src/commands";
import { RESTART_KEYS, SERVER_KEYS } from "../../src/settings";
import { EXTENSION_DIR } from "./paths";

interface Manifest {
  main: string;
  engines: { vscode: string };
  devDependencies: Record<string, string>;
  contributes: {
    languages: { id: string; filenamePatterns: string[]; configuration: string }[];
    grammars: { language?: string; scopeName: string; path: string; injectTo?: string[] }[];
    snippets: { language: string; path: string }[];
    commands: { command: string; title: string; category: string }[];
    configuration: { properties: Record<string, { default: unknown }> };
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

  it("declares the stratum-yaml language for *.stratum.yaml and *.stratum.yml", () => {
    const [language] = manifest.contributes.languages;
    assert.equal(language.id, "stratum-yaml");
    assert.deepEqual(language.filenamePatterns, ["*.stratum.yaml", "*.stratum.yml"]);
    const config = json(language.configuration);
    assert.deepEqual(config.comments, { lineComment: "#" });
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
    assert.ok(existsSync(path.join(EXTENSION_DIR, "LICENSE")) && existsSync(path.join(EXTENSION_DIR, "README.md")));
  });
});
