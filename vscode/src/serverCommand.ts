/**
 * The command lines the extension runs: the language server (`<interpreter> -m lockgate lsp`
 * plus `lockgate.serverArgs`) and the one-shot CLI commands behind `Show Flow Graph` and
 * `Validate Workspace`. Pure, so the exact command line is testable and the end-to-end test
 * launches the server with the very same function.
 */

/** A program and its arguments, run without a shell. */
export interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
}

/** The server command line, and what was wrong with `lockgate.serverArgs` (dropped parts). */
export interface ServerLaunch extends CommandLine {
  readonly problems: readonly string[];
}

/** Options the extension owns: the client always talks over stdio. */
const TRANSPORT_OPTIONS = new Set(["--tcp"]);

/**
 * Extra server arguments from the setting: strings only, and never a transport option (the
 * client speaks stdio, so `--tcp` would leave it waiting forever).
 */
export function serverArgs(value: unknown): { args: string[]; problems: string[] } {
  if (value === undefined || value === null) return { args: [], problems: [] };
  if (!Array.isArray(value)) {
    return { args: [], problems: [`lockgate.serverArgs must be an array of strings, got ${JSON.stringify(value)}`] };
  }
  const args: string[] = [];
  const problems: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const arg: unknown = value[i];
    if (typeof arg !== "string") {
      problems.push(`lockgate.serverArgs[${i}] is not a string: ${JSON.stringify(arg)}`);
    } else if (TRANSPORT_OPTIONS.has(arg.split("=")[0])) {
      problems.push(`lockgate.serverArgs: ${arg} is not supported (the extension talks to the server over stdio)`);
      if (!arg.includes("=")) i++; // skip its value too
    } else {
      args.push(arg);
    }
  }
  return { args, problems };
}

/** `<interpreter...> -m lockgate <subcommand...>`: any lockgate CLI command in that interpreter. */
export function lockgateCommand(interpreter: readonly string[], subcommand: readonly string[]): CommandLine {
  if (interpreter.length === 0) throw new TypeError("empty interpreter command");
  const [command, ...prefix] = interpreter;
  return { command, args: [...prefix, "-m", "lockgate", ...subcommand] };
}

/** The language server: `<interpreter...> -m lockgate lsp <serverArgs...>`. */
export function buildServerCommand(interpreter: readonly string[], extraArgs: unknown): ServerLaunch {
  const { args, problems } = serverArgs(extraArgs);
  return { ...lockgateCommand(interpreter, ["lsp", ...args]), problems };
}

/** `lockgate graph <file> --format svg [--flow NAME]`. */
export function graphCommand(interpreter: readonly string[], file: string, flow?: string): CommandLine {
  return lockgateCommand(interpreter, ["graph", file, "--format", "svg", ...(flow ? ["--flow", flow] : [])]);
}

/** `lockgate validate --format json [--no-lint] [--agent NAME...] <folders...>`. */
export function validateCommand(
  interpreter: readonly string[],
  folders: readonly string[],
  options: { lint: boolean; agents: readonly string[] },
): CommandLine {
  const flags = [...(options.lint ? [] : ["--no-lint"]), ...options.agents.flatMap((a) => ["--agent", a])];
  return lockgateCommand(interpreter, ["validate", "--format", "json", ...flags, "--", ...folders]);
}

/** A POSIX-shell rendering for messages and the output channel (what to paste in a terminal). */
export function formatCommandLine(line: CommandLine): string {
  return [line.command, ...line.args].map(shellQuote).join(" ");
}

export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_\-+=.,/:@%]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The `Executable` for vscode-languageclient's `ServerOptions`. */
export interface ServerExecutable {
  readonly command: string;
  readonly args: string[];
  readonly options: { readonly cwd?: string };
}

/**
 * The launch as vscode-languageclient's `Executable`, deliberately without `transport`: with
 * `TransportKind.stdio` the client appends `--stdio` to the arguments, which `lockgate lsp`
 * rejects. Without it the client still talks over the process's stdin/stdout.
 */
export function serverExecutable(launch: CommandLine, cwd?: string): ServerExecutable {
  return { command: launch.command, args: [...launch.args], options: cwd ? { cwd } : {} };
}
