import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startPostgres, type RunningPostgres } from '../../../packages/catalog/test/postgres';
import { freePort, startRedis, type RunningRedis } from '../../../examples/server/test/cache/cache-support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  within,
  type AnthropicDouble,
} from '../../../examples/server/test/catalog/catalog-support';
import { rsaPem, writeConfig } from '../../../examples/server/test/support';

// The container image of the Containerfile (CONTRACT section 18), built here from the working tree
// (scripts/container/build.sh --assemble-base: the base image is assembled from this machine when
// no registry is reachable), then run with podman as docs/deploy.md says.
jest.setTimeout(300_000);

const root = resolve(__dirname, '..', '..', '..');
const IMAGE = process.env.GW_CONTAINER_IMAGE ?? 'localhost/gateway:container-test';
const DEMO_API_KEY = 'gw-demo-key-not-a-secret';
const run = promisify(execFile);
const suffix = randomBytes(4).toString('hex');

/** podman with the runtime and limits this machine needs (docs/deploy.md); rejects with its stderr. */
async function podman(args: string[], timeoutMs = 120_000): Promise<string> {
  const { stdout } = await run('podman', ['--runtime', process.env.GW_CONTAINER_RUNTIME ?? 'runc', ...args], {
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

/** What `podman run` needs on every machine: the open-file and process limits it may not raise. */
async function limits(): Promise<string[]> {
  const { stdout } = await run('bash', ['-c', 'ulimit -n']);
  const files = stdout.trim();
  return ['--ulimit', `nofile=${files}:${files}`, '--ulimit', 'nproc=32768:32768'];
}

async function healthy(base: string, ms = 90_000): Promise<number> {
  return within(ms, async () => {
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 200 && ((await res.json()) as { status?: string }).status === 'ok';
    } catch {
      return false;
    }
  });
}

/** The host address a container's published port 8787 answers on. */
async function publishedBase(name: string): Promise<string> {
  const port = (await podman(['port', name, '8787/tcp'])).split('\n')[0] as string;
  return `http://${port.replace('0.0.0.0', '127.0.0.1')}`;
}

/** Stops a container with SIGTERM (podman waits up to 15 s before SIGKILL); its time and exit code. */
async function stopTimed(name: string): Promise<{ ms: number; exitCode: number }> {
  const started = Date.now();
  await podman(['stop', '--time', '15', name], 30_000);
  const ms = Date.now() - started;
  const exitCode = Number(await podman(['inspect', '--format', '{{.State.ExitCode}}', name]));
  return { ms, exitCode };
}

beforeAll(async () => {
  if (process.env.GW_CONTAINER_IMAGE) return;
  // Builds (or reuses the layers of) the image; prints each stage's time.
  const { stderr } = await run(
    'bash',
    [join(root, 'scripts', 'container', 'build.sh'), '--assemble-base', '-t', IMAGE],
    {
      cwd: root,
      timeout: 1_500_000,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  process.stderr.write(stderr);
}, 1_600_000);

describe('the image', () => {
  it('runs as user 1000 with a health check, OCI labels, /data as a volume and nothing of the build inside', async () => {
    // podman's inspection: the image's config, and the health check (a Docker-format field) beside it.
    const image = JSON.parse(await podman(['image', 'inspect', '--format', 'json', IMAGE]))[0] as {
      Config: {
        User: string;
        Env: string[];
        ExposedPorts: Record<string, unknown>;
        Volumes: Record<string, unknown>;
        Labels: Record<string, string>;
        StopSignal: string;
      };
      Healthcheck?: { Test: string[] };
    };
    const config = image.Config;
    expect(image.Healthcheck?.Test.join(' ')).toContain('/healthz');
    expect(config.User).toBe('1000:1000');
    expect(Object.keys(config.ExposedPorts)).toEqual(['8787/tcp']);
    expect(Object.keys(config.Volumes)).toEqual(['/data']);
    expect(config.Env).toEqual(expect.arrayContaining(['HOST=0.0.0.0', 'PORT=8787', 'GATEWAY_DATA_DIR=/data']));
    expect(config.Env.join('\n')).not.toMatch(/NPM_CONFIG|npm_config|NODE_EXTRA_CA_CERTS|NODE_ENV/);
    expect(config.StopSignal).toBe('SIGTERM');
    for (const label of ['title', 'description', 'licenses', 'version', 'revision', 'created']) {
      expect(config.Labels[`org.opencontainers.image.${label}`]).toEqual(expect.any(String));
    }
    const { stdout: revision } = await run('git', ['-C', root, 'rev-parse', 'HEAD']);
    expect(config.Labels['org.opencontainers.image.revision']).toBe(revision.trim());
    // No registry setting or CA bundle of the build, and no source or test of the gateway.
    const files = await podman([
      'run',
      '--rm',
      ...(await limits()),
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      'find / -xdev \\( -name .npmrc -o -name npm-ca -o -path /pnpm-store -o -path /src \\) -print; ls /app; ls -ld /app /app/dist; test -w /app && echo writable || echo read-only',
    ]);
    const lines = files.split('\n');
    expect(lines.filter((l) => /\.npmrc|npm-ca|pnpm-store|^\/src/.test(l))).toEqual([]);
    expect(lines).toEqual(expect.arrayContaining(['dist', 'node_modules', 'package.json', 'read-only']));
    expect(lines).not.toContain('test');
    expect(lines).not.toContain('src');
  });
});

describe('one container on the embedded default', () => {
  const name = `gw-ctest-${suffix}`;
  const volume = `gw-ctest-data-${suffix}`;
  const adminKey = newAdminKey();
  let double: AnthropicDouble;
  let base: string;

  beforeAll(async () => {
    double = await startAnthropicDouble();
    await podman(['volume', 'create', volume]);
    // slirp4netns with allow_host_loopback: the container reaches the host's 127.0.0.1 (the
    // double) as 10.0.2.2; its port 8787 is published on the host's 127.0.0.1.
    await podman([
      'run',
      '--detach',
      '--name',
      name,
      '--read-only',
      '--volume',
      `${volume}:/data`,
      '--network',
      'slirp4netns:allow_host_loopback=true',
      '--publish',
      '127.0.0.1::8787',
      '--env',
      `GATEWAY_ADMIN_KEY=${adminKey}`,
      ...(await limits()),
      IMAGE,
    ]);
    base = await publishedBase(name);
    await healthy(base);
  });

  afterAll(async () => {
    await podman(['rm', '--force', '--time', '0', name]).catch(() => undefined);
    await podman(['volume', 'rm', '--force', volume]).catch(() => undefined);
    await double?.close();
  });

  it('is healthy as a non-root user on a read-only root filesystem, writing only to /data', async () => {
    expect(await podman(['exec', name, 'id', '-u'])).toBe('1000');
    expect(await podman(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', name])).toBe('true');
    await expect(podman(['exec', name, 'sh', '-c', 'echo x > /app/probe'])).rejects.toThrow(/Read-only file system/);
    await expect(podman(['exec', name, 'sh', '-c', 'echo x > /etc/probe'])).rejects.toThrow(/Read-only file system/);
    // The embedded database and its development encryption key live in the volume.
    const data = await podman(['exec', name, 'ls', '-a', '/data']);
    expect(data.split('\n')).toEqual(expect.arrayContaining(['PG_VERSION', 'encryption.key']));
    // The image's HEALTHCHECK, run as the runtime would.
    await podman(['healthcheck', 'run', name]);
    expect(await podman(['inspect', '--format', '{{.State.Health.Status}}', name])).toBe('healthy');
    // Listening on every address of the container (HOST=0.0.0.0), port 8787.
    expect(await podman(['logs', name])).toContain('gateway listening on http://0.0.0.0:8787');
  });

  it('serves an MCP call with jwt_header: the demo server receives a token that verifies against the JWKS', async () => {
    const client = new Client({ name: 'container-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp/demo-jwt`), {
        requestInit: { headers: { authorization: `Bearer ${DEMO_API_KEY}` } },
      }),
    );
    try {
      const result = (await client.callTool({ name: 'whoami', arguments: {} })) as {
        content: { type: string; text: string }[];
      };
      const seen = JSON.parse(result.content[0]?.text ?? '{}') as { jwt: string | null };
      expect(seen.jwt).toEqual(expect.any(String));
      const { payload } = await jwtVerify(
        seen.jwt as string,
        createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`)),
      );
      expect(payload).toMatchObject({ sub: 'demo-user', email: 'demo@example.com' });
    } finally {
      await client.close();
    }
  });

  it('answers a chat completion through a provider added with the admin API, from a local double', async () => {
    const admin = adminClient(base, adminKey);
    const created = await admin('POST', '/providers', {
      slug: 'double',
      provider: 'anthropic',
      apiKey: 'sk-ant-container-0001',
      baseUrl: double.url.replace('127.0.0.1', '10.0.2.2'),
    });
    expect(created.status).toBe(201);
    const answer = await chat(base, DEMO_API_KEY, '@double/claude-haiku-4-5');
    expect([answer.status, answer.body.choices?.[0]?.message?.content]).toEqual([200, 'hello from the double']);
    expect(double.keys).toContain('sk-ant-container-0001');
  });

  it('exits 0 within 10 s of podman stop, and keeps its catalog across the restart', async () => {
    const stopped = await stopTimed(name);
    expect(stopped.exitCode).toBe(0);
    expect(stopped.ms).toBeLessThan(10_000);
    expect(await podman(['logs', name])).toContain('shutting down');
    await podman(['start', name]);
    base = await publishedBase(name);
    await healthy(base);
    const admin = adminClient(base, adminKey);
    expect((await admin('GET', '/providers/double')).status).toBe(200);
    const before = double.keys.length;
    const answer = await chat(base, DEMO_API_KEY, '@double/claude-haiku-4-5');
    expect([answer.status, answer.body.choices?.[0]?.message?.content]).toEqual([200, 'hello from the double']);
    // The provider's key, sealed with the development key kept in /data, still opens.
    expect(double.keys.slice(before)).toEqual(['sk-ant-container-0001']);
  });
});

describe('two containers on one PostgreSQL and one Redis', () => {
  const names = [`gw-ctest-a-${suffix}`, `gw-ctest-b-${suffix}`];
  const adminKey = newAdminKey();
  // CALLER is limited to 10 requests a minute (shared by every instance); PROBE is not limited.
  const CALLER = 'gw-container-caller-0001';
  const PROBE = 'gw-container-probe-00001';
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let double: AnthropicDouble;
  let bases: string[] = [];

  beforeAll(async () => {
    [postgres, redis, double] = await Promise.all([startPostgres(), startRedis(), startAnthropicDouble()]);
    const databaseUrl = await postgres.createDatabase();
    const configFile = writeConfig({
      auth: {
        apiKeys: [
          { key: CALLER, user: { user_id: 'u-caller' } },
          { key: PROBE, user: { user_id: 'u-probe' } },
        ],
      },
      limits: [{ slug: 'ten-rpm', subjects: { users: ['u-caller'] }, per: 'shared', requests_per_minute: 10 }],
    });
    // Readable by the container's user 1000.
    chmodSync(dirname(configFile), 0o755);
    chmodSync(configFile, 0o644);
    const shared = {
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      GATEWAY_CONFIG: '/etc/gateway/gateway.json',
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      PUBLIC_BASE_URL: 'http://127.0.0.1',
      GATEWAY_LIMITS_REDIS_TIMEOUT_MS: '1000',
    };
    // Host networking: the containers reach PostgreSQL and Redis on the host's 127.0.0.1 and
    // listen there, each on a port of its own.
    const ports = [await freePort(), await freePort()];
    for (const [i, name] of names.entries()) {
      const env = { ...shared, HOST: '127.0.0.1', PORT: String(ports[i]) };
      await podman([
        'run',
        '--detach',
        '--name',
        name,
        '--read-only',
        '--network',
        'host',
        '--volume',
        `${configFile}:/etc/gateway/gateway.json:ro`,
        ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
        ...(await limits()),
        IMAGE,
      ]);
    }
    bases = ports.map((port) => `http://127.0.0.1:${port}`);
    await Promise.all(bases.map((base) => healthy(base)));
  });

  afterAll(async () => {
    for (const name of names) await podman(['rm', '--force', '--time', '0', name]).catch(() => undefined);
    await Promise.all([postgres?.destroy(), redis?.stop(), double?.close()]);
  });

  it('a provider created through one container is used through the other within 1 s', async () => {
    const [a, b] = bases as [string, string];
    const created = await adminClient(a, adminKey)('POST', '/providers', {
      slug: 'shared',
      provider: 'anthropic',
      apiKey: 'sk-ant-shared-container-01',
      baseUrl: double.url,
    });
    expect(created.status).toBe(201);
    // Polled through B from the moment A answered: B serves it within 1 s.
    const took = await within(1_000, async () => (await chat(b, PROBE, '@shared/claude-haiku-4-5')).status === 200);
    expect(took).toBeLessThanOrEqual(1_000);
    expect(double.keys).toContain('sk-ant-shared-container-01');
  });

  it('holds a rate limit of 10 a minute across both: 10 of 30 concurrent requests pass', async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => chat(bases[i % 2] as string, CALLER, '@shared/claude-haiku-4-5')),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => [a.status, a.body.error?.code])).toEqual(Array(20).fill([429, 'rate_limited']));
  });

  it('both exit 0 within 10 s of podman stop', async () => {
    const stopped = await Promise.all(names.map((name) => stopTimed(name)));
    for (const one of stopped) {
      expect(one.exitCode).toBe(0);
      expect(one.ms).toBeLessThan(10_000);
    }
  });
});
