import * as jose from 'jose';
import { SigningKey, createIdentityTokenSigner, type SignIdentityTokenOptions } from '../src';

// A JavaScript caller gets no help from the types: options that would sign a token without an
// audience or an expiry are refused, each with a message that says what to write.
const signer = createIdentityTokenSigner(SigningKey.generate());
const sign = (options: unknown) => signer.signIdentityToken({ sub: 'u-1' }, options as SignIdentityTokenOptions);

describe('signIdentityToken options', () => {
  it.each([
    [undefined, /needs options/],
    [{}, /audience must be a non-empty string/],
    [{ audience: '', expiresInSeconds: 300 }, /audience must be a non-empty string/],
    [{ audience: 'https://mcp.example.com' }, /expiresInSeconds must be a whole number/],
    [{ audience: 'https://mcp.example.com', expiresInSeconds: 0 }, /expiresInSeconds must be a whole number/],
    [{ audience: 'https://mcp.example.com', expiresInSeconds: '300' }, /expiresInSeconds must be a whole number/],
    [{ audience: 'https://mcp.example.com', expiresInSeconds: 1.5 }, /expiresInSeconds must be a whole number/],
    [{ audience: 'https://mcp.example.com', expiresInSeconds: 300, issuedAt: -1 }, /issuedAt must be whole seconds/],
    [{ audience: 'https://mcp.example.com', expiresInSeconds: 300, issuedAt: '1' }, /issuedAt must be whole seconds/],
  ])('refuses %j', (options, message) => {
    expect(() => sign(options)).toThrow(message);
  });

  it('signs with the audience and an expiry the options give', () => {
    const claims = jose.decodeJwt(sign({ audience: 'https://mcp.example.com', expiresInSeconds: 1, issuedAt: 1000 }));
    expect(claims).toMatchObject({ aud: 'https://mcp.example.com', iat: 1000, exp: 1001, sub: 'u-1' });
  });
});
