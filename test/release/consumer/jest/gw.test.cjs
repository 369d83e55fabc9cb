// jest 30 with its default configuration: no jest config anywhere in this consumer.
const { runScenario, EXPECTED } = require('../out/scenario.js');

test('every @gw package works under jest', async () => {
  const result = await runScenario({
    express: require('express'),
    options: require('@gw/options'),
    access: require('@gw/access'),
    jwks: require('@gw/jwks'),
    identity: require('@gw/identity-forwarding'),
    sigv4: require('@gw/sigv4-proxy'),
    router: require('@gw/model-router'),
    catalog: require('@gw/catalog'),
    gwConsole: require('@gw/console'),
    aws4: require('aws4'),
    OpenAI: require('openai').default,
    Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
    StreamableHTTPClientTransport: require('@modelcontextprotocol/sdk/client/streamableHttp.js')
      .StreamableHTTPClientTransport,
  });
  expect(result).toEqual(EXPECTED);
}, 60_000);
