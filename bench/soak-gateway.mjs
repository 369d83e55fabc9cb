// The gateway for `pnpm soak`: the real server, started from the environment, that also answers
// its parent's `measure` message with its heap after a full collection and its open sockets.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { startFromEnvironment } = require('../examples/server/dist/main.js');

const { server } = await startFromEnvironment(process.env);
process.on('message', (message) => {
  if (message !== 'measure') return;
  globalThis.gc();
  globalThis.gc();
  const sockets = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
  server.getConnections((_error, connections) =>
    process.send({ heapUsed: process.memoryUsage().heapUsed, sockets, connections }),
  );
});
process.send({ port: server.address().port });
