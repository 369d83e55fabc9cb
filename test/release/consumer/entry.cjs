// CommonJS: require() of every package.
const { runScenario } = require('./out/scenario.js');

runScenario({
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
}).then((result) => console.log(JSON.stringify(result)));
