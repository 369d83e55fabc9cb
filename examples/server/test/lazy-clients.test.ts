import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { openCatalogDatabase } from '../src/catalog/open-catalog';
import { redisScriptRunner } from '../src/limits/redis-runner';
import { startDemoMcpServer } from '../src/demo/demo-mcp-server';
import { startFromEnvironment } from '../src/main';
import { freshDataDir } from './support';

/*
 * The PostgreSQL and Redis clients and the AWS event-stream codec load with what needs them
 * (DATABASE_URL, REDIS_URL, the first Bedrock stream), not with every start: about 160 ms of CPU
 * a start of the embedded default; the MCP SDK's server side with the demo MCP server's first
 * request (about 100 ms more). Observed as jest loads them (hoisted above the imports, so an
 * import at module load counts), in a file of their own: a module jest has loaded once is not
 * loaded, nor counted, again.
 */
jest.mock('pg', () => {
  const seen = globalThis as { clientLoads?: Record<string, number> };
  seen.clientLoads = { ...seen.clientLoads, pg: (seen.clientLoads?.pg ?? 0) + 1 };
  return jest.requireActual('pg');
});
jest.mock('ioredis', () => {
  const seen = globalThis as { clientLoads?: Record<string, number> };
  seen.clientLoads = { ...seen.clientLoads, ioredis: (seen.clientLoads?.ioredis ?? 0) + 1 };
  return jest.requireActual('ioredis');
});
// A dependency of @gw/model-router, not of the gateway: named by the file that package loads.
jest.mock(
  require.resolve('@smithy/eventstream-codec', { paths: [`${__dirname}/../../../packages/model-router`] }),
  () => {
    const seen = globalThis as { clientLoads?: Record<string, number> };
    seen.clientLoads = { ...seen.clientLoads, eventStreamCodec: (seen.clientLoads?.eventStreamCodec ?? 0) + 1 };
    return jest.requireActual(
      require.resolve('@smithy/eventstream-codec', { paths: [`${__dirname}/../../../packages/model-router`] }),
    );
  },
);
// The MCP SDK's server side: the embedded demo MCP server builds its app with its first request.
jest.mock('@modelcontextprotocol/sdk/server/mcp.js', () => {
  const seen = globalThis as { clientLoads?: Record<string, number> };
  seen.clientLoads = { ...seen.clientLoads, mcpServer: (seen.clientLoads?.mcpServer ?? 0) + 1 };
  return jest.requireActual('@modelcontextprotocol/sdk/server/mcp.js');
});
const clientLoads = () => ({
  pg: 0,
  ioredis: 0,
  eventStreamCodec: 0,
  mcpServer: 0,
  ...(globalThis as { clientLoads?: object }).clientLoads,
});

describe('clients loaded with what needs them', () => {
  it('the embedded default loads neither pg, ioredis, the event-stream codec nor the MCP server SDK', async () => {
    const gateway = await startFromEnvironment({
      GATEWAY_DATA_DIR: freshDataDir('gw-lazy-clients-'),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    });
    await gateway.stop();
    expect(clientLoads()).toEqual({ pg: 0, ioredis: 0, eventStreamCodec: 0, mcpServer: 0 });
  }, 60_000);

  it('the demo MCP server loads the MCP server SDK with its first request, and answers it', async () => {
    const demo = await startDemoMcpServer();
    try {
      expect(clientLoads().mcpServer).toBe(0);
      const client = new Client({ name: 'lazy-clients', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(demo.url)));
      const result = await client.callTool({ name: 'whoami' });
      await client.close();
      expect(JSON.parse((result.content as { text: string }[])[0]?.text ?? '')).toEqual({
        claims: null,
        jwt: null,
        authorization: null,
      });
      expect(clientLoads().mcpServer).toBe(1);
    } finally {
      await demo.close();
    }
  });

  it('DATABASE_URL loads pg; a Redis URL loads ioredis', async () => {
    // Nothing listens on port 1: both clients connect lazily or fail quietly, and close.
    const database = await openCatalogDatabase({ DATABASE_URL: 'postgres://gateway@127.0.0.1:1/none' });
    await database.close();
    expect(clientLoads()).toMatchObject({ pg: 1, ioredis: 0, eventStreamCodec: 0 });
    const runner = redisScriptRunner({ url: 'redis://127.0.0.1:1' });
    await runner.close();
    expect(clientLoads()).toMatchObject({ pg: 1, ioredis: 1, eventStreamCodec: 0 });
  });
});
