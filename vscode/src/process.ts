/**
 * Running one-shot commands (probe, graph, validate) without a shell, with a timeout.
 * Node-only (no `vscode` import), so it runs under `node --test` against a real Python.
 */
import { spawn } from "node:child_process";
import type { CommandLine } from "./serverCommand";

export interface RunResult {
  /** Exit status, or null when the process could not start or was killed. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Set when the program could not be started (`ENOENT`, `EACCES`) or timed out (`ETIMEDOUT`). */
  readonly errorCode?: string;
  readonly errorMessage?: string;
}

export interface RunOptions {
  readonly cwd?: string;
  readonly timeoutMs?: number;
  readonly env?: NodeJS.ProcessEnv;
}

/** Runs `line` to completion; never rejects: failures to start are reported in the result. */
export function run(line: CommandLine, options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let settled = false;
    const finish = (result: RunResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const child = spawn(line.command, [...line.args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ code: null, stdout: text(out), stderr: text(err), errorCode: "ETIMEDOUT",
        errorMessage: `timed out after ${options.timeoutMs} ms` });
    }, options.timeoutMs ?? 60_000);
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", (error: NodeJS.ErrnoException) =>
      finish({ code: null, stdout: text(out), stderr: text(err), errorCode: error.code ?? "ERROR", errorMessage: error.message }));
    child.on("close", (code) => finish({ code, stdout: text(out), stderr: text(err) }));
  });
}

function text(chunks: Buffer[]): string {
  return Buffer.concat(chunks).toString("utf8");
}
