// Starts Verdaccio from a config file on 127.0.0.1 with an ephemeral port and prints
// {"port":N} on one line once it listens. Stops on SIGTERM or when stdin closes.
const { runServer } = require('verdaccio');

async function main() {
  const server = await runServer(process.argv[2]);
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
  });
  const stop = () => {
    server.closeAllConnections?.();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.stdin.on('end', stop);
  process.stdin.resume();
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
