/** The extension's command ids (contributed in package.json; a unit test keeps the two in step). */
export const COMMANDS = {
  restart: "lockgate.restartServer",
  showGraph: "lockgate.showGraph",
  validateWorkspace: "lockgate.validateWorkspace",
  showOutput: "lockgate.showOutput",
} as const;

/**
 * The server's own command (lockgate/lsp/code_actions.py SHOW_GRAPH). vscode-languageclient
 * registers it, so the extension must not contribute a command with this id.
 */
export const SERVER_GRAPH_COMMAND = "lockgate.showFlowGraph";
