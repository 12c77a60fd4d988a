/**
 * The Python extension's active interpreter, when `ms-python.python` is installed. Optional:
 * it is not an extension dependency, and every API access is defensive because its API has
 * changed shape over the years (`environments` since 2023, `settings.getExecutionDetails` before).
 */
import * as vscode from "vscode";

const PYTHON_EXTENSION = "ms-python.python";

interface EnvironmentPath { readonly path: string }
interface ResolvedEnvironment { readonly executable?: { readonly uri?: vscode.Uri } }
interface PythonApi {
  readonly environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath): Promise<ResolvedEnvironment | undefined>;
    readonly onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  readonly settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] };
  };
}

async function api(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (!extension) return undefined;
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined;
  }
}

/** The active interpreter's command for `resource`'s workspace, or undefined. */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string[] | undefined> {
  const python = await api();
  if (!python) return undefined;
  try {
    if (python.environments) {
      const envPath = python.environments.getActiveEnvironmentPath(resource);
      const resolved = await python.environments.resolveEnvironment(envPath);
      const executable = resolved?.executable?.uri?.fsPath;
      return executable ? [executable] : envPath.path ? [envPath.path] : undefined;
    }
    const command = python.settings?.getExecutionDetails?.(resource)?.execCommand;
    return command && command.length > 0 ? command : undefined;
  } catch {
    return undefined;
  }
}

/** Calls `listener` when the user selects another interpreter in the Python extension. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const event = (await api())?.environments?.onDidChangeActiveEnvironmentPath;
  return event ? event(() => listener()) : undefined;
}
