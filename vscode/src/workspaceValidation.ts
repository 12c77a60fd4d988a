/**
 * `Lockgate: Validate Workspace`: `lockgate validate --format json` over every workspace folder,
 * with the problems of spec files that are not open shown in the Problems panel (open ones are
 * covered, live, by the language server).
 */
import { promises as fs } from "node:fs";
import * as vscode from "vscode";
import { run } from "./process";
import { formatCommandLine, validateCommand } from "./serverCommand";
import type { ServerSettings } from "./settings";
import { parseValidation, summarise, toUtf16, type FileReport, type Problem } from "./validation";

const SEVERITY: Record<Problem["severity"], vscode.DiagnosticSeverity> = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  information: vscode.DiagnosticSeverity.Information,
  hint: vscode.DiagnosticSeverity.Hint,
};

export class WorkspaceValidation implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection("lockgate-workspace");
  private readonly subscriptions: vscode.Disposable[] = [
    this.collection,
    // once a file is open the language server reports it; drop the snapshot
    vscode.workspace.onDidOpenTextDocument((doc) => this.collection.delete(doc.uri)),
  ];

  constructor(private readonly output: vscode.OutputChannel) {}

  async validate(interpreter: readonly string[], settings: ServerSettings): Promise<void> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
    if (folders.length === 0) {
      void vscode.window.showWarningMessage("Lockgate: open a folder to validate the specs in it.");
      return;
    }
    const line = validateCommand(interpreter, folders, settings);
    this.output.appendLine(`[lockgate] ${formatCommandLine(line)}`);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Lockgate: validating the workspace's specs" },
      () => run(line, { cwd: folders[0], timeoutMs: 300_000 }),
    );
    const validation = parseValidation(result);
    if (!validation.ok) {
      this.output.appendLine(`[lockgate] validate failed: ${validation.error}`);
      void vscode.window.showErrorMessage(`Lockgate: validation failed: ${validation.error}`, "Show Output")
        .then((picked) => picked && this.output.show(true));
      return;
    }
    await this.publish(validation.files);
    const summary = summarise(validation.files);
    this.output.appendLine(`[lockgate] ${summary}`);
    const picked = await vscode.window.showInformationMessage(`Lockgate: ${summary}`, "Show Problems");
    if (picked) await vscode.commands.executeCommand("workbench.actions.view.problems");
  }

  private async publish(files: readonly FileReport[]): Promise<void> {
    this.collection.clear();
    const open = new Set(vscode.workspace.textDocuments.map((d) => d.uri.toString()));
    for (const report of files) {
      const uri = vscode.Uri.file(report.file);
      if (open.has(uri.toString()) || report.problems.length === 0) continue;
      const text = await fs.readFile(report.file, "utf8").catch(() => "");
      this.collection.set(uri, toUtf16(report.problems, text).map(toDiagnostic));
    }
  }

  dispose(): void {
    this.subscriptions.splice(0).forEach((d) => d.dispose());
  }
}

function toDiagnostic(problem: Problem): vscode.Diagnostic {
  const { start, end } = problem.range;
  const diagnostic = new vscode.Diagnostic(
    new vscode.Range(start.line, start.character, end.line, end.character),
    problem.hint ? `${problem.message}\n${problem.hint}` : problem.message,
    SEVERITY[problem.severity],
  );
  diagnostic.code = problem.code;
  diagnostic.source = "lockgate";
  return diagnostic;
}
