// Fills a gateway's catalog database: through its admin API (/admin/v1), as an operator would
// (providers and API keys, a few requests in flight; secrets are write-only, so the API keys'
// values come only from the answers to their creation), and in bulk through the catalog's store
// on the embedded database while no gateway has it open.
//
// Why the bulk path: every admin write reloads the whole snapshot before it answers (a full
// SELECT of every record, every secret opened, the catalog view and the API key maps rebuilt),
// and on the embedded database (PGlite, synchronous WebAssembly) one request runs to its end
// before the next is read, so writes do not overlap and their reloads do not coalesce. A write
// costs O(records): about 30 ms at 300 records, 125 ms at 1,100, so 11,000 records through the
// admin API would take over an hour. The bulk path calls the same CatalogStore.create (the same
// validation, the gateway's record checks, sealing and audit line) without the per-write reload.
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** `count` indices run through `work`, `concurrency` at a time. */
async function pool(count, concurrency, work) {
  let next = 0;
  const worker = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** POSTs `body` to the admin API; returns the parsed 201 answer, throws with the answer otherwise. */
async function create(base, adminKey, kind, body) {
  const res = await fetch(`${base}/admin/v1/${kind}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST /admin/v1/${kind} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Seeds `providers` providers (one of them `providerSlug`, the rest filler, all Anthropic at
 * `upstream`), the Bedrock integration `bedrock` when given, and `apiKeys` API keys. Resolves with
 * the keys (as answered, once each) and how long each part took.
 */
export async function seedCatalog({
  port,
  adminKey,
  upstream,
  providerSlug,
  bedrock,
  providers,
  apiKeys,
  concurrency = 8,
}) {
  const base = `http://127.0.0.1:${port}`;
  const started = process.hrtime.bigint();
  const seconds = (since) => Number(process.hrtime.bigint() - since) / 1e9;
  // The slug the benchmark's requests name sits in the middle of the filler.
  const benchIndex = Math.floor(providers / 2);
  await pool(providers, concurrency, (i) =>
    create(base, adminKey, 'providers', {
      slug: i === benchIndex ? providerSlug : `p-${String(i).padStart(4, '0')}`,
      provider: 'anthropic',
      apiKey: `sk-bench-${String(i).padStart(4, '0')}`,
      baseUrl: upstream,
    }),
  );
  if (bedrock) await create(base, adminKey, 'providers', { provider: 'bedrock', ...bedrock });
  const providersSeconds = seconds(started);
  const keysStarted = process.hrtime.bigint();
  const keys = new Array(apiKeys);
  await pool(apiKeys, concurrency, async (i) => {
    const created = await create(base, adminKey, 'api-keys', { user: { user_id: `u-${i}` } });
    if (typeof created.key !== 'string')
      throw new Error(`POST /admin/v1/api-keys answered without "key": ${JSON.stringify(created).slice(0, 300)}`);
    keys[i] = created.key;
  });
  return {
    keys,
    providers: providers + (bedrock ? 1 : 0),
    apiKeys,
    concurrency,
    providersSeconds,
    apiKeysSeconds: seconds(keysStarted),
    seconds: seconds(started),
  };
}

/** Reads a list of the admin API: `{ object: 'list', data }`. */
export async function listRecords(port, adminKey, kind) {
  const res = await fetch(`http://127.0.0.1:${port}/admin/v1/${kind}`, {
    headers: { authorization: `Bearer ${adminKey}` },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /admin/v1/${kind} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Adds `providers` filler providers and `apiKeys` API keys to the embedded catalog database in
 * `dataDir` (sealed with `encryptionKey`, base64), through CatalogStore.create with the gateway's
 * own record checks. No gateway may have the directory open. Resolves with the keys and the time.
 */
export async function seedStore({
  root,
  dataDir,
  encryptionKey,
  upstream,
  providers,
  apiKeys,
  firstProvider = 0,
  firstUser = 0,
}) {
  const require = createRequire(join(root, 'examples/server/package.json'));
  const { CatalogStore, SecretBox, migrate, openEmbeddedDatabase } = require('@gw/catalog');
  const { catalogRecordChecks } = require(join(root, 'examples/server/dist/catalog/record-checks.js'));
  const started = process.hrtime.bigint();
  const db = await openEmbeddedDatabase(dataDir);
  const keys = [];
  try {
    await migrate(db);
    const hooks = catalogRecordChecks({ signer: () => undefined, acceptsIdentityTokens: false });
    const store = new CatalogStore(db, new SecretBox(Buffer.from(encryptionKey, 'base64')), hooks);
    for (let i = firstProvider; i < firstProvider + providers; i++) {
      await store.create(
        'providers',
        {
          slug: `p-${String(i).padStart(4, '0')}`,
          provider: 'anthropic',
          apiKey: `sk-bench-${String(i).padStart(4, '0')}`,
          baseUrl: upstream,
        },
        'bench-seed',
      );
    }
    for (let i = firstUser; i < firstUser + apiKeys; i++) {
      keys.push((await store.create('api-keys', { user: { user_id: `u-${i}` } }, 'bench-seed')).key);
    }
  } finally {
    await db.close();
  }
  return { keys, providers, apiKeys, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
