import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as Main from '../src/main';
import { MAX_RESPONSES_DAYS } from '../src/start-settings';

/*
 * A start that fails on its environment or its config file stops before the gateway's modules
 * load (main.ts checks first, start-gateway.ts loads the rest): about 0.2 CPU-s instead of 1.
 * Observed as jest loads the modules: each start runs in a module registry of its own
 * (jest.isolateModules), so every module it loads is counted, and start-gateway.ts is replaced by
 * a stand-in that only records what main.ts hands it.
 */
type Loads = Record<string, number>;
const seen = globalThis as { failFastLoads?: Loads };
const counted = (name: string) => {
  seen.failFastLoads = { ...seen.failFastLoads, [name]: (seen.failFastLoads?.[name] ?? 0) + 1 };
};
jest.mock('../src/start-gateway', () => {
  (globalThis as { failFastCount?: (name: string) => void }).failFastCount?.('startGateway');
  return { startGateway: jest.fn(async (...args: unknown[]) => ({ handedOver: args })) };
});
jest.mock('express', () => {
  (globalThis as { failFastCount?: (name: string) => void }).failFastCount?.('express');
  return jest.requireActual('express');
});
jest.mock('@gw/mcp-gateway', () => {
  (globalThis as { failFastCount?: (name: string) => void }).failFastCount?.('mcpGateway');
  return jest.requireActual('@gw/mcp-gateway');
});
jest.mock('@gw/model-router', () => {
  (globalThis as { failFastCount?: (name: string) => void }).failFastCount?.('modelRouter');
  return jest.requireActual('@gw/model-router');
});
jest.mock('zod', () => {
  (globalThis as { failFastCount?: (name: string) => void }).failFastCount?.('zod');
  return jest.requireActual('zod');
});
(globalThis as { failFastCount?: (name: string) => void }).failFastCount = counted;

/** Runs `startFromEnvironment(env)` in a fresh module registry; returns its outcome and what it loaded. */
async function isolatedStart(env: NodeJS.ProcessEnv): Promise<{ outcome: unknown; loads: Loads }> {
  seen.failFastLoads = {};
  let started!: Promise<unknown>;
  // The checks and the load of start-gateway.ts run before startFromEnvironment's first await.
  jest.isolateModules(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh copy in this registry
    started = (require('../src/main') as typeof Main).startFromEnvironment(env);
  });
  const outcome = await started.then(
    (value) => value,
    (error: Error) => error.message,
  );
  return {
    outcome,
    loads: { startGateway: 0, express: 0, mcpGateway: 0, modelRouter: 0, zod: 0, ...seen.failFastLoads },
  };
}

const base = { LOG_LEVEL: 'error', HOST: '127.0.0.1' };
const configFile = (config: unknown) => {
  const path = join(mkdtempSync(join(tmpdir(), 'gw-fail-fast-')), 'config.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
};
const nothingLoaded = { startGateway: 0, express: 0, mcpGateway: 0, modelRouter: 0 };

describe('a start that fails on its environment or config file', () => {
  it.each([
    ['TRUSTED_PROXIES', '10.0.0.0/8', 'TRUSTED_PROXIES must be a comma-separated list of IP addresses'],
    ['SHUTDOWN_GRACE_MS', '10s', 'SHUTDOWN_GRACE_MS must be a whole number of at least 0, such as 10000 (got "10s").'],
    ['PUBLIC_BASE_URL', 'https://gateway.example.com/path', 'PUBLIC_BASE_URL must be an origin only'],
    ['GATEWAY_RESPONSES_DAYS', '3651', 'GATEWAY_RESPONSES_DAYS must be at most 3650, such as 30 (got "3651").'],
    ['PORT', 'eighty', 'PORT must be a whole number from 0 to 65535, such as 8787 (got "eighty").'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be one of debug, info, warn, error (got "loud").'],
  ])('a bad %s stops it before the config schema and the gateway load', async (name, value, message) => {
    const { outcome, loads } = await isolatedStart({ ...base, [name]: value });
    expect(outcome).toContain(message);
    expect(loads).toEqual({ ...nothingLoaded, zod: 0 });
  });

  it.each([
    [
      'a 1024-bit key',
      { type: 'rsa', modulusLength: 1024 },
      'The signing key has 1024 bits; at least 2048 are required.',
    ],
    ['an EC key', { type: 'ec', namedCurve: 'P-256' }, 'The signing key is an EC key; an RSA key is required.'],
  ])('JWT_PRIVATE_KEY holding %s stops it before the gateway loads', async (_what, kind, message) => {
    const { type, ...options } = kind as { type: 'rsa' | 'ec' };
    const { privateKey } = generateKeyPairSync(type as 'rsa', {
      ...(options as { modulusLength: number }),
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const { outcome, loads } = await isolatedStart({ ...base, JWT_PRIVATE_KEY: privateKey });
    expect(outcome).toBe(message);
    expect(loads).toEqual({ ...nothingLoaded, zod: 0 });
  });

  it('a bad GATEWAY_ALLOWED_ORIGINS stops it before the gateway loads', async () => {
    const { outcome, loads } = await isolatedStart({ ...base, GATEWAY_ALLOWED_ORIGINS: 'ftp://app.example.com' });
    expect(outcome).toContain('GATEWAY_ALLOWED_ORIGINS must be comma-separated origins');
    // Origins are read with @gw/identity-forwarding/identity, whose entry loads express.
    expect(loads).toEqual({ ...nothingLoaded, express: 1, zod: 0 });
  });

  it.each([
    ['an unknown field', {}, { mcpServer: [] }, 'config (root): unknown field "mcpServer".'],
    [
      'a weak GATEWAY_ADMIN_KEY',
      { GATEWAY_ADMIN_KEY: 'short' },
      {},
      'GATEWAY_ADMIN_KEY must be at least 24 characters',
    ],
    [
      'GATEWAY_ADMIN_CLAIM without jwt_validation',
      { GATEWAY_ADMIN_CLAIM: 'groups=admins' },
      {},
      'GATEWAY_ADMIN_CLAIM needs auth.jwt_validation in the config',
    ],
    [
      'a bad GATEWAY_ACCESS_MODE',
      { GATEWAY_ACCESS_MODE: 'closed' },
      {},
      'GATEWAY_ACCESS_MODE must be "open", "report"',
    ],
  ])('%s in or with the config file stops it before the gateway loads', async (_what, env, config, message) => {
    const { outcome, loads } = await isolatedStart({ ...base, ...env, GATEWAY_CONFIG: configFile(config) });
    expect(outcome).toContain(message);
    expect(loads).toEqual({ ...nothingLoaded, zod: 1 });
  });

  it('a start whose checks pass hands the checked settings and config file to start-gateway.ts', async () => {
    const path = configFile({ access: { mode: 'report' } });
    const { outcome, loads } = await isolatedStart({ ...base, PORT: '0', GATEWAY_CONFIG: path });
    expect(loads).toMatchObject({ startGateway: 1 });
    const [env, , settings, checked, signingKey] = (outcome as { handedOver: unknown[] }).handedOver;
    expect(env).toMatchObject({ GATEWAY_CONFIG: path });
    expect(settings).toMatchObject({ port: 0, host: '127.0.0.1', graceMs: 10_000, responsesDays: 30 });
    expect(checked).toMatchObject({ fixedMode: { mode: 'report', source: 'config' }, adminClaim: undefined });
    // No JWT_PRIVATE_KEY: the temporary key is made once the catalog is open, when needed.
    expect(signingKey).toBeUndefined();
  });

  it("checks GATEWAY_RESPONSES_DAYS against the catalog's own maximum", () => {
    const { MAX_RESPONSE_RETENTION_DAYS } = jest.requireActual<{ MAX_RESPONSE_RETENTION_DAYS: number }>('@gw/catalog');
    expect(MAX_RESPONSES_DAYS).toBe(MAX_RESPONSE_RETENTION_DAYS);
  });
});
