import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { escapeHtml, graphHtml, inlineSvg } from "../../src/graphHtml";
import { run } from "../../src/process";
import { graphCommand } from "../../src/serverCommand";
import * as path from "node:path";
import { EXAMPLES_DIR } from "./paths";

const PYTHON = process.env.LOCKGATE_TEST_INTERPRETER ?? "python3";

describe("graphHtml", () => {
  it("inlines the SVG that lockgate graph draws, under a script-free CSP", async () => {
    const file = path.join(EXAMPLES_DIR, "code-review.stratum.yaml");
    const result = await run(graphCommand([PYTHON], file));
    assert.equal(result.code, 0, result.stderr);
    const html = graphHtml({ title: "code-review.stratum.yaml: change", svg: result.stdout, cspSource: "vscode-webview:" });
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; img-src vscode-webview: data:; style-src &#39;unsafe-inline&#39;">/);
    assert.ok(!html.includes("<?xml"), "no XML prolog inside HTML");
    assert.ok(!html.includes("<!DOCTYPE svg"));
    const svg = html.slice(html.indexOf("<svg"), html.lastIndexOf("</svg>"));
    for (const step of ["implement", "review", "sign_off"]) assert.ok(svg.includes(step), `step ${step} is drawn`);
  });

  it("shows the error above the last good picture", () => {
    const html = graphHtml({ title: "t", svg: "<svg><g/></svg>", error: "flows.main: <bad>", note: "showing the last graph" });
    assert.match(html, /<div class="error" role="alert">flows.main: &lt;bad&gt;<\/div>/);
    assert.ok(html.indexOf("role=\"alert\"") < html.indexOf("<svg"));
    assert.match(html, /showing the last graph/);
  });

  it("says so when the output is not SVG", () => {
    assert.match(graphHtml({ title: "t", svg: "Traceback ..." }), /did not produce an SVG picture/);
  });

  it("strips scripts and event handlers from the SVG and escapes the title", () => {
    const svg = inlineSvg(`<?xml version="1.0"?><svg onload="x()"><script>alert(1)</script><text onclick='y()'>a</text></svg>`);
    assert.equal(svg, "<svg><text>a</text></svg>");
    assert.equal(inlineSvg("no picture"), undefined);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    assert.match(graphHtml({ title: "<script>" }), /<title>&lt;script&gt;<\/title>/);
  });
});
