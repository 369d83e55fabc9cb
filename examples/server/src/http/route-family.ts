/** Route families: each has its own error shape and metrics label. */
export type RouteFamily =
  'chat' | 'models' | 'prompts' | 'messages' | 'responses' | 'mcp' | 'aws' | 'jwks' | 'health' | 'metrics' | 'other';

/** The family of a request path (without query string). */
export function routeFamily(path: string): RouteFamily {
  if (path.startsWith('/v1/')) {
    if (path === '/v1/chat/completions') return 'chat';
    if (path === '/v1/models') return 'models';
    if (path.startsWith('/v1/prompts/')) return 'prompts';
    if (path === '/v1/responses' || path.startsWith('/v1/responses/')) return 'responses';
    if (path === '/v1/messages' || path === '/v1/messages/count_tokens') return 'messages';
    return 'aws';
  }
  if (path.startsWith('/mcp/.well-known/') || path.startsWith('/.well-known/')) return 'jwks';
  if (path === '/mcp' || path.startsWith('/mcp/')) return 'mcp';
  if (path === '/healthz') return 'health';
  if (path === '/metrics') return 'metrics';
  return 'other';
}
