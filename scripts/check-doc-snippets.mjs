#!/usr/bin/env node
// Type-checks every ```ts / ```typescript / ```js / ```javascript block of the README.md files and
// docs/*.md against the packages' published types (their built dist/*.d.ts: run `npm run build`
// first). Each block is one ES module of a generated project in .tmp/, where `@gw/<name>` resolves
// to packages/<name> as an adopter's node_modules would; express, openai, @anthropic-ai/sdk,
// portkey-ai and @types/node come from the repository's own devDependencies.
//
// A block that is not a whole module says so in an HTML comment right before its fence:
//
//   <!-- snippet: fragment
//   import express from 'express';
//   const app = express();
//   -->
//
// checks the block with the comment's lines (hidden from readers) placed before it, and
//
//   <!-- snippet: skip: why it cannot compile -->
//
// skips it; the reason is required.
//
// Usage: node scripts/check-doc-snippets.mjs [file.md ...]   (default: every README.md and docs/*.md)
// Exit 0 when every block compiles, 1 with `file:line: message` lines otherwise.
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LANGUAGES = new Map([
  ['ts', 'ts'],
  ['typescript', 'ts'],
  ['js', 'js'],
  ['javascript', 'js'],
]);

/** The Markdown files whose code blocks are checked by default. */
export function defaultFiles() {
  const files = ['README.md'];
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(join(root, group))) {
      if (existsSync(join(root, group, name, 'README.md'))) files.push(join(group, name, 'README.md'));
    }
  }
  for (const name of readdirSync(join(root, 'docs'))) if (name.endsWith('.md')) files.push(join('docs', name));
  return files.map((file) => join(root, file));
}

/** The code blocks of one Markdown text, with the marker comment before each, if any. */
export function extractSnippets(markdown, file) {
  const lines = markdown.split('\n');
  const snippets = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].trim().startsWith(fence)) end++;
    const body = lines.slice(i + 1, end).map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line));
    const kind = LANGUAGES.get(lang.toLowerCase());
    if (kind) snippets.push({ file, line: i + 2, kind, code: body.join('\n'), ...marker(lines, i) });
    i = end;
  }
  return snippets;
}

function marker(lines, fenceIndex) {
  let last = fenceIndex - 1;
  while (last >= 0 && lines[last].trim() === '') last--;
  if (last < 0 || !lines[last].trim().endsWith('-->')) return { mode: 'check', prelude: '' };
  let first = last;
  while (first > 0 && !lines[first].includes('<!--')) first--;
  const comment = lines
    .slice(first, last + 1)
    .join('\n')
    .replace(/^[\s\S]*?<!--/, '')
    .replace(/-->\s*$/, '');
  const match = /^\s*snippet:\s*(fragment|skip)\b:?([\s\S]*)$/.exec(comment);
  if (!match) return { mode: 'check', prelude: '' };
  if (match[1] === 'skip') return { mode: 'skip', reason: match[2].trim() };
  const [firstLine, ...rest] = match[2].split('\n');
  return { mode: 'check', prelude: [firstLine.trim(), ...rest].filter((l, n) => n > 0 || l !== '').join('\n') };
}

/** Type-checks the blocks of `files`; resolves with the problems found, as `file:line: message`. */
export function checkSnippets(files = defaultFiles()) {
  const work = join(root, '.tmp', `doc-snippets-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'node_modules', '@gw'), { recursive: true });
  writeFileSync(join(work, 'package.json'), '{ "type": "module", "private": true }\n');
  for (const name of readdirSync(join(root, 'packages'))) {
    if (existsSync(join(root, 'packages', name, 'package.json'))) {
      symlinkSync(join(root, 'packages', name), join(work, 'node_modules', '@gw', name), 'dir');
    }
  }

  const problems = [];
  const skipped = [];
  const sources = new Map();
  let count = 0;
  for (const file of files) {
    for (const snippet of extractSnippets(readFileSync(file, 'utf8'), file)) {
      const where = `${relative(root, snippet.file)}:${snippet.line}`;
      if (snippet.mode === 'skip') {
        if (!snippet.reason) problems.push(`${where}: a "snippet: skip" comment needs a reason`);
        else skipped.push(`${where}: ${snippet.reason}`);
        continue;
      }
      const prelude = snippet.prelude ? `${snippet.prelude}\n` : '';
      const name = join(work, `snippet-${++count}.${snippet.kind}`);
      writeFileSync(name, `${prelude}${snippet.code}\nexport {};\n`);
      sources.set(name, { where: snippet, offset: prelude.split('\n').length - 1 });
    }
  }

  const program = ts.createProgram([...sources.keys()], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    esModuleInterop: true,
    skipLibCheck: true,
    allowJs: true,
    checkJs: true,
    types: ['node'],
    typeRoots: [join(root, 'node_modules', '@types')],
  });
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const source = diagnostic.file && sources.get(resolve(diagnostic.file.fileName));
    if (!source) {
      problems.push(`${diagnostic.file?.fileName ?? '(project)'}: TS${diagnostic.code}: ${message}`);
      continue;
    }
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    const inBlock = line - source.offset;
    const at =
      inBlock < 0
        ? `${relative(root, source.where.file)}:${source.where.line - 1} (the snippet comment's line ${line + 1})`
        : `${relative(root, source.where.file)}:${source.where.line + inBlock}`;
    problems.push(`${at}: TS${diagnostic.code}: ${message}`);
  }
  rmSync(work, { recursive: true, force: true });
  return { checked: count, skipped, problems };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2).map((file) => resolve(file));
  const { checked, skipped, problems } = checkSnippets(args.length ? args : undefined);
  for (const line of skipped) console.log(`skipped ${line}`);
  for (const line of problems) console.error(line);
  console.log(`${checked} code blocks checked, ${skipped.length} skipped, ${problems.length} problems`);
  process.exit(problems.length ? 1 : 0);
}
