/**
 * @gw/jwks: the gateway's RS256 signing key and published key set, remote key sets of
 * identity providers, and token verification.
 */
export * from './core/errors';
export * from './core/signing-key';
export * from './core/signer';
export * from './core/key-sets';
export * from './core/verify';
export { jwksHandler, verifyGatewayIdentity, type VerifyGatewayIdentityOptions } from './express';
