/**
 * Lockgate for VS Code: a thin launcher around `lockgate lsp`. All language knowledge lives in
 * the Python server; this file only wires commands, settings and views to it.
 */
import * as vscode from "vscode";
import { COMMANDS, SERVER_GRAPH_COMMAND } from "./commands";
import { GraphView } from "./graphView";
import { currentServerSettings, LANGUAGE_ID, ServerController, workspaceInterpreter } from "./server";
import { onInterpreterChange } from "./pythonExtension";
import { affectsServer, needsRestart } from "./settings";
import { WorkspaceValidation } from "./workspaceValidation";

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Lockgate");
  const status = vscode.window.createStatusBarItem("lockgate.server", vscode.StatusBarAlignment.Right, 100);
  status.name = "Lockgate language server";
  status.command = COMMANDS.showOutput;
  status.show();

  const interpreter = async (): Promise<readonly string[]> => (await workspaceInterpreter()).command;
  const graph = new GraphView(interpreter, output);
  const validation = new WorkspaceValidation(output);
  const server = new ServerController(output, status, {
    // the server's "Show flow graph of 'x'" code action opens the graph view, not a text answer
    executeCommand: (command, args, next) => {
      if (command === SERVER_GRAPH_COMMAND && typeof args[0] === "string") {
        return graph.show({ uri: vscode.Uri.parse(args[0]), flow: typeof args[1] === "string" ? args[1] : undefined });
      }
      return next(command, args);
    },
  });
  controller = server;

  context.subscriptions.push(
    output, status, graph, validation, server,
    vscode.commands.registerCommand(COMMANDS.restart, () => server.restart("restart requested")),
    vscode.commands.registerCommand(COMMANDS.showOutput, () => output.show(true)),
    vscode.commands.registerCommand(COMMANDS.showGraph, (uri?: vscode.Uri) => showGraphFor(graph, uri)),
    vscode.commands.registerCommand(COMMANDS.validateWorkspace, async () =>
      validation.validate(await interpreter(), currentServerSettings(vscode.workspace.workspaceFolders?.[0]))),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (needsRestart((key) => event.affectsConfiguration(key))) void server.restart("settings changed");
      else if (affectsServer((key) => event.affectsConfiguration(key))) void server.pushSettings();
    }),
  );
  const pythonChange = await onInterpreterChange(() => {
    const configured = vscode.workspace.getConfiguration("lockgate").get("interpreter");
    const usesSetting = typeof configured === "string" ? configured.trim() !== "" : Array.isArray(configured) && configured.length > 0;
    if (!usesSetting) void server.restart("the Python extension's interpreter changed");
  });
  if (pythonChange) context.subscriptions.push(pythonChange);
  await server.restart("activated");
}

function showGraphFor(graph: GraphView, uri?: vscode.Uri): Promise<void> | undefined {
  const editor = vscode.window.activeTextEditor;
  const target = uri ?? (editor?.document.languageId === LANGUAGE_ID ? editor.document.uri : undefined);
  if (!target) {
    void vscode.window.showWarningMessage("Lockgate: open a *.stratum.yaml spec to show its flow graph.");
    return undefined;
  }
  return graph.show({ uri: target });
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
