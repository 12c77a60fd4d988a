/**
 * Which Python runs the language server.
 *
 * Pure: the caller gathers the inputs (the `lockgate.interpreter` setting, the Python
 * extension's active interpreter when that extension is installed) and this module decides,
 * so the precedence rules are testable without VS Code.
 */

/** Where the interpreter came from; shown in the output channel and in error messages. */
export type InterpreterSource = "setting" | "python-extension" | "default";

/** A command line prefix that starts Python, e.g. `["/repo/.venv/bin/python"]` or `["uv", "run", "python"]`. */
export interface Interpreter {
  readonly command: readonly string[];
  readonly source: InterpreterSource;
  /** Why a configured value was ignored, when it was. */
  readonly warning?: string;
}

/** Values substituted for `${workspaceFolder}`, `${userHome}` and `${env:NAME}` in the setting. */
export interface Variables {
  readonly workspaceFolder?: string;
  readonly userHome?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface InterpreterInputs {
  /** The raw `lockgate.interpreter` setting: a string, an array of strings, or unset. */
  readonly configured: unknown;
  /** The Python extension's active interpreter (path or command), when it reported one. */
  readonly pythonExtension?: readonly string[] | string;
  readonly platform?: NodeJS.Platform;
  readonly variables?: Variables;
}

/** `python` on Windows (no `python3` launcher there), `python3` elsewhere. */
export function defaultPython(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? "python" : "python3";
}

/**
 * A command from a setting value: a non-empty string is one program path; an array must hold
 * only strings and start with a non-empty one. Anything else is `undefined` (not configured).
 */
export function normaliseCommand(value: unknown): string[] | undefined {
  if (typeof value === "string") {
    const trimmed = value.trim();
    return trimmed ? [trimmed] : undefined;
  }
  if (Array.isArray(value) && value.length > 0 && value.every((part) => typeof part === "string")) {
    const parts = value as string[];
    return parts[0].trim() ? [parts[0].trim(), ...parts.slice(1)] : undefined;
  }
  return undefined;
}

/** True when a setting value is present but cannot be used (so the user deserves a warning). */
function isMalformed(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === "string") return false; // an empty string means "not set"
  if (Array.isArray(value) && value.length === 0) return false;
  return normaliseCommand(value) === undefined;
}

/** Replace `${workspaceFolder}`, `${userHome}` and `${env:NAME}`; unknown variables stay as written. */
export function expandVariables(part: string, vars: Variables = {}): string {
  return part.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
    if (envName !== undefined) return vars.env?.[envName] ?? "";
    const value = name === "workspaceFolder" ? vars.workspaceFolder : vars.userHome;
    return value ?? whole;
  });
}

/**
 * The interpreter to use: the `lockgate.interpreter` setting, else the Python extension's
 * active interpreter, else `python3` (`python` on Windows).
 */
export function resolveInterpreter(inputs: InterpreterInputs): Interpreter {
  const configured = normaliseCommand(inputs.configured);
  if (configured) {
    return { command: configured.map((part) => expandVariables(part, inputs.variables)), source: "setting" };
  }
  const warning = isMalformed(inputs.configured)
    ? `ignored lockgate.interpreter ${JSON.stringify(inputs.configured)}: expected a path or an array of strings`
    : undefined;
  const fromExtension = normaliseCommand(inputs.pythonExtension);
  if (fromExtension) {
    return withWarning({ command: fromExtension, source: "python-extension" }, warning);
  }
  return withWarning({ command: [defaultPython(inputs.platform)], source: "default" }, warning);
}

function withWarning(interpreter: Interpreter, warning: string | undefined): Interpreter {
  return warning ? { ...interpreter, warning } : interpreter;
}

/** A short human description, e.g. `/repo/.venv/bin/python (from the Python extension)`. */
export function describeInterpreter(interpreter: Interpreter): string {
  const origin = {
    setting: "from lockgate.interpreter",
    "python-extension": "from the Python extension",
    default: "default",
  }[interpreter.source];
  return `${interpreter.command.join(" ")} (${origin})`;
}
