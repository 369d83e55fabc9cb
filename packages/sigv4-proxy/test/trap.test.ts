import { CREDENTIALS, gatewayWith, integration, listen, mockBedrock } from './support';

// A trap server listens on 127.0.0.1; every refused host must leave it untouched, and no
// refusal may carry a secret, the session token or a signature.
describe('hosts that must never receive a signed request', () => {
  it('refuses metadata addresses in every notation, loopback, look-alikes, userinfo, ports, http and trailing dots', async () => {
    const trap = await listen((_req, res) => res.end('trapped'));
    const port = new URL(trap.origin).port;
    const bedrock = await mockBedrock((_req, res) => res.end('{}'));
    const gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
    const hosts = [
      '169.254.169.254',
      'http://169.254.169.254/latest/meta-data/',
      '2852039166',
      '0xA9FEA9FE',
      '0251.0376.0251.0376',
      '0xa9.0xfe.0xa9.0xfe',
      '[::ffff:169.254.169.254]',
      '[::ffff:a9fe:a9fe]',
      'metadata.google.internal',
      'localhost',
      `localhost:${port}`,
      `http://localhost:${port}`,
      `127.0.0.1:${port}`,
      `http://127.0.0.1:${port}`,
      `http://127.1:${port}`,
      `http://127.0.0.2:${port}`,
      `http://[::1]:${port}`,
      'bedrock-agent.us-east-1.amazonaws.com.evil.com',
      'bedrock-agent-runtime.us-east-1.amazonaws.com.127.0.0.1.nip.io',
      `https://bedrock-agent.us-east-1.amazonaws.com@127.0.0.1:${port}`,
      'https://bedrock-agent.us-east-1.amazonaws.com@evil.com',
      'bedrock-agent.us-east-1.amazonaws.com:8443',
      'https://bedrock-agent.us-east-1.amazonaws.com:80',
      'http://bedrock-agent.us-east-1.amazonaws.com',
      'bedrock-agent.us-east-1.amazonaws.com.',
      'https://bedrock-agent.us-east-1.amazonaws.com./',
    ];
    for (const host of hosts) {
      const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
        method: 'POST',
        headers: { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': host, 'content-type': 'application/json' },
        body: '{}',
      });
      const text = await response.text();
      expect({ host, status: response.status, code: JSON.parse(text).error.code }).toEqual({
        host,
        status: 400,
        code: 'custom_host_not_allowed',
      });
      for (const secret of [CREDENTIALS.secretAccessKey, CREDENTIALS.sessionToken, 'Signature='])
        expect(text).not.toContain(secret);
    }
    const missing = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: { 'x-gateway-provider': '@kb' },
      body: '{}',
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('custom_host_required');
    expect(trap.connections()).toBe(0);
    expect(bedrock.connections()).toBe(0);
    await Promise.all([gateway.close(), bedrock.close(), trap.close()]);
  });

  it('keeps secrets and signatures out of failure answers', async () => {
    const closed = await listen(() => undefined);
    const origin = closed.origin;
    await closed.close();
    const gateway = await gatewayWith({ integrations: [integration(origin)], timeoutMs: 100 });
    const response = await fetch(`${gateway.origin}/v1/x`, {
      method: 'POST',
      headers: { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': origin },
      body: '{}',
    });
    const text = await response.text();
    expect(response.status).toBe(502);
    for (const secret of [CREDENTIALS.secretAccessKey, CREDENTIALS.sessionToken, CREDENTIALS.accessKeyId, 'Signature='])
      expect(text).not.toContain(secret);
    await gateway.close();
  });
});
