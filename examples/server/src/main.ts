// First: Node's compile cache (Node 22.1+) and V8's start-up memory flags, before the gateway's
// other modules load.
import './compile-cache';
import './start-footprint';
import type { Server } from 'node:http';
import type * as StartRules from './config/start-rules';
import { configuredSigningKey } from './deferred-signing-key';
import { createLogger } from './observability/logger';
import { startSettings } from './start-settings';
import type * as StartGateway from './start-gateway';

/**
 * Starts the gateway from the environment (default `process.env`); resolves once it listens.
 *
 * What the environment (`JWT_PRIVATE_KEY` included) and the config file say is checked first,
 * with only the modules those checks need (node:*, pino, @gw/jwks; with a config file zod and the
 * config's schema): a start that fails on them stops before the gateway's other modules load
 * (express, undici, the MCP SDK, the catalog's database: about 0.8 CPU-s), and a misconfigured
 * container restarts that much sooner.
 */
export async function startFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ server: Server; stop: () => Promise<void> }> {
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  const settings = startSettings(env);
  let configFile: StartRules.CheckedConfig | undefined;
  if (env.GATEWAY_CONFIG) {
    // The config's schema (zod, @gw/catalog's record schemas) loads only with a config file.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
    const { checkedConfigFile } = require('./config/start-rules') as typeof StartRules;
    configFile = checkedConfigFile(env.GATEWAY_CONFIG, env);
  }
  const signingKey = configuredSigningKey(env);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded once the checks passed
  const { startGateway } = require('./start-gateway') as typeof StartGateway;
  return startGateway(env, logger, settings, configFile, signingKey);
}

if (require.main === module) {
  // Every handler answers its own failures; this is the last line of defence, so that a promise
  // nobody awaited is logged rather than ending the process and every request in flight.
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(
      `${JSON.stringify({ level: 50, time: Date.now(), msg: 'unhandled rejection', err: { name: (reason as Error)?.name, message: (reason as Error)?.message } })}\n`,
    );
  });
  startFromEnvironment().then(
    ({ stop }) => {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => void stop().then(() => process.exit(0)));
      }
    },
    (error: unknown) => {
      process.stderr.write(`gateway: ${(error as Error).message.split('\n')[0]}\n`);
      process.exit(1);
    },
  );
}
