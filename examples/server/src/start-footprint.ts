import { setFlagsFromString } from 'node:v8';

/*
 * The gateway's resident memory after start-up, set before anything else is loaded (main.ts
 * imports this module first). Measured on Node 20 (docs/decisions.md, "Memory at start-up"):
 *
 * - The young generation: loading the gateway's modules keeps most of what it allocates, so V8
 *   doubles its semi-spaces up to their 16 MB maximum during start-up, and keeps them (32 MB
 *   resident) while the instance idles. Start-up runs with semi-spaces that do not grow (1 MB);
 *   {@link startupFinished} gives V8 its default growth back, so under load the young generation
 *   grows as before and request CPU does not change. With `DATABASE_URL`: 114 → 87 MB resident.
 * - With the embedded database, WebAssembly is compiled by Liftoff only, V8's baseline compiler
 *   ({@link embeddedDatabaseFootprint}): optimising PostgreSQL's 9 MB of WebAssembly with
 *   TurboFan kept ~90 MB of compiler memory and code resident, and cost ~100 µs of CPU per
 *   request record for the first few thousand, while a stored request record costs the same CPU
 *   either way (22–29 µs). With `DATABASE_URL` PGlite is never loaded, and the only WebAssembly is
 *   undici's HTTP parser, which TurboFan makes cheaper per answer (docs/decisions.md).
 *
 * Both flags are read by V8 where they are used (when a semi-space grows, when WebAssembly is
 * compiled or tiered up), so setting them at run time takes effect; neither changes what the
 * gateway does.
 */
setFlagsFromString('--semi-space-growth-factor=1');

/** Compiles WebAssembly with Liftoff only from now on; called before the embedded database is opened. */
export function embeddedDatabaseFootprint(): void {
  setFlagsFromString('--liftoff-only');
}

let finished = false;

/** Gives V8 its default young-generation growth back (factor 2); called once the gateway listens. */
export function startupFinished(): void {
  if (finished) return;
  finished = true;
  setFlagsFromString('--semi-space-growth-factor=2');
}

// A process that imports the gateway without starting it gets the default back too.
setTimeout(startupFinished, 60_000).unref();
