/**
 * Whether a path has a dot segment (`.` or `..`) as any server might read it: plain or
 * percent-encoded (`%2e`, any case, also double-encoded `%252e`), between `/`, `\` or their
 * encodings (`%2f`, `%5c`), and with `;parameters` removed (`..;x`).
 */
export function hasDotSegment(path: string): boolean {
  let decoded = path;
  for (let i = 0; i < 3 && /%25/i.test(decoded); i++) decoded = decoded.replace(/%25/gi, '%');
  decoded = decoded.replace(/%2e/gi, '.').replace(/%2f|%5c|\\/gi, '/');
  return decoded.split('/').some((segment) => {
    const name = segment.split(';', 1)[0];
    return name === '.' || name === '..';
  });
}

/**
 * The upstream query: the server's configured query (`search` of its `url`, kept as written),
 * then the client's parameters (as the client wrote them) except those whose name, decoded and
 * compared without case, is one of the configured ones; `;` also counts as a separator there.
 */
export function upstreamQuery(configured: string, configuredNames: ReadonlySet<string>, client: string): string {
  let kept = client;
  if (client !== '' && configuredNames.size > 0) {
    kept = client
      .split('&')
      .filter(
        (part) =>
          part !== '' &&
          !part.split(';').some((piece) => {
            for (const name of new URLSearchParams(piece).keys())
              if (configuredNames.has(name.toLowerCase())) return true;
            return false;
          }),
      )
      .join('&');
  }
  const base = configured.startsWith('?') ? configured.slice(1) : configured;
  if (base === '') return kept === '' ? '' : `?${kept}`;
  return kept === '' ? `?${base}` : `?${base}&${kept}`;
}
