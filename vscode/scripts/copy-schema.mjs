// Copies lockgate's spec JSON Schema (lockgate/dsl/schema, the file `lockgate schema` prints)
// to the path package.json's `yamlValidation` contributes, so the .vsix ships the schema of the
// lockgate it was built from. Run by `npm run build`; the copy is a build output (dist/).
// Usage: node scripts/copy-schema.mjs
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const extension = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = path.resolve(extension, "..", "lockgate", "dsl", "schema", "spec.v1.schema.json");

const manifest = JSON.parse(readFileSync(path.join(extension, "package.json"), "utf8"));
const targets = new Set((manifest.contributes.yamlValidation ?? []).map((entry) => entry.url));
if (targets.size === 0) {
  console.error("package.json contributes no yamlValidation: nothing to copy the schema to");
  process.exit(1);
}
for (const url of targets) {
  const target = path.resolve(extension, url);
  mkdirSync(path.dirname(target), { recursive: true });
  copyFileSync(SOURCE, target);
  console.log(`${path.relative(extension, SOURCE)} -> ${path.relative(extension, target)}`);
}
