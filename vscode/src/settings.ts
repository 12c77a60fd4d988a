/**
 * The extension's settings, and how they reach the server.
 *
 * VS Code settings are namespaced for people (`lockgate.lint.enable`); the server reads a flat
 * `lockgate` section (`lint`, `inlayHints`, `debounceMs`, `maxDocumentBytes`, `agents`, see
 * lockgate/lsp/settings.py).
 * `toServerSettings` is that one mapping, used for `initializationOptions` and to answer the
 * server's `workspace/configuration` requests. Pure: it takes a getter, not a VS Code object.
 */

export const SECTION = "lockgate";

/** Reads one key below `lockgate.` (`"lint.enable"`), like `WorkspaceConfiguration.get`. */
export type ConfigReader = (key: string) => unknown;

/** What the server understands, with the server's own defaults. */
export interface ServerSettings {
  lint: boolean;
  inlayHints: boolean;
  debounceMs: number;
  maxDocumentBytes: number;
  agents: string[];
}

export const DEFAULTS: Readonly<ServerSettings> = Object.freeze({
  lint: true, inlayHints: true, debounceMs: 150, maxDocumentBytes: 5_000_000, agents: [],
});

/** Settings whose change means a new server process, not just new configuration. */
export const RESTART_KEYS: readonly string[] = ["lockgate.interpreter", "lockgate.serverArgs"];

/** Settings the server reads; a change is pushed with `workspace/didChangeConfiguration`. */
export const SERVER_KEYS: readonly string[] = [
  "lockgate.lint.enable",
  "lockgate.inlayHints.enable",
  "lockgate.diagnostics.debounceMs",
  "lockgate.maxDocumentBytes",
  "lockgate.agents",
];

const AGENT_NAME = /^[a-z][a-z0-9_-]*$/;

/** The server's settings from the VS Code ones; malformed values fall back to the defaults. */
export function toServerSettings(read: ConfigReader): ServerSettings {
  const debounce = read("diagnostics.debounceMs");
  const limit = read("maxDocumentBytes");
  const agents = read("agents");
  return {
    lint: bool(read("lint.enable"), DEFAULTS.lint),
    inlayHints: bool(read("inlayHints.enable"), DEFAULTS.inlayHints),
    debounceMs: Number.isInteger(debounce) && (debounce as number) >= 0 && (debounce as number) <= 10_000
      ? (debounce as number)
      : DEFAULTS.debounceMs,
    maxDocumentBytes: Number.isSafeInteger(limit) && (limit as number) >= 0 ? (limit as number) : DEFAULTS.maxDocumentBytes,
    agents: Array.isArray(agents) ? agents.filter((a): a is string => typeof a === "string" && AGENT_NAME.test(a)) : [],
  };
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

/** A reader over a plain nested object, e.g. `{lint: {enable: false}}` (tests, JSON settings). */
export function readerFromObject(root: unknown): ConfigReader {
  return (key) => key.split(".").reduce<unknown>(
    (node, part) => (node !== null && typeof node === "object" ? (node as Record<string, unknown>)[part] : undefined),
    root,
  );
}

/** Does a configuration change need a server restart (`affects` is `event.affectsConfiguration`)? */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(key));
}

/** Does a configuration change concern the server's settings at all? */
export function affectsServer(affects: (section: string) => boolean): boolean {
  return SERVER_KEYS.some((key) => affects(key));
}

/**
 * Answers a `workspace/configuration` request: the `lockgate` section is replaced by the
 * server's view of it; every other item keeps the answer VS Code gave (`fallback`).
 */
export function answerConfiguration(
  items: readonly { section?: string; scopeUri?: string }[],
  fallback: readonly unknown[],
  readerFor: (scopeUri: string | undefined) => ConfigReader,
): unknown[] {
  return items.map((item, i) => (item.section === SECTION ? toServerSettings(readerFor(item.scopeUri)) : fallback[i] ?? null));
}
