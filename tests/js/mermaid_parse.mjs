// Parse mermaid diagrams with mermaid's own parser, as GitHub's renderer would.
//
// Usage: node mermaid_parse.mjs NODE_MODULES < diagrams.json
// stdin: a JSON array of diagram texts; stdout: a JSON array, one entry per diagram,
// {"ok": true, "type": "flowchart-v2"} or {"ok": false, "error": "..."}.
//
// mermaid 11 is an ES module written for browsers: it needs `window` and `document`
// (DOMPurify binds to them when mermaid is imported), so a jsdom window is set up first.
// Only `mermaid.parse` runs: it checks the text against the diagram's grammar without
// laying anything out (jsdom has no layout engine).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node mermaid_parse.mjs NODE_MODULES < diagrams.json");
  process.exit(2);
}
const load = (path) => import(pathToFileURL(join(modules, path)).href);

const { JSDOM } = await load("jsdom/lib/api.js");
const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ["DOMParser", "Element", "HTMLElement", "Node", "DocumentFragment"]) {
  if (!(name in globalThis)) globalThis[name] = dom.window[name];
}

const mermaid = (await load("mermaid/dist/mermaid.core.mjs")).default;
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

const diagrams = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const text of diagrams) {
  try {
    const parsed = await mermaid.parse(text);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
