import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Packs every package as it would be published and installs the tarballs into a scratch
// consumer with CommonJS, ESM and TypeScript entry points, each mounting middleware in an
// Express app and making a real request.
jest.setTimeout(300_000);

const root = join(__dirname, '..', '..', '..');
const packages = ['options', 'access', 'jwks', 'identity-forwarding', 'sigv4-proxy', 'model-router'];

function pnpm(args: string[], cwd: string): string {
  const pnpmPath =
    process.env.npm_execpath && /pnpm/.test(process.env.npm_execpath) ? process.env.npm_execpath : undefined;
  return pnpmPath
    ? execFileSync(process.execPath, [pnpmPath, ...args], { cwd, encoding: 'utf8' })
    : execFileSync('npx', ['-y', 'pnpm@10', ...args], { cwd, encoding: 'utf8' });
}

const checks = `
const { SigningKey, buildJwks, jwksHandler } = jwks;
const key = SigningKey.generate();
const app = express();
app.get('/jwks', jwksHandler(buildJwks(key, [])));
app.use('/mcp', identity.authenticate({ apiKeys: [{ key: 'consumer-key-1', user: { user_id: 'u' } }] }), identity.identityForwarding({ mcpServers: [] }));
app.use('/v1', router.modelRouter({ providers: [] }), sigv4.sigv4Proxy({ integrations: [] }));
app.use((err, req, res, next) => res.status(err.status ?? 500).json({ code: err.code }));
const server = app.listen(0, '127.0.0.1', async () => {
  const base = 'http://127.0.0.1:' + server.address().port;
  const jwksBody = await (await fetch(base + '/jwks')).json();
  const mcp = await (await fetch(base + '/mcp/none', { headers: { 'x-gateway-api-key': 'consumer-key-1' } })).json();
  const chat = await (await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"x"}' })).json();
  console.log(JSON.stringify({ kid: jwksBody.keys[0].kid === key.kid, mcp: mcp.code, chat: chat.error.code }));
  server.close();
});
`;

describe('the published packages', () => {
  it('install from their tarballs and work from CommonJS, ESM and TypeScript consumers', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-consumers-'));
    for (const name of packages) pnpm(['pack', '--pack-destination', dir], join(root, 'packages', name));
    const tarball = (name: string) => `file:./${readdirSync(dir).find((f) => f.startsWith(`gw-${name}-`))}`;
    const dependencies = Object.fromEntries(packages.map((name) => [`@gw/${name}`, tarball(name)]));
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'consumer',
        private: true,
        dependencies: { ...dependencies, express: '^5.1.0', '@types/express': '^5.0.0' },
        overrides: { '@gw/jwks': tarball('jwks'), '@gw/options': tarball('options'), '@gw/access': tarball('access') },
      }),
    );
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(install.stderr.replace(/npm warn.*\n/gi, '')).toBe('');
    expect(install.status).toBe(0);

    writeFileSync(
      join(dir, 'consumer.cjs'),
      `const express = require('express');\nconst jwks = require('@gw/jwks');\nconst identity = require('@gw/identity-forwarding');\nconst router = require('@gw/model-router');\nconst sigv4 = require('@gw/sigv4-proxy');\n${checks}`,
    );
    writeFileSync(
      join(dir, 'consumer.mjs'),
      `import express from 'express';\nimport * as jwks from '@gw/jwks';\nimport * as identity from '@gw/identity-forwarding';\nimport * as router from '@gw/model-router';\nimport * as sigv4 from '@gw/sigv4-proxy';\n${checks}`,
    );
    writeFileSync(
      join(dir, 'consumer.ts'),
      `import express from 'express';\nimport * as jwks from '@gw/jwks';\nimport * as identity from '@gw/identity-forwarding';\nimport * as router from '@gw/model-router';\nimport * as sigv4 from '@gw/sigv4-proxy';\nimport type { AddressInfo } from 'node:net';\nconst signer: jwks.IdentityTokenSigner | undefined = undefined;\nvoid signer;\n${checks
        .replace(
          '(err, req, res, next)',
          '(err: { status?: number; code?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction)',
        )
        .replace('server.address().port', '(server.address() as AddressInfo).port')}`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'node20',
          moduleResolution: 'node16',
          target: 'ES2022',
          outDir: 'out',
          esModuleInterop: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(root, 'node_modules', '@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');

    const expected = { kid: true, mcp: 'mcp_server_not_found', chat: 'provider_required' };
    for (const entry of ['consumer.cjs', 'consumer.mjs', join('out', 'consumer.js')]) {
      const run = spawnSync(process.execPath, [join(dir, entry)], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual(expected);
    }
  });
});
