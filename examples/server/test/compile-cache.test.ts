import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileCacheDirectory, enableGatewayCompileCache } from '../src/compile-cache';

/*
 * Node 22.1+'s compile cache for the gateway's own start. CI runs these tests on Node 20, which
 * has no `module.enableCompileCache`: the API is stood in for, so what the gateway asks of it is
 * checked on every Node. The cache is code the process runs: only a directory of the gateway's
 * own user, that no one else may write, is ever used.
 */
const enableCompileCache = jest.fn((directory?: string) => ({ status: 1, directory }));
jest.mock('node:module', () => ({
  ...jest.requireActual<object>('node:module'),
  enableCompileCache: (directory?: string) => enableCompileCache(directory),
  constants: { compileCacheStatus: { FAILED: 0, ENABLED: 1, ALREADY_ENABLED: 2, DISABLED: 3 } },
}));

const uid = process.getuid?.() ?? -1;
let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gw-compile-cache-test-'));
  enableCompileCache.mockClear();
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('compile cache directory', () => {
  it('is <tmpdir>/gw-compile-cache-<uid>, made with mode 0700', () => {
    const dir = compileCacheDirectory(base);
    expect(dir).toBe(join(base, `gw-compile-cache-${uid}`));
    expect(statSync(dir as string).mode & 0o777).toBe(0o700);
    // Found again as it is at the next start.
    expect(compileCacheDirectory(base)).toBe(dir);
  });

  it('is never a directory others may write, nor a symbolic link', () => {
    const shared = join(base, `gw-compile-cache-${uid}`);
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(compileCacheDirectory(base)).toBeUndefined();
    chmodSync(shared, 0o770);
    expect(compileCacheDirectory(base)).toBeUndefined();
    rmSync(shared, { recursive: true });
    const elsewhere = mkdtempSync(join(base, 'elsewhere-'));
    chmodSync(elsewhere, 0o700);
    symlinkSync(elsewhere, shared);
    expect(compileCacheDirectory(base)).toBeUndefined();
  });

  it('is none when it cannot be made (a file in the way)', () => {
    const notADirectory = join(base, 'file');
    writeFileSync(notADirectory, '');
    expect(compileCacheDirectory(notADirectory)).toBeUndefined();
  });
});

describe('enableGatewayCompileCache', () => {
  it("turns Node's compile cache on in the user's own directory", () => {
    expect(enableGatewayCompileCache({}, base)).toBe(join(base, `gw-compile-cache-${uid}`));
    expect(enableCompileCache.mock.calls).toEqual([[join(base, `gw-compile-cache-${uid}`)]]);
  });

  it('leaves a cache the operator set (NODE_COMPILE_CACHE) or turned off (NODE_DISABLE_COMPILE_CACHE) alone', () => {
    expect(enableGatewayCompileCache({ NODE_COMPILE_CACHE: join(base, 'theirs') }, base)).toBeUndefined();
    expect(enableGatewayCompileCache({ NODE_DISABLE_COMPILE_CACHE: '1' }, base)).toBeUndefined();
    expect(enableCompileCache).not.toHaveBeenCalled();
  });

  it('turns nothing on in a directory others may write', () => {
    const shared = join(base, `gw-compile-cache-${uid}`);
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(enableGatewayCompileCache({}, base)).toBeUndefined();
    expect(enableCompileCache).not.toHaveBeenCalled();
  });

  it('reports no cache when Node refuses it', () => {
    enableCompileCache.mockReturnValueOnce({ status: 0, directory: undefined });
    expect(enableGatewayCompileCache({}, base)).toBeUndefined();
  });
});
