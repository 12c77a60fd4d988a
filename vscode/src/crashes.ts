/**
 * What happens when the language server process ends on its own: restart it a few times, then
 * give up with a notification that says what the server printed and what to do. Pure (no
 * `vscode` import), so the policy and the messages run under `node --test`.
 */

/** How many automatic restarts within how long before the extension stops trying. */
export const MAX_RESTARTS = 4;
export const RESTART_WINDOW_MS = 3 * 60 * 1000;

/** The decision for one ended server process. */
export interface CrashDecision {
  readonly restart: boolean;
  /** Ends counted in the window, this one included. */
  readonly crashes: number;
}

/**
 * Counts the ends of a server that was running. A server that ended before it ever answered
 * `initialize` is not restarted at all: the same command line would fail the same way.
 */
export class CrashPolicy {
  private ends: number[] = [];

  constructor(
    private readonly maxRestarts = MAX_RESTARTS,
    readonly windowMs = RESTART_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  onEnded(wasRunning: boolean): CrashDecision {
    if (!wasRunning) return { restart: false, crashes: 1 };
    const at = this.now();
    this.ends = [...this.ends.filter((t) => at - t <= this.windowMs), at];
    return { restart: this.ends.length <= this.maxRestarts, crashes: this.ends.length };
  }
}

/** Keeps the last few kilobytes the server wrote to stderr, for the notification. */
export class OutputTail {
  private text = "";

  constructor(private readonly maxChars = 4_000) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.maxChars);
  }

  clear(): void {
    this.text = "";
  }

  /** The last `count` non-blank lines, joined with " / " for a one-line notification. */
  lastLines(count = 3): string {
    return this.text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(-count).join(" / ");
  }
}

const FIX = "Check lockgate.serverArgs and lockgate.interpreter, then run 'Lockgate: Restart Server'.";

/** The notification when the server process ended before it was ready. */
export function startFailureMessage(commandLine: string, stderr: string, error?: string): string {
  const said = stderr ? `: ${stderr}` : error ? `: ${error}` : "";
  return `Lockgate: the language server exited while starting (${commandLine})${said}. ${FIX}`;
}

/** The restart window in words ("3 minutes"), for the log and the notification. */
export function windowText(windowMs = RESTART_WINDOW_MS): string {
  const minutes = Math.round(windowMs / 60_000);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** The notification when a running server kept crashing and is no longer restarted. */
export function gaveUpMessage(crashes: number, stderr: string, windowMs = RESTART_WINDOW_MS): string {
  const said = stderr ? ` Its last output: ${stderr}.` : "";
  return `Lockgate: the language server stopped ${crashes} times in ${windowText(windowMs)} and is not restarted again.${said} ` +
    "Run 'Lockgate: Restart Server' to try again; the Lockgate output has the details.";
}

/**
 * vscode-languageclient notifications that the extension replaces with its own (the messages
 * above): shown anyway, they would say the same thing twice without the fix.
 */
export function isReplacedClientMessage(message: string): boolean {
  return /couldn't create connection to server|Restarting server failed|server will not be restarted/i.test(message);
}
