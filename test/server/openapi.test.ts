import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_DOCS, routesOf } from '../../server/http/openapi.js';
import { createHttpApp } from '../../server/http/app.js';
import { clientAddresses } from '../../server/socket/forwarded-address.js';
import { startHost, type TestHost } from './helpers.js';

describe('OpenAPI document', () => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startHost();
  });
  afterAll(async () => {
    await host.close();
  });

  it('documents exactly the routes the server serves', () => {
    const server = host.server;
    const app = createHttpApp({
      ...server.core,
      core: server.core,
      socketPort: () => server.port,
      addresses: clientAddresses([]),
    });
    expect(routesOf(app.apiRouter, '/api/v1')).toEqual(Object.keys(ROUTE_DOCS).sort());
  });

  it('is served as OpenAPI 3.1 with request schemas from the validators, and as a readable page', async () => {
    const res = await fetch(`${host.server.url}/api/v1/openapi.json`);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: {
              content: Record<
                string,
                { schema: { properties: Record<string, unknown>; required: string[] } }
              >;
            };
          }
        >
      >;
    };
    expect(doc.openapi).toBe('3.1.0');
    const create = doc.paths['/api/v1/createUser']!.post!.requestBody!.content['application/json']!.schema;
    expect(create.required.sort()).toEqual(['email', 'password', 'username']);
    expect(Object.keys(create.properties).sort()).toEqual(['email', 'inviteCode', 'password', 'username']);
    expect(doc.paths['/api/v1/search/avatar/{name}/{itemsPerPage}/{page}']).toBeDefined();
    expect(doc.paths['/api/v1/upload']!.post!.requestBody!.content['multipart/form-data']).toBeDefined();
    const page = await fetch(`${host.server.url}/api/v1/docs`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('/api/v1/moderation');
    expect(html).not.toContain('<script');
  });
});
