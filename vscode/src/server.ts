/**
 * The language-server lifecycle: resolve the interpreter, check that it can run `lockgate lsp`
 * (and say how to fix it when not), start the client, track its state in the status bar,
 * restart on demand or when the interpreter changes.
 */
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from "vscode-languageclient/node";
import { describeInterpreter, resolveInterpreter, type Interpreter } from "./interpreter";
import { installCommand, probe, problemMessage, pythonFor, type ProbeResult } from "./probe";
import { activeInterpreter } from "./pythonExtension";
import { buildServerCommand, formatCommandLine, serverExecutable } from "./serverCommand";
import { answerConfiguration, SECTION, toServerSettings, type ConfigReader, type ServerSettings } from "./settings";
import { statusView, type ServerState } from "./status";

export const LANGUAGE_ID = "stratum-yaml";

export function configReader(scope?: vscode.ConfigurationScope): ConfigReader {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  return (key) => config.get(key);
}

export function currentServerSettings(scope?: vscode.ConfigurationScope): ServerSettings {
  return toServerSettings(configReader(scope));
}

function firstFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

/** The interpreter for the workspace, following the documented precedence. */
export async function workspaceInterpreter(): Promise<Interpreter> {
  const folder = firstFolder();
  const configured = vscode.workspace.getConfiguration(SECTION, folder).get("interpreter");
  return resolveInterpreter({
    configured,
    pythonExtension: await activeInterpreter(folder?.uri),
    variables: { workspaceFolder: folder?.uri.fsPath, userHome: process.env.HOME ?? process.env.USERPROFILE, env: process.env },
  });
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private state: ServerState = "stopped";
  private detail: string | undefined;
  private busy: Promise<void> = Promise.resolve();
  private readonly stateListeners: vscode.Disposable[] = [];

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly status: vscode.StatusBarItem,
    private readonly middleware: Pick<Middleware, "executeCommand">,
  ) {
    this.render();
  }

  /** The running client, for requests such as the server's graph command. */
  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  /** Starts (or restarts) the server; calls are serialised so a burst of changes restarts once at a time. */
  restart(reason: string): Promise<void> {
    this.busy = this.busy.then(() => this.doRestart(reason), () => this.doRestart(reason));
    return this.busy;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.stateListeners.splice(0).forEach((d) => d.dispose());
    if (client) {
      try {
        await client.stop(5_000);
      } catch (error) {
        this.output.appendLine(`[lockgate] stopping the server: ${String(error)}`);
      }
    }
    this.setState("stopped");
  }

  /** Pushes the current settings to the running server (no restart needed). */
  async pushSettings(): Promise<void> {
    if (this.client?.state !== State.Running) return;
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: currentServerSettings(firstFolder()) } });
  }

  dispose(): void {
    void this.stop();
  }

  private async doRestart(reason: string): Promise<void> {
    try {
      await this.start(reason);
    } catch (error) {
      this.output.appendLine(`[lockgate] could not start the server: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
      this.setState("failed", String(error));
    }
  }

  private async start(reason: string): Promise<void> {
    await this.stop();
    this.setState("starting");
    const interpreter = await workspaceInterpreter();
    this.output.appendLine(`[lockgate] ${reason}; interpreter: ${describeInterpreter(interpreter)}`);
    if (interpreter.warning) this.output.appendLine(`[lockgate] ${interpreter.warning}`);
    const probed = await probe(interpreter.command, { cwd: firstFolder()?.uri.fsPath });
    if (!probed.ok) {
      this.fail(probed, interpreter);
      return;
    }
    this.output.appendLine(`[lockgate] lockgate ${probed.lockgateVersion} in ${probed.python}`);
    await this.startClient(interpreter);
  }

  private async startClient(interpreter: Interpreter): Promise<void> {
    const launch = buildServerCommand(interpreter.command, vscode.workspace.getConfiguration(SECTION).get("serverArgs"));
    launch.problems.forEach((p) => this.output.appendLine(`[lockgate] ${p}`));
    this.output.appendLine(`[lockgate] starting: ${formatCommandLine(launch)}`);
    const serverOptions: ServerOptions = serverExecutable(launch, firstFolder()?.uri.fsPath);
    const client = new LanguageClient(SECTION, "Lockgate", serverOptions, this.clientOptions());
    this.client = client;
    this.stateListeners.push(client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.setState("running", `${formatCommandLine(launch)}`);
      else if (e.newState === State.Starting) this.setState("starting");
      else this.setState("stopped", "the server process ended; see the output");
    }));
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.setState("failed", String(error));
        this.output.appendLine(`[lockgate] the server did not start: ${String(error)}`);
      }
    }
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [{ language: LANGUAGE_ID, scheme: "file" }, { language: LANGUAGE_ID, scheme: "untitled" }],
      outputChannel: this.output,
      initializationOptions: { [SECTION]: currentServerSettings(firstFolder()) },
      middleware: {
        ...this.middleware,
        workspace: {
          configuration: async (params, token, next) => {
            const fallback = await next(params, token);
            if (!Array.isArray(fallback)) return fallback;
            return answerConfiguration(params.items, fallback, (scope) => configReader(scope ? vscode.Uri.parse(scope) : undefined));
          },
        },
      },
    };
  }

  private fail(result: Extract<ProbeResult, { ok: false }>, interpreter: Interpreter): void {
    const message = problemMessage(result, interpreter.command);
    this.output.appendLine(`[lockgate] ${message}`);
    this.setState("failed", message);
    void this.offerFix(message, result, interpreter);
  }

  private async offerFix(message: string, result: Extract<ProbeResult, { ok: false }>, interpreter: Interpreter): Promise<void> {
    const install = "Install in Terminal";
    const choose = "Choose Interpreter";
    const actions = result.problem === "no-lockgate" || result.problem === "no-lsp-extra" ? [install, choose] : [choose];
    const picked = await vscode.window.showErrorMessage(message, ...actions, "Show Output");
    if (picked === install) {
      const terminal = vscode.window.createTerminal("Lockgate: install");
      terminal.show();
      terminal.sendText(installCommand(pythonFor(result, interpreter.command)));
    } else if (picked === choose) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "lockgate.interpreter");
    } else if (picked === "Show Output") {
      this.output.show(true);
    }
  }

  private setState(state: ServerState, detail?: string): void {
    this.state = state;
    this.detail = detail;
    this.render();
  }

  private render(): void {
    const view = statusView(this.state, this.detail);
    this.status.text = view.text;
    this.status.tooltip = view.tooltip;
    this.status.backgroundColor = view.alarm ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }
}
