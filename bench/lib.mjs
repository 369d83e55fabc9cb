// Closed-loop driver with microsecond resolution, and process CPU/memory readings.
import { execSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';

export const CLK_TCK = (() => {
  try {
    return Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) of a process, in microseconds, from /proc. */
export function processCpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/** Peak resident memory of a process (VmHWM), in bytes. */
export function peakRss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** Resets a process's peak resident memory (VmHWM) to its current one; false when the kernel does not allow it. */
export function resetPeakRss(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Current resident memory of a process (VmRSS), in bytes. */
export function currentRss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** What marks a text delta in the mock's streams, as Anthropic's events and as chat chunks carry it. */
const TOKEN_MARK = '"token ';

/**
 * One HTTP request; resolves with status, time to first byte and total time (µs), and for an
 * event stream `tokens`: the mean time at which its text deltas arrived (µs from the start;
 * undefined when it carried none). Tokens held back by a proxy show there, where the first byte
 * and the end do not.
 */
export function send(agent, target) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let ttfb = 0;
    let tokenCount = 0;
    let tokenSum = 0;
    let tail = '';
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port: target.port,
        method: target.method ?? 'POST',
        path: target.path,
        headers: target.headers,
      },
      (res) => {
        res.once('data', () => (ttfb = Number(process.hrtime.bigint() - started) / 1000));
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          res.setEncoding('utf8');
          res.on('data', (text) => {
            const now = Number(process.hrtime.bigint() - started) / 1000;
            // The last characters of the chunk before, in case a mark was cut between two chunks
            // (one fewer than a mark: a mark found here always ends in this chunk).
            const seen = tail + text;
            for (let at = seen.indexOf(TOKEN_MARK); at !== -1; at = seen.indexOf(TOKEN_MARK, at + 1)) {
              tokenCount++;
              tokenSum += now;
            }
            tail = seen.slice(-(TOKEN_MARK.length - 1));
          });
        } else res.on('data', () => undefined);
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            ttfb,
            total: Number(process.hrtime.bigint() - started) / 1000,
            tokens: tokenCount > 0 ? tokenSum / tokenCount : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(target.body);
  });
}

/** Runs `count` requests from `connections` closed loops; returns per-request samples. */
export async function closedLoop(target, { connections, count }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const samples = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const sample = await send(agent, typeof target === 'function' ? target(next) : target);
      if (sample.status >= 400) throw new Error(`${target.path ?? 'request'} answered ${sample.status}`);
      samples.push(sample);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  return samples;
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export function median(values) {
  return percentile(values, 50);
}

/** The MCP mock's 200 tools, of the size real servers list: a description and an input schema each. */
export const BENCH_TOOLS = Array.from({ length: 200 }, (_, i) => ({
  name: `tool_${String(i).padStart(3, '0')}`,
  description: `Looks up record kind ${i} by its id and returns its fields as JSON (bench tool ${i}).`,
  inputSchema: {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'The record id.' },
      fields: { type: 'array', items: { type: 'string' }, description: 'Fields to return; all when empty.' },
    },
    required: ['id'],
  },
}));

/** The scratch folder of this process ({@link benchScratch}); undefined before it is made. */
let scratchFolder;
/**
 * Whether a folder given to {@link removeWhenExited} is removed as soon as its process exits
 * (`removeEarly` of {@link benchScratch}; default false: at {@link clearScratch}).
 */
let removeEarly = false;
/** The removals {@link removeWhenExited} was given: started (promises) or not yet (functions). */
const removals = [];

/**
 * Moves this process's temporary files (and its children's, through TMPDIR) into one folder of
 * its own, removed when the process exits however it ends: the gateways' databases, configs and
 * keys of a bench run take 100+ MB each. `GW_KEEP_BENCH_TMP=1` keeps the folder.
 * `removeEarly` (default false): see {@link removeWhenExited}.
 */
export function benchScratch(prefix, { removeEarly: early = false } = {}) {
  const scratch = mkdtempSync(join(tmpdir(), prefix));
  scratchFolder = scratch;
  removeEarly = early && process.env.GW_KEEP_BENCH_TMP !== '1';
  // Others may pass through it, as through the system's folder (a server run as another user).
  chmodSync(scratch, 0o755);
  process.env.TMPDIR = scratch;
  process.on('exit', () => {
    if (process.env.GW_KEEP_BENCH_TMP !== '1') rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  return scratch;
}

/**
 * Removes `path` (a gateway's data directory: about 40 MB of files, whose deletion on this
 * machine's disk is slow, 2 to 5 s of waiting each when the machine is busy) once `child`, the
 * last process to use it, has exited. With `removeEarly` (smoke runs, whose figures are not
 * judged) the removal starts when the process exits and runs beside the rest of the run;
 * otherwise it waits for {@link clearScratch}, after the last measurement.
 */
export function removeWhenExited(child, path) {
  if (process.env.GW_KEEP_BENCH_TMP === '1') return;
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise((resolve) => child.once('exit', resolve));
  const remove = () =>
    exited.then(() => rm(path, { recursive: true, force: true, maxRetries: 3 })).catch(() => undefined);
  removals.push(removeEarly ? remove() : remove);
}

/**
 * Empties the scratch folder once the measurements are over: the removals of
 * {@link removeWhenExited} (each after its process exited), then whatever else is left, every
 * entry at once (the disk deletes several folders at once about three times as fast as one after
 * the other). The exit handler of {@link benchScratch} removes anything still left.
 */
export async function clearScratch() {
  await Promise.all(removals.splice(0).map((removal) => (typeof removal === 'function' ? removal() : removal)));
  if (!scratchFolder || process.env.GW_KEEP_BENCH_TMP === '1') return;
  const entries = await readdir(scratchFolder).catch(() => []);
  await Promise.all(
    entries.map((entry) =>
      rm(join(scratchFolder, entry), { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined),
    ),
  );
}
