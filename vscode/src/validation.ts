/**
 * `Lockgate: Validate Workspace` reads `lockgate validate --format json`; this module turns
 * that output into per-file problems and a one-line summary. Pure.
 */
import type { RunResult } from "./process";

export type Severity = "error" | "warning" | "information" | "hint";

export interface Point { readonly line: number; readonly character: number }

export interface Problem {
  readonly code: string;
  readonly message: string;
  readonly severity: Severity;
  readonly range: { readonly start: Point; readonly end: Point };
  readonly hint?: string;
}

export interface FileReport { readonly file: string; readonly problems: readonly Problem[] }

export type Validation =
  | { readonly ok: true; readonly files: readonly FileReport[] }
  | { readonly ok: false; readonly error: string };

const SEVERITIES: readonly Severity[] = ["error", "warning", "information", "hint"];

/** The CLI's answer as data; any unexpected shape is an error message, never an exception. */
export function parseValidation(result: RunResult): Validation {
  if (result.errorCode) return { ok: false, error: result.errorMessage ?? result.errorCode };
  if (result.code === 2 && /no spec files found/.test(result.stderr)) return { ok: true, files: [] };
  let payload: unknown;
  try {
    payload = JSON.parse(result.stdout);
  } catch {
    return { ok: false, error: result.stderr.trim() || `lockgate validate exited with status ${result.code} and no report` };
  }
  if (!Array.isArray(payload)) return { ok: false, error: "lockgate validate printed something other than a list of files" };
  return { ok: true, files: payload.flatMap(fileReport) };
}

function fileReport(entry: unknown): FileReport[] {
  if (!isRecord(entry) || typeof entry.file !== "string") return [];
  const diagnostics = Array.isArray(entry.diagnostics) ? entry.diagnostics : [];
  return [{ file: entry.file, problems: diagnostics.flatMap(problem) }];
}

function problem(raw: unknown): Problem[] {
  if (!isRecord(raw) || typeof raw.message !== "string") return [];
  const range = isRecord(raw.range) ? raw.range : {};
  const severity = SEVERITIES.find((s) => s === raw.severity) ?? "error";
  const out: Problem = {
    code: typeof raw.code === "string" ? raw.code : "",
    message: raw.message,
    severity,
    range: { start: point(range.start), end: point(range.end) },
    ...(typeof raw.hint === "string" ? { hint: raw.hint } : {}),
  };
  return [out];
}

function point(raw: unknown): Point {
  const p = isRecord(raw) ? raw : {};
  const clamp = (v: unknown): number => (Number.isInteger(v) && (v as number) >= 0 ? (v as number) : 0);
  return { line: clamp(p.line), character: clamp(p.character) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** E.g. `4 specs checked: 2 errors, 1 warning in 1 file`. */
export function summarise(files: readonly FileReport[]): string {
  if (files.length === 0) return "no spec files found (*.stratum.yaml, *.stratum.yml)";
  const all = files.flatMap((f) => f.problems);
  const errors = all.filter((p) => p.severity === "error").length;
  const warnings = all.filter((p) => p.severity === "warning").length;
  const affected = files.filter((f) => f.problems.length > 0).length;
  const specs = plural(files.length, "spec");
  if (all.length === 0) return `${specs} checked: no problems`;
  const counts = [errors ? plural(errors, "error") : "", warnings ? plural(warnings, "warning") : "",
    all.length - errors - warnings ? plural(all.length - errors - warnings, "note") : ""].filter(Boolean);
  return `${specs} checked: ${counts.join(", ")} in ${plural(affected, "file")}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * The CLI counts characters in code points; VS Code in UTF-16 units. With the file's text,
 * shift each character offset by the astral characters before it on its line.
 */
export function toUtf16(problems: readonly Problem[], text: string): Problem[] {
  if (!/[\u{10000}-\u{10FFFF}]/u.test(text)) return [...problems];
  const lines = text.split(/\r\n|\r|\n/);
  const convert = (p: Point): Point => {
    const line = lines[p.line];
    if (line === undefined) return p;
    const units = Array.from(line).slice(0, p.character).join("").length;
    return { line: p.line, character: units + Math.max(0, p.character - Array.from(line).length) };
  };
  return problems.map((p) => ({ ...p, range: { start: convert(p.range.start), end: convert(p.range.end) } }));
}
