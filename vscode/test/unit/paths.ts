/** Folders the tests read from; the tests run bundled from out/test/<kind>/. */
import * as path from "node:path";

export const EXTENSION_DIR = path.resolve(__dirname, "..", "..", "..");
export const REPO_DIR = path.resolve(EXTENSION_DIR, "..");
export const EXAMPLES_DIR = path.join(REPO_DIR, "examples");
