import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Source scan: the modules that authenticate callers compare secrets (API keys and their
 * digests) in constant time. A `===` on a digest or a `Buffer#equals` leaks, through timing,
 * how much of a guessed key matches.
 */
const AUTHENTICATOR = join(__dirname, '../src/core/authenticator.ts');
const AUTHENTICATION_MODULES = [
  AUTHENTICATOR,
  join(__dirname, '../src/core/credentials.ts'),
  join(__dirname, '../src/express/authenticate.ts'),
  join(__dirname, '../../jwks/src/core/verify.ts'),
  join(__dirname, '../../jwks/src/core/key-sets.ts'),
];

/**
 * The source without comments (prose about comparisons does not count) and with presence
 * checks (`x === undefined`, `x !== null`, `x === ''`, `typeof x === '...'`) folded away:
 * they compare no secret.
 */
function code(file: string): string {
  return foldPresenceChecks(
    readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:'"`])\/\/.*$/gm, '$1'),
  );
}

function foldPresenceChecks(source: string): string {
  return source
    .replace(/typeof\s+[\w.?]+\s*[!=]==?\s*'[a-z]*'/g, 'PRESENCE')
    .replace(/[\w.?]+\s*[!=]==?\s*(?:undefined|null|'')(?![\w'])/g, 'PRESENCE');
}

/** The body of the method `name` (from its signature to the matching closing brace). */
function methodBody(source: string, name: string): string {
  const start = source.search(new RegExp(`\\b${name}\\s*\\([^)]*\\)[^{]*\\{`));
  if (start < 0) throw new Error(`method ${name} not found`);
  const open = source.indexOf('{', start);
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '{') depth++;
    else if (source[i] === '}' && --depth === 0) return source.slice(open, i + 1);
  }
  throw new Error(`method ${name} has no end`);
}

const SECRET_WORD = '[\\w.]*(?:digest|secret|keySha256|sha256|apiKey)[\\w.]*(?:\\([^)]*\\))?';
const SECRET_EQUALITY = new RegExp(`${SECRET_WORD}\\s*[!=]==?|[!=]==?\\s*${SECRET_WORD}`, 'i');
const NON_CONSTANT_TIME = /\.equals\(|Buffer\.compare\(|\.compare\(|localeCompare\(/;

/** Whether a line of (comment-free) source compares a secret in a way that is not constant-time. */
function offends(line: string): boolean {
  const folded = foldPresenceChecks(line);
  return SECRET_EQUALITY.test(folded) || NON_CONSTANT_TIME.test(folded);
}

describe('secret comparisons in the authentication modules', () => {
  it('identifyKey confirms the key digest with timingSafeEqual', () => {
    const source = code(AUTHENTICATOR);
    expect(source).toMatch(/import\s*\{[^}]*\btimingSafeEqual\b[^}]*\}\s*from\s*'node:crypto'/);
    const body = methodBody(source, 'identifyKey');
    expect(body).toMatch(/timingSafeEqual\(\s*known\.digest\s*,\s*digest\s*\)/);
    expect(body.split('\n').filter(offends)).toEqual([]);
  });

  it.each(AUTHENTICATION_MODULES.map((file) => [file.split('/src/')[1] as string, file]))(
    'no ===, !== or Buffer#equals compares a digest or key in %s',
    (_name, file) => {
      const offending = code(file).split('\n').filter(offends);
      expect(offending).toEqual([]);
    },
  );

  it('the scan itself catches the comparisons it is meant to forbid', () => {
    for (const bad of [
      'if (!known || known.digest !== digest) {',
      'if (digest === known.digest) return;',
      "if (known.digest.toString('hex') !== digest.toString('hex')) throw x;",
      'if (!known || !known.digest.equals(digest)) {',
      'if (Buffer.compare(known.digest, digest) !== 0) {',
      'if (entry.keySha256 === presented) {',
    ]) {
      expect(offends(bad)).toBe(true);
    }
    for (const fine of [
      'if (kid === undefined) return keys.length === 1 ? keys[0]?.key : undefined;',
      'if ((entry.key === undefined) === (entry.keySha256 === undefined)) {',
      "if (typeof entry.key !== 'string' || entry.key.length < 8) {",
      'if (!known || !timingSafeEqual(known.digest, digest)) {',
    ]) {
      expect(offends(fine)).toBe(false);
    }
  });
});
