// Checks the packaged .vsix: exactly the runtime files (bundle, spec schema, manifest, grammars,
// snippets, docs), no sources, tests or node_modules, and a manifest whose paths all resolve
// inside it; the schema the YAML extension is given is lockgate's.
// Usage: node test/check-vsix.mjs out/lockgate.vsix
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import yauzl from "yauzl";

const vsix = process.argv[2];
if (!vsix) {
  console.error("usage: node test/check-vsix.mjs <file.vsix>");
  process.exit(2);
}

/** name -> Buffer of every entry in the archive. */
function readZip(file) {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err);
      const entries = new Map();
      zip.on("entry", (entry) => {
        if (entry.fileName.endsWith("/")) return zip.readEntry();
        zip.openReadStream(entry, (e, stream) => {
          if (e) return reject(e);
          const chunks = [];
          stream.on("data", (c) => chunks.push(c));
          stream.on("end", () => {
            entries.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.on("end", () => resolve(entries));
      zip.on("error", reject);
      zip.readEntry();
    });
  });
}

const entries = await readZip(vsix);
const names = [...entries.keys()].sort();
const manifest = JSON.parse(entries.get("extension/package.json").toString("utf8"));
const source = JSON.parse(readFileSync("package.json", "utf8"));

const expected = [
  "[Content_Types].xml",
  "extension.vsixmanifest",
  "extension/LICENSE.txt",
  "extension/readme.md",
  "extension/changelog.md",
  "extension/dist/extension.js",
  "extension/language-configuration.json",
  "extension/package.json",
  ...manifest.contributes.grammars.map((g) => `extension/${g.path.replace(/^\.\//, "")}`),
  ...manifest.contributes.snippets.map((s) => `extension/${s.path.replace(/^\.\//, "")}`),
  ...new Set(manifest.contributes.yamlValidation.map((v) => `extension/${v.url.replace(/^\.\//, "")}`)),
  ...names.filter((n) => /^extension\/images\/[^/]+\.png$/.test(n)),
].sort();
assert.deepEqual(names, expected, "the .vsix holds exactly the runtime files");

for (const name of names) {
  assert.ok(!/\.ts$|\/src\/|\/test\/|node_modules|\.map$/.test(name), `${name} should not be packaged`);
}
for (const [name, data] of entries) {
  if (name.endsWith(".json") || name.endsWith(".code-snippets")) JSON.parse(data.toString("utf8"));
}
assert.deepEqual(manifest.contributes, source.contributes, "the packaged manifest is the source manifest");
assert.equal(manifest.version, source.version);

const schema = readFileSync("../lockgate/dsl/schema/spec.v1.schema.json");
for (const { url } of manifest.contributes.yamlValidation) {
  assert.ok(entries.get(`extension/${url.replace(/^\.\//, "")}`).equals(schema), `${url} is lockgate/dsl/schema/spec.v1.schema.json`);
}

const bundle = entries.get("extension/dist/extension.js").toString("utf8");
assert.ok(!/require\(["']vscode-languageclient/.test(bundle), "vscode-languageclient is bundled, not required");
assert.ok(/require\(["']vscode["']\)/.test(bundle), "vscode stays external");
assert.ok(bundle.includes("-m") && bundle.includes("lockgate") && bundle.includes("lsp"), "the bundle builds the server command");

const readme = entries.get("extension/readme.md").toString("utf8");
for (const match of readme.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)) {
  assert.ok(entries.has(`extension/${match[1]}`), `README image ${match[1]} is packaged`);
}

const size = [...entries.values()].reduce((n, b) => n + b.length, 0);
console.log(`${vsix}: ${names.length} files, ${(size / 1024).toFixed(0)} KiB unpacked, file list ok`);
for (const name of names) console.log(`  ${name}`);
