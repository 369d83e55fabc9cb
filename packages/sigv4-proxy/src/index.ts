/**
 * @gw/sigv4-proxy: proxies AWS Bedrock knowledge-base calls, signed with SigV4 using the
 * catalog's AWS credentials, only to allowed AWS hosts.
 */
export * from './core/errors';
export * from './core/secret';
export * from './core/integration';
export * from './core/custom-host';
export * from './core/signer';
export { mapUpstreamError, isForwardedResponseHeader, isEventStream } from './core/upstream';
export { sigv4Proxy, sigv4ErrorHandler, type Sigv4ProxyOptions } from './express';
