/**
 * Can this interpreter run the language server? One quick `python -c` that reports the
 * interpreter, whether `lockgate` imports, whether the `[lsp]` extra is installed and in which
 * versions, so the extension can say exactly what to fix instead of showing a dead client.
 */
import { run, type RunOptions, type RunResult } from "./process";
import { shellQuote } from "./serverCommand";

/**
 * The `lsp` extra of lockgate's pyproject.toml: each module the server imports, the least major
 * version it runs with (pygls 1.x has another API: a server started with it fails at import)
 * and the requirement that installs one.
 */
export const LSP_REQUIREMENTS: readonly { readonly module: string; readonly major: number; readonly requirement: string }[] = [
  { module: "pygls", major: 2, requirement: "pygls>=2.0" },
  { module: "lsprotocol", major: 2025, requirement: "lsprotocol>=2025.0.0" },
];

const MODULES = JSON.stringify(LSP_REQUIREMENTS.map((r) => r.module));

/** Printed as one JSON line; never raises, even in a broken environment. */
export const PROBE_SCRIPT = [
  "import importlib.util, json, sys",
  "out = {'python': sys.executable, 'pythonVersion': sys.version.split()[0], 'versions': {}}",
  "try:",
  "    import lockgate",
  "    out['lockgate'] = getattr(lockgate, '__version__', 'unknown')",
  `    out['missing'] = [m for m in ${MODULES} if importlib.util.find_spec(m) is None]`,
  "except Exception as exc:",
  "    out['error'] = type(exc).__name__ + ': ' + str(exc)",
  `for m in ${MODULES}:`,
  "    try:",
  "        import importlib.metadata",
  "        out['versions'][m] = importlib.metadata.version(m)",
  "    except Exception:",
  "        pass",
  "print(json.dumps(out))",
].join("\n");

export type Problem = "no-interpreter" | "no-lockgate" | "no-lsp-extra" | "old-lsp-extra" | "broken-interpreter";

export type ProbeResult =
  | { readonly ok: true; readonly python: string; readonly lockgateVersion: string }
  | {
    readonly ok: false; readonly problem: Problem; readonly detail: string; readonly python?: string;
    /** For `old-lsp-extra`: the requirements to install (`pygls>=2.0`). */
    readonly upgrade?: readonly string[];
  };

/** Interprets the probe's exit; pure, so every branch is testable. */
export function parseProbe(result: RunResult): ProbeResult {
  if (result.errorCode === "ENOENT" || result.errorCode === "EACCES") {
    return { ok: false, problem: "no-interpreter", detail: result.errorMessage ?? result.errorCode };
  }
  const line = result.stdout.trim().split("\n").pop() ?? "";
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(line) as Record<string, unknown>;
  } catch {
    const detail = (result.errorMessage ?? result.stderr.trim()) || `exit status ${result.code}`;
    return { ok: false, problem: "broken-interpreter", detail: lastLines(detail) };
  }
  const python = typeof data.python === "string" && data.python ? data.python : undefined;
  if (typeof data.error === "string") {
    return { ok: false, problem: "no-lockgate", detail: data.error, ...(python ? { python } : {}) };
  }
  const missing = Array.isArray(data.missing) ? data.missing.filter((m) => typeof m === "string") : [];
  if (missing.length > 0) {
    return { ok: false, problem: "no-lsp-extra", detail: `missing ${missing.join(", ")}`, ...(python ? { python } : {}) };
  }
  const old = tooOld(data.versions);
  if (old.length > 0) {
    return {
      ok: false, problem: "old-lsp-extra", ...(python ? { python } : {}),
      detail: old.map((o) => `${o.module} ${o.version}, the server needs ${o.requirement}`).join("; "),
      upgrade: old.map((o) => o.requirement),
    };
  }
  return { ok: true, python: python ?? "python", lockgateVersion: String(data.lockgate ?? "unknown") };
}

/** The requirements whose installed version (`versions`, as the probe printed them) is of an
 * older major; a version the probe could not read is not judged (the server's start is). */
function tooOld(versions: unknown): { module: string; version: string; requirement: string }[] {
  const found = versions !== null && typeof versions === "object" ? (versions as Record<string, unknown>) : {};
  return LSP_REQUIREMENTS.flatMap(({ module, major, requirement }) => {
    const version = found[module];
    const head = typeof version === "string" ? /^(\d+)/.exec(version) : null;
    return head && Number(head[1]) < major ? [{ module, version: version as string, requirement }] : [];
  });
}

/** Runs the probe in `interpreter` (a command prefix such as `["python3"]`). */
export async function probe(interpreter: readonly string[], options: RunOptions = {}): Promise<ProbeResult> {
  const [command, ...prefix] = interpreter;
  const result = await run({ command, args: [...prefix, "-c", PROBE_SCRIPT] }, { timeoutMs: 20_000, ...options });
  return parseProbe(result);
}

/** The fix, as a command to paste: `<python> -m pip install 'lockgate[lsp]'` (or `packages`). */
export function installCommand(python: readonly string[], packages: readonly string[] = ["lockgate[lsp]"]): string {
  return [...python, "-m", "pip", "install", ...packages].map(shellQuote).join(" ");
}

/** The install command that fixes a failed probe; none when installing is not the fix. */
export function fixCommand(result: Extract<ProbeResult, { ok: false }>, interpreter: readonly string[]): string | undefined {
  const python = pythonFor(result, interpreter);
  switch (result.problem) {
    case "no-lockgate":
    case "no-lsp-extra":
      return installCommand(python);
    case "old-lsp-extra":
      return installCommand(python, result.upgrade);
    default:
      return undefined;
  }
}

/** The notification text for a failed probe: what is wrong, in which interpreter, and the fix. */
export function problemMessage(result: Extract<ProbeResult, { ok: false }>, interpreter: readonly string[]): string {
  const where = result.python ?? interpreter.join(" ");
  switch (result.problem) {
    case "no-interpreter":
      return `Lockgate: cannot start the Python interpreter '${interpreter.join(" ")}' (${result.detail}). ` +
        "Set lockgate.interpreter to a Python 3.11+ that has lockgate installed, or select one with the Python extension.";
    case "no-lockgate":
      return `Lockgate: the language server is not installed in ${where} (${result.detail}). ` +
        `Fix: ${fixCommand(result, interpreter)}`;
    case "no-lsp-extra":
      return `Lockgate: lockgate is installed in ${where} without its language-server extra (${result.detail}). ` +
        `Fix: ${fixCommand(result, interpreter)}`;
    case "old-lsp-extra":
      return `Lockgate: the language server cannot run in ${where}: it has ${result.detail}. ` +
        `Fix: ${fixCommand(result, interpreter)}`;
    case "broken-interpreter":
      return `Lockgate: '${interpreter.join(" ")}' did not run as a Python interpreter: ${result.detail}`;
  }
}

/** Install with the interpreter's own executable when it told us (a `uv run python` prefix stays as is). */
export function pythonFor(result: { python?: string }, interpreter: readonly string[]): readonly string[] {
  return interpreter.length === 1 && result.python ? [result.python] : interpreter;
}

function lastLines(text: string, count = 3): string {
  return text.split("\n").slice(-count).join("\n");
}
