/** What the status-bar item says for each server state. Pure. */

export type ServerState = "starting" | "running" | "stopped" | "failed";

export interface StatusView {
  readonly text: string;
  readonly tooltip: string;
  /** Use the error background (a failed server needs the user's attention). */
  readonly alarm: boolean;
}

export function statusView(state: ServerState, detail?: string): StatusView {
  const suffix = detail ? `\n${detail}` : "";
  switch (state) {
    case "starting":
      return { text: "$(sync~spin) Lockgate", tooltip: `Lockgate language server: starting${suffix}`, alarm: false };
    case "running":
      return { text: "$(check) Lockgate", tooltip: `Lockgate language server: running${suffix}\nClick to show the output.`, alarm: false };
    case "stopped":
      return { text: "$(circle-slash) Lockgate", tooltip: `Lockgate language server: stopped${suffix}\nClick to show the output.`, alarm: false };
    case "failed":
      return { text: "$(error) Lockgate", tooltip: `Lockgate language server: not running${suffix}\nClick to show the output.`, alarm: true };
  }
}
