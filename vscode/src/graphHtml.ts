/**
 * The HTML of the flow-graph webview: the SVG that `lockgate graph --format svg` drew, inline,
 * under a strict Content-Security-Policy (no scripts at all). Pure, so the page can be rendered
 * outside VS Code (tests, the README screenshot).
 */

export interface GraphPage {
  /** The document's file name and flow, e.g. `code-review.stratum.yaml: change`. */
  readonly title: string;
  /** The SVG document; absent when drawing failed. */
  readonly svg?: string;
  /** Why there is no (fresh) graph: shown above the last good SVG when there is one. */
  readonly error?: string;
  /** `webview.cspSource`; empty outside VS Code. */
  readonly cspSource?: string;
  /** A status line such as "updated 14:02:11". */
  readonly note?: string;
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/**
 * The `<svg ...>...</svg>` element of an SVG document, without XML prolog, DOCTYPE or comments
 * before it, and without any `<script>` or `on*=` handler (the CSP would block them anyway).
 */
export function inlineSvg(document: string): string | undefined {
  const start = document.search(/<svg[\s>]/);
  const end = document.lastIndexOf("</svg>");
  if (start < 0 || end < start) return undefined;
  return document
    .slice(start, end + "</svg>".length)
    .replace(/<script[\s\S]*?<\/script\s*>/gi, "")
    .replace(/\son[a-z]+\s*=\s*("[^"]*"|'[^']*')/gi, "");
}

export function graphHtml(page: GraphPage): string {
  const csp = [`default-src 'none'`, `img-src ${page.cspSource ?? ""} data:`, `style-src 'unsafe-inline'`].join("; ");
  const svg = page.svg ? inlineSvg(page.svg) : undefined;
  const error = page.error ?? (page.svg && !svg ? "lockgate graph did not produce an SVG picture" : undefined);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)}</title>
<style>
  body { margin: 0; padding: 12px 16px; font-family: var(--vscode-font-family, system-ui, sans-serif);
         color: var(--vscode-foreground, #1f2328); background: var(--vscode-editor-background, #ffffff); }
  header { display: flex; align-items: baseline; gap: 12px; margin-bottom: 10px; }
  h1 { font-size: 13px; font-weight: 600; margin: 0; }
  .note { font-size: 12px; opacity: 0.7; }
  .error { white-space: pre-wrap; font-family: var(--vscode-editor-font-family, monospace); font-size: 12px;
           padding: 8px 10px; margin-bottom: 10px; border-left: 3px solid var(--vscode-errorForeground, #d1242f);
           background: var(--vscode-inputValidation-errorBackground, #fff0f0); }
  .paper { background: #ffffff; border-radius: 4px; padding: 8px; display: inline-block; max-width: 100%; }
  .paper svg { max-width: 100%; height: auto; display: block; }
</style>
</head>
<body>
<header><h1>${escapeHtml(page.title)}</h1>${page.note ? `<span class="note">${escapeHtml(page.note)}</span>` : ""}</header>
${error ? `<div class="error" role="alert">${escapeHtml(error)}</div>\n` : ""}${svg ? `<div class="paper">${svg}</div>` : ""}
</body>
</html>
`;
}
