// Validates Kubernetes manifests against the API schemas of a current Kubernetes release, offline
// (the kubernetes-models package: Kubernetes 1.34's OpenAPI schemas), in two passes:
//
//   1. each document's JSON schema (types, required fields, enums, formats) with the validator
//      kubernetes-models generates for its apiVersion and kind;
//   2. unknown fields (which that validator lets through and an API server with strict field
//      validation refuses, or silently drops): every document is compiled by TypeScript as an
//      object literal of the kind's interface, whose excess-property check names each field the
//      API does not have.
//
//   node scripts/container/validate-manifests.mjs [file or folder ...]   (default: deploy/kubernetes)
//
// Prints one line per document ("ok <file> <Kind>/<name>") and one per problem
// ("error <file>: ..."); exits 1 when there is any problem.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const inputs = args.length > 0 ? args : [join(root, 'deploy', 'kubernetes')];

/** Every .yaml/.yml file under the given files and folders, in a stable order. */
function manifestFiles(paths) {
  const files = [];
  for (const path of paths) {
    const full = resolve(path);
    if (statSync(full).isDirectory()) {
      for (const name of readdirSync(full).sort()) {
        const child = join(full, name);
        if (statSync(child).isDirectory()) files.push(...manifestFiles([child]));
        else if (/\.ya?ml$/.test(name)) files.push(child);
      }
    } else files.push(full);
  }
  return files;
}

/** `apps/v1` → the kubernetes-models module path `apps/v1`; `v1` (the core group) → `v1`. */
function modelModule(apiVersion) {
  if (typeof apiVersion !== 'string' || !/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion))
    return undefined;
  return `kubernetes-models/${apiVersion}`;
}

const problems = [];
const checked = [];
for (const file of manifestFiles(inputs)) {
  const shown = relative(root, file) || file;
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  for (const [index, doc] of docs.entries()) {
    if (doc.errors.length > 0) {
      problems.push(`error ${shown}: document ${index + 1}: YAML: ${doc.errors[0].message.split('\n')[0]}`);
      continue;
    }
    const value = doc.toJS();
    if (value === null || value === undefined) continue;
    const where = `${shown}: ${value.kind ?? '?'}/${value.metadata?.name ?? '?'}`;
    const module = modelModule(value.apiVersion);
    let Model;
    try {
      Model = module && (await import(module))[value.kind];
    } catch {
      Model = undefined;
    }
    if (typeof Model !== 'function') {
      problems.push(`error ${where}: unknown apiVersion/kind ${value.apiVersion} ${value.kind}`);
      continue;
    }
    try {
      new Model(value).validate();
    } catch (error) {
      problems.push(`error ${where}: ${String(error.message).split('\n').slice(0, 6).join('; ')}`);
      continue;
    }
    checked.push({ file, shown, where, value, module, kind: value.kind });
  }
}

// Pass 2: unknown fields, through TypeScript's excess-property check.
if (checked.length > 0) {
  const require = createRequire(join(root, 'package.json'));
  const tsc = require.resolve('typescript/bin/tsc');
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(root, '.tmp', 'manifests-'));
  try {
    const names = checked.map((entry, i) => {
      const name = `doc${i}.mts`;
      writeFileSync(
        join(dir, name),
        `import type { I${entry.kind} } from '${entry.module}';\n` +
          `export const manifest: I${entry.kind} = ${JSON.stringify(entry.value, null, 2)};\n`,
      );
      return name;
    });
    const result = spawnSync(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'node20',
        '--moduleResolution',
        'node16',
        '--target',
        'ES2022',
        '--types',
        'node',
        '--pretty',
        'false',
        ...names,
      ],
      { cwd: dir, encoding: 'utf8', timeout: 120_000 },
    );
    const failed = new Set();
    for (const line of `${result.stdout}${result.stderr}`.split('\n')) {
      const match = /^doc(\d+)\.mts\((\d+),\d+\): error TS\d+: (.*)$/.exec(line);
      if (!match) continue;
      const entry = checked[Number(match[1])];
      failed.add(Number(match[1]));
      problems.push(`error ${entry.where}: ${match[3]} (line ${Number(match[2]) - 1} of its JSON form)`);
    }
    if (result.status !== 0 && failed.size === 0) {
      problems.push(
        `error: TypeScript could not check the manifests: ${(result.stdout + result.stderr).slice(0, 500)}`,
      );
    }
    for (const [i, entry] of checked.entries()) if (!failed.has(i)) console.log(`ok ${entry.where}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
for (const problem of problems) console.log(problem);
process.exit(problems.length > 0 ? 1 : 0);
