/**
 * `Lockgate: Show Flow Graph`: a webview beside the editor with the SVG that
 * `lockgate graph <file> --format svg` draws, redrawn whenever the spec is saved.
 * One panel, reused: showing another spec (or another flow) retargets it.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { graphHtml } from "./graphHtml";
import { run } from "./process";
import { graphCommand } from "./serverCommand";

export interface GraphTarget {
  readonly uri: vscode.Uri;
  readonly flow?: string;
}

export class GraphView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private target: GraphTarget | undefined;
  private lastSvg: string | undefined;
  private generation = 0;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly interpreter: () => Promise<readonly string[]>,
    private readonly output: vscode.OutputChannel,
  ) {
    this.subscriptions.push(vscode.workspace.onDidSaveTextDocument((doc) => {
      if (this.panel && this.target && doc.uri.toString() === this.target.uri.toString()) void this.refresh();
    }));
  }

  /** Shows (or retargets) the panel and draws the graph. */
  async show(target: GraphTarget): Promise<void> {
    const retarget = this.target?.uri.toString() !== target.uri.toString() || this.target?.flow !== target.flow;
    this.target = target;
    if (retarget) this.lastSvg = undefined;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("lockgate.flowGraph", "Flow graph", { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        enableScripts: false,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.target = undefined;
        this.lastSvg = undefined;
      });
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    await this.refresh();
  }

  private title(): string {
    const target = this.target as GraphTarget;
    const name = path.basename(target.uri.fsPath);
    return target.flow ? `${name}: ${target.flow}` : name;
  }

  /** Redraws; a slower, older drawing never overwrites a newer one. */
  async refresh(): Promise<void> {
    const panel = this.panel;
    const target = this.target;
    if (!panel || !target) return;
    const generation = ++this.generation;
    panel.title = `Flow graph: ${this.title()}`;
    if (target.uri.scheme !== "file") {
      this.render(panel, { error: "Save the spec to a file to draw its flow graph." });
      return;
    }
    const dirty = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.uri.toString())?.isDirty;
    const line = graphCommand(await this.interpreter(), target.uri.fsPath, target.flow);
    const result = await run(line, { cwd: path.dirname(target.uri.fsPath), timeoutMs: 60_000 });
    if (generation !== this.generation || this.panel !== panel) return;
    if (result.code === 0 && result.stdout.includes("<svg")) {
      this.lastSvg = result.stdout;
      const time = new Date().toLocaleTimeString();
      this.render(panel, { note: dirty ? `drawn from the saved file at ${time} (unsaved changes not shown)` : `updated ${time}` });
    } else {
      const why = (result.errorMessage ?? result.stderr.trim()) || `lockgate graph exited with status ${result.code}`;
      this.output.appendLine(`[lockgate] graph: ${why}`);
      this.render(panel, { error: why, note: this.lastSvg ? "showing the last graph that could be drawn" : undefined });
    }
  }

  private render(panel: vscode.WebviewPanel, extra: { error?: string; note?: string }): void {
    panel.webview.html = graphHtml({ title: this.title(), svg: this.lastSvg, cspSource: panel.webview.cspSource, ...extra });
  }

  dispose(): void {
    this.panel?.dispose();
    this.subscriptions.splice(0).forEach((d) => d.dispose());
  }
}
