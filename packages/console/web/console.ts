/**
 * The gateway console's page script: the entry point. Each page is a module of `pages/`; shared
 * helpers live in `lib/` (elements, forms, the admin API client, the router). Everything shown
 * comes from the admin API through `/console/api/…`; secrets typed into forms are sent once and
 * never kept, shown or stored (the page shows only `<field>Hint`). Text from the server is
 * always set as text, never as HTML.
 */
import { startRouter, type Page } from './lib/router.js';
import { accessPage } from './pages/access.js';
import { connectedAppsPage } from './pages/apps.js';
import { auditPage } from './pages/audit.js';
import { configsPage } from './pages/configs.js';
import { integrationsPage } from './pages/integrations.js';
import { keysPage } from './pages/keys.js';
import { limitsPage } from './pages/limits.js';
import { mcpPage } from './pages/mcp.js';
import { modelsPage } from './pages/models.js';
import { promptsPage } from './pages/prompts.js';
import { requestsPage } from './pages/requests.js';
import { usagePage } from './pages/usage.js';
import { virtualServersPage } from './pages/virtual-servers.js';

startRouter(
  new Map<string, Page>([
    ['models', modelsPage],
    ['integrations', integrationsPage],
    ['mcp', mcpPage],
    ['virtual-servers', virtualServersPage],
    ['prompts', promptsPage],
    ['configs', configsPage],
    ['keys', keysPage],
    ['access', accessPage],
    ['limits', limitsPage],
    ['requests', requestsPage],
    ['usage', usagePage],
    ['apps', connectedAppsPage],
    ['audit', auditPage],
  ]),
);
