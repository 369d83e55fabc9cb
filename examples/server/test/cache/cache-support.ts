import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

/** A Debian `redis-server` on 127.0.0.1, without persistence: a restart starts empty. */
export interface RunningRedis {
  port: number;
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (listened on, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something accepts connections on the port now. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts `redis-server` (installed by scripts/system-deps.sh) on a free port. */
export async function startRedis(): Promise<RunningRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      '/usr/bin/redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
      { stdio: 'ignore' },
    );
    const started = Date.now();
    while (!(await accepts(port))) {
      if (Date.now() - started > 10_000) throw new Error('redis-server did not start within 10 s');
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop: async () => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
      running.kill('SIGKILL');
      await exited;
    },
  };
}

/** A mock Anthropic Messages API that counts its calls and answers each with a numbered text (over 4 KB). */
export async function startCountingAnthropic(): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      // A question that says "big" gets an answer of about 27 KB, any other one of about 5 KB.
      const big = Buffer.concat(chunks).toString().includes('big');
      calls++;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `msg_${calls}`,
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [{ type: 'text', text: `answer ${calls} `.repeat(big ? 3000 : 600) }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 11, output_tokens: 7 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
