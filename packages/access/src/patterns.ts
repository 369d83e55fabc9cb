/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 256;
/** Most `*` in one pattern. */
export const MAX_PATTERN_STARS = 16;

/** A compiled `*` pattern: `matches(text)` is true when `text` is the pattern with each `*` replaced by any run of characters. */
export interface Pattern {
  /** The pattern as written. */
  readonly source: string;
  /** Whether `text` matches. Linear in the text's length times the number of `*`; no regular expression. */
  matches(text: string): boolean;
}

/**
 * Compiles a pattern where `*` stands for any run of characters (none included) and every other
 * character stands for itself. Throws a `TypeError` naming `where` when the pattern is empty,
 * longer than {@link MAX_PATTERN_LENGTH} or has more than {@link MAX_PATTERN_STARS} `*`.
 */
export function compilePattern(source: string, where = 'pattern'): Pattern {
  if (typeof source !== 'string' || source === '')
    throw new TypeError(`${where} must be a non-empty string such as "claude-*".`);
  if (source.length > MAX_PATTERN_LENGTH)
    throw new TypeError(`${where} is longer than ${MAX_PATTERN_LENGTH} characters.`);
  const parts = source.split('*');
  if (parts.length - 1 > MAX_PATTERN_STARS) throw new TypeError(`${where} has more than ${MAX_PATTERN_STARS} "*".`);
  if (parts.length === 1) return { source, matches: (text) => text === source };
  const first = parts[0] as string;
  const last = parts[parts.length - 1] as string;
  const middle = parts.slice(1, -1).filter((p) => p !== '');
  const minLength = first.length + last.length + middle.reduce((n, p) => n + p.length, 0);
  return {
    source,
    matches(text) {
      if (text.length < minLength || !text.startsWith(first) || !text.endsWith(last)) return false;
      // Each literal piece between stars, leftmost first, between the prefix and the suffix: for
      // `*`-only patterns the leftmost match is always a valid choice.
      let at = first.length;
      const end = text.length - last.length;
      for (const piece of middle) {
        const found = text.indexOf(piece, at);
        if (found === -1 || found + piece.length > end) return false;
        at = found + piece.length;
      }
      return true;
    },
  };
}

/** A set of patterns: exact names looked up in a `Set`, the rest tried in turn. */
export class PatternSet {
  private readonly exact = new Set<string>();
  private readonly globs: Pattern[] = [];
  /** Whether one pattern is `*` alone. */
  readonly matchesAll: boolean;

  constructor(patterns: readonly string[], where: string) {
    let all = false;
    patterns.forEach((p, i) => {
      const pattern = compilePattern(p, `${where}[${i}]`);
      if (p === '*') all = true;
      if (p.includes('*')) this.globs.push(pattern);
      else this.exact.add(p);
    });
    this.matchesAll = all;
  }

  /** Whether any pattern matches `text`. */
  matches(text: string): boolean {
    if (this.matchesAll || this.exact.has(text)) return true;
    for (const glob of this.globs) if (glob.matches(text)) return true;
    return false;
  }

  /** Whether the set has no pattern. */
  get empty(): boolean {
    return this.exact.size === 0 && this.globs.length === 0;
  }
}
