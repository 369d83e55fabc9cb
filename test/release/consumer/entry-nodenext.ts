// TypeScript, `module: nodenext`, compiled to CommonJS (the consumer's package.json has no "type").
import express from 'express';
import * as options from '@gw/options';
import * as access from '@gw/access';
import * as jwks from '@gw/jwks';
import * as identity from '@gw/identity-forwarding';
import * as sigv4 from '@gw/sigv4-proxy';
import * as router from '@gw/model-router';
import * as catalog from '@gw/catalog';
import * as gwConsole from '@gw/console';
import aws4 from 'aws4';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runScenario } from './scenario.js';

// The packages' exported types are usable by name.
const forwarding: identity.IdentityForwardingOptions = { mcpServers: [] };
const router_: router.ModelRouterOptions = { providers: [] };
void forwarding;
void router_;

const modules = { express, options, access, jwks, identity, sigv4, router, catalog, gwConsole, aws4, OpenAI };
void runScenario({ ...modules, Client, StreamableHTTPClientTransport }).then((result) =>
  console.log(JSON.stringify(result)),
);
