/**
 * The language-server lifecycle: resolve the interpreter, check that it can run `lockgate lsp`
 * (and say how to fix it when not), start the client, track its state in the status bar,
 * restart on demand or when the interpreter changes.
 */
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  State,
  type ErrorHandler,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from "vscode-languageclient/node";
import { CrashPolicy, gaveUpMessage, isReplacedClientMessage, OutputTail, startFailureMessage, windowText } from "./crashes";
import { describeInterpreter, resolveInterpreter, type Interpreter } from "./interpreter";
import { fixCommand, probe, problemMessage, type ProbeResult } from "./probe";
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

/**
 * The client, minus the notifications the controller replaces with its own (which say what the
 * server printed and how to fix it); the messages still go to the output.
 */
class LockgateClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    super.error(message, data, isReplacedClientMessage(message) ? false : showNotification);
  }
}

/**
 * The output channel, with what the server writes to stderr (the client passes it to `append`;
 * its own log lines go through `appendLine`) also kept in `tail`. A plain delegating object, not
 * a Proxy: VS Code may hand out a frozen channel, whose methods a Proxy may not replace.
 */
function teeStderr(output: vscode.OutputChannel, tail: OutputTail): vscode.OutputChannel {
  return {
    get name() {
      return output.name;
    },
    append: (value: string) => {
      tail.push(value);
      output.append(value);
    },
    appendLine: (value: string) => output.appendLine(value),
    replace: (value: string) => output.replace(value),
    clear: () => output.clear(),
    show: (first?: boolean | vscode.ViewColumn, preserveFocus?: boolean) =>
      typeof first === "boolean" || first === undefined ? output.show(first) : output.show(first, preserveFocus),
    hide: () => output.hide(),
    // the extension owns the channel; a client being replaced must not close it
    dispose: () => undefined,
  };
}

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly stderr = new OutputTail();
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
    const health = { running: false, policy: new CrashPolicy() };
    this.stderr.clear();
    const client = new LockgateClient(SECTION, "Lockgate", serverOptions, this.clientOptions(this.errorHandler(health)));
    this.client = client;
    this.stateListeners.push(client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) {
        health.running = true;
        this.setState("running", `${formatCommandLine(launch)}`);
      } else if (e.newState === State.Starting) this.setState("starting");
      else if (this.state !== "failed") this.setState("stopped", "the server process ended; see the output");
    }));
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        const message = startFailureMessage(formatCommandLine(launch), this.stderr.lastLines(), String(error));
        this.output.appendLine(`[lockgate] the server did not start: ${String(error)}`);
        this.setState("failed", message);
        void this.offerRestart(message);
      }
    }
  }

  /**
   * Restarts a server that crashed after it was running (a few times, see `CrashPolicy`), never
   * one that ended during start-up (the start failure is reported by `startClient`).
   */
  private errorHandler(health: { running: boolean; policy: CrashPolicy }): ErrorHandler {
    return {
      error: (_error, _message, count) => ({ action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
      closed: () => {
        const decision = health.policy.onEnded(health.running);
        if (!health.running) return { action: CloseAction.DoNotRestart, handled: true };
        const said = this.stderr.lastLines();
        const within = windowText(health.policy.windowMs);
        this.output.appendLine(`[lockgate] the server process ended (${decision.crashes} time(s) within ${within})` +
          (decision.restart ? "; restarting it" : "; not restarting it again"));
        this.stderr.clear();
        if (decision.restart) return { action: CloseAction.Restart, handled: true };
        const message = gaveUpMessage(decision.crashes, said, health.policy.windowMs);
        this.setState("failed", message);
        void this.offerRestart(message);
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private clientOptions(errorHandler: ErrorHandler): LanguageClientOptions {
    return {
      documentSelector: [{ language: LANGUAGE_ID, scheme: "file" }, { language: LANGUAGE_ID, scheme: "untitled" }],
      outputChannel: teeStderr(this.output, this.stderr),
      errorHandler,
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
    const fix = fixCommand(result, interpreter.command);
    const actions = fix ? [install, choose] : [choose];
    const picked = await vscode.window.showErrorMessage(message, ...actions, "Show Output");
    if (picked === install && fix) {
      const terminal = vscode.window.createTerminal("Lockgate: install");
      terminal.show();
      terminal.sendText(fix);
    } else if (picked === choose) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "lockgate.interpreter");
    } else if (picked === "Show Output") {
      this.output.show(true);
    }
  }

  /** The notification for a server that ended: restart it, see its output, or change the settings. */
  private async offerRestart(message: string): Promise<void> {
    const restart = "Restart Server";
    const settings = "Open Settings";
    const picked = await vscode.window.showErrorMessage(message, restart, "Show Output", settings);
    if (picked === restart) await this.restart("restart requested");
    else if (picked === settings) await vscode.commands.executeCommand("workbench.action.openSettings", "lockgate.");
    else if (picked === "Show Output") this.output.show(true);
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
