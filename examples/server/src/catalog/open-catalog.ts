import { hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CatalogStore,
  ConfigRecords,
  LiveCatalog,
  MIN_ADMIN_KEY_LENGTH,
  RECORD_KINDS,
  SecretBox,
  ToolPins,
  migrate,
  openEmbeddedDatabase,
  openPostgres,
  parseEncryptionKey,
  type CatalogDatabase,
  type CatalogStoreHooks,
  type LiveCatalogStatus,
} from '@gw/catalog';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/schema';

/** The catalog of a running gateway: its database, store, live snapshot and admin credential. */
export interface GatewayCatalog {
  db: CatalogDatabase;
  store: CatalogStore;
  live: LiveCatalog;
  configRecords: ConfigRecords;
  /** The admin key: `GATEWAY_ADMIN_KEY`, or one generated for the embedded development default. */
  adminKey: string | undefined;
  /** Signs console session cookies: derived from the encryption key, so the same on every instance. */
  sessionSecret: Buffer;
  /** The tools of MCP servers with `tool_pinning`, as seen and approved. */
  toolPins: ToolPins;
  /** Authenticates response cache entries in a shared Redis: derived from the encryption key, so the same on every instance. */
  cacheMacKey: Buffer;
  /** The secret box that seals the catalog's secrets (and stored responses, which are message content). */
  box: SecretBox;
  /** Seals the thinking in Responses reasoning items: derived from the encryption key, so the same on every instance. */
  reasoningKey: Buffer;
  /** Authenticates virtual MCP servers' session ids: derived from the encryption key, so the same on every instance. */
  virtualSessionKey: Buffer;
  /** Stops following the database and closes it. */
  close(): Promise<void>;
}

/** Where the catalog lives and how it is opened, from the environment (CONTRACT section 8). */
export interface OpenCatalogOptions {
  env: NodeJS.ProcessEnv;
  config: GatewayConfig;
  logger: Logger;
  /** The embedded development default is running (no `GATEWAY_CONFIG`, not production): an admin key is generated. */
  developmentDefault: boolean;
  /** The gateway's own checks of records (see `CatalogStoreHooks`). */
  hooks?: CatalogStoreHooks;
  /** Called after every reload of the snapshot and every failed one. */
  onStatus?: (status: LiveCatalogStatus) => void;
}

const KEY_FILE = 'encryption.key';

function durationEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name]?.trim();
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new Error(
      `${name} must be a whole number of milliseconds, such as ${fallback} (got "${value.slice(0, 40)}").`,
    );
  }
  return Number(value);
}

/** The encryption keys: `GATEWAY_ENCRYPTION_KEY` (seals), `GATEWAY_PREVIOUS_ENCRYPTION_KEYS` (still open). */
export function encryptionKeys(env: NodeJS.ProcessEnv): { current: Buffer | undefined; previous: Buffer[] } {
  const current = env.GATEWAY_ENCRYPTION_KEY?.trim() ? parseEncryptionKey(env.GATEWAY_ENCRYPTION_KEY) : undefined;
  const previous = (env.GATEWAY_PREVIOUS_ENCRYPTION_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
    .map((k) => parseEncryptionKey(k, 'GATEWAY_PREVIOUS_ENCRYPTION_KEYS'));
  if (previous.length > 0 && current === undefined) {
    throw new Error('GATEWAY_PREVIOUS_ENCRYPTION_KEYS needs GATEWAY_ENCRYPTION_KEY: the key that seals from now on.');
  }
  return { current, previous };
}

/** The database the environment names: `DATABASE_URL`, or the embedded one in `GATEWAY_DATA_DIR`. */
export async function openCatalogDatabase(
  env: NodeJS.ProcessEnv,
  onListenError?: (error: Error) => void,
): Promise<CatalogDatabase> {
  const url = env.DATABASE_URL?.trim();
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) throw new Error('DATABASE_URL must be a postgres:// URL.');
    return openPostgres(url, { onListenError });
  }
  return openEmbeddedDatabase(dataDirectory(env));
}

/** `GATEWAY_DATA_DIR`, default `./.gateway-data`, as an absolute path. */
export function dataDirectory(env: NodeJS.ProcessEnv): string {
  return resolve(env.GATEWAY_DATA_DIR?.trim() || './.gateway-data');
}

/**
 * Opens the catalog at start-up: the database (migrated), the encryption keys, the first snapshot
 * (a slug defined both in the config file and in the database stops start-up) and the admin
 * credential. Every refusal is one line saying what to set.
 */
export async function openGatewayCatalog(options: OpenCatalogOptions): Promise<GatewayCatalog> {
  const { env, config, logger } = options;
  const production = env.NODE_ENV === 'production';
  const adminKey = env.GATEWAY_ADMIN_KEY?.trim() || undefined;
  if (adminKey !== undefined && adminKey.length < MIN_ADMIN_KEY_LENGTH) {
    throw new Error(
      `GATEWAY_ADMIN_KEY must be at least ${MIN_ADMIN_KEY_LENGTH} characters, for example: node -e "console.log(crypto.randomBytes(24).toString('base64url'))"`,
    );
  }
  const keys = encryptionKeys(env);
  const reloadIntervalMs = durationEnv(env, 'CATALOG_RELOAD_INTERVAL_MS', 30_000);
  let live: LiveCatalog | undefined;
  const db = await openCatalogDatabase(env, () => live?.connectionLost());
  try {
    await migrate(db);
    let current = keys.current;
    if (current === undefined) {
      const probe = new CatalogStore(db, new SecretBox(randomBytes(32)));
      if (production && (adminKey !== undefined || (await probe.holdsSecrets()))) {
        throw new Error(
          'GATEWAY_ENCRYPTION_KEY is not set: with NODE_ENV=production the catalog does not store secrets without it (32 bytes, base64: node -e "console.log(crypto.randomBytes(32).toString(\'base64\'))").',
        );
      }
      current = production ? randomBytes(32) : developmentKey(env, logger);
    }
    const box = new SecretBox(current, keys.previous);
    const configRecords = new ConfigRecords({
      providers: config.providers,
      mcpServers: config.mcpServers,
      prompts: config.prompts as { id: string }[] | undefined,
      apiKeys: config.auth?.apiKeys,
      policies: config.policies,
      limits: config.limits,
      configs: config.configs,
      virtualServers: config.virtualServers,
    });
    // An API key of the catalog may name a named config of the config file.
    const store = new CatalogStore(db, box, {
      ...options.hooks,
      recordOutsideStore: (kind, slug) => configRecords.has(kind, slug),
    });
    // Once per database: secrets of earlier gateways are sealed again, bound to their record.
    const sealing = await store.upgradeSealing();
    if (sealing.upgraded > 0)
      logger.info(
        { upgraded: sealing.upgraded },
        `sealed ${sealing.upgraded} catalog records' secrets again, bound to their record (one-time upgrade)`,
      );
    for (const record of sealing.unreadable)
      logger.error(
        { record },
        `catalog record ${record} has a secret no configured key opens; it was not upgraded and stays unreadable: give the secret again`,
      );
    if (keys.previous.length > 0) {
      const resealed = await store.reseal();
      if (resealed > 0)
        logger.info({ resealed }, `re-encrypted ${resealed} catalog records under GATEWAY_ENCRYPTION_KEY`);
    }
    live = new LiveCatalog(db, store, {
      // The embedded database has one writer, this process, whose every write notifies it: the
      // safety-net reload only matters when other instances share a server.
      reloadIntervalMs: db.kind === 'embedded' ? 24 * 60 * 60 * 1000 : reloadIntervalMs,
      changeTracking: db.kind === 'embedded' ? 'audit' : 'versions',
      onChange: options.onStatus,
      onUnreadable: (kind, slug) =>
        logger.error(
          { record: `${kind}/${slug}` },
          `catalog record ${kind}/${slug} is sealed with a key the gateway does not have, or was changed outside the gateway (its secret moved, or its baseUrl or url rewritten): it is not served. Set GATEWAY_ENCRYPTION_KEY (and GATEWAY_PREVIOUS_ENCRYPTION_KEYS) as on the instance that wrote it, or give the secret again through the admin API`,
        ),
    });
    await live.start();
    // Other instances' approvals arrive within a second when they share a PostgreSQL server.
    const toolPins = new ToolPins(db, (error) =>
      logger.warn({ err: { message: (error as Error).message } }, 'a tool sighting could not be recorded'),
    );
    await toolPins.start(db.kind === 'postgres' ? 1_000 : 0);
    for (const kind of RECORD_KINDS) {
      const slugs = [...(live.snapshot.records.get(kind)?.keys() ?? [])];
      const both =
        kind === 'api-keys'
          ? configRecords.apiKeyIdIn(new Set(slugs))
          : slugs.find((slug) => configRecords.has(kind, slug));
      if (both !== undefined) {
        throw new Error(
          `${kind} "${both}" is defined both in the config file and in the catalog database: remove it from one of them.`,
        );
      }
    }
    let admin = adminKey;
    if (admin === undefined && options.developmentDefault && !production) {
      admin = `gw-admin-${randomBytes(18).toString('base64url')}`;
    }
    const started = live;
    return {
      db,
      store,
      live: started,
      configRecords,
      adminKey: admin,
      sessionSecret: Buffer.from(hkdfSync('sha256', current, Buffer.alloc(0), 'gw-console-session', 32)),
      toolPins,
      cacheMacKey: Buffer.from(hkdfSync('sha256', current, Buffer.alloc(0), 'gw-response-cache-mac', 32)),
      box,
      reasoningKey: Buffer.from(hkdfSync('sha256', current, Buffer.alloc(0), 'gw-responses-reasoning', 32)),
      virtualSessionKey: Buffer.from(hkdfSync('sha256', current, Buffer.alloc(0), 'gw-virtual-mcp-session', 32)),
      close: async () => {
        await toolPins.stop();
        await started.stop();
        await db.close();
      },
    };
  } catch (error) {
    await live?.stop().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw error;
  }
}

/** The development encryption key in the data directory, generated (with a warning) the first time. */
function developmentKey(env: NodeJS.ProcessEnv, logger: Logger): Buffer {
  const dir = dataDirectory(env);
  const file = join(dir, KEY_FILE);
  if (existsSync(file)) return parseEncryptionKey(readFileSync(file, 'utf8'), file);
  mkdirSync(dir, { recursive: true });
  const key = SecretBox.generateKey();
  writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  logger.warn(
    { file },
    `GATEWAY_ENCRYPTION_KEY is not set: generated a development encryption key into ${file}. Set GATEWAY_ENCRYPTION_KEY in production.`,
  );
  return Buffer.from(key, 'base64');
}
