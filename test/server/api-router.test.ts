import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiRouter } from '../../server/http/api-router.js';

describe('ApiRouter (the API router that remembers what each path matched)', () => {
  let server: Server | null = null;
  afterEach(async () => {
    server?.close();
    server?.closeAllConnections();
    server = null;
  });

  async function serve(app: Koa): Promise<(method: string, path: string) => Promise<string>> {
    server = createServer(app.callback());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return async (method, path) => {
      const res = await fetch(base + path, { method });
      return `${res.status} ${await res.text()}`;
    };
  }

  it('answers each request as @koa/router does, asked again and again, in any case, with a trailing slash', async () => {
    const app = new Koa();
    const api = new ApiRouter({ prefix: '/api/v1' });
    api.get('/items/:id', (ctx) => {
      ctx.body = `item ${ctx.params.id}`;
    });
    api.post('/items', (ctx) => {
      ctx.body = 'created';
    });
    app.use(api.routes());
    const ask = await serve(app);
    for (let i = 0; i < 3; i++) {
      expect(await ask('GET', '/api/v1/items/a')).toBe('200 item a');
      expect(await ask('GET', '/api/v1/items/b%20c')).toBe('200 item b c');
      expect(await ask('GET', '/API/V1/Items/d/')).toBe('200 item d');
      expect(await ask('POST', '/api/v1/items')).toBe('200 created');
      expect(await ask('GET', '/api/v1/items')).toBe('404 Not Found');
      expect(await ask('PUT', '/api/v1/items/a')).toBe('404 Not Found');
    }
  });

  it('serves a route registered after requests were answered', async () => {
    const app = new Koa();
    const api = new ApiRouter({ prefix: '/api/v1' });
    api.get('/first', (ctx) => {
      ctx.body = 'first';
    });
    app.use(api.routes());
    const ask = await serve(app);
    expect(await ask('GET', '/api/v1/later')).toBe('404 Not Found');
    api.get('/later', (ctx) => {
      ctx.body = 'later';
    });
    expect(await ask('GET', '/api/v1/later')).toBe('200 later');
    expect(await ask('GET', '/api/v1/first')).toBe('200 first');
  });

  it("gives each request its own list of matched routes (a later router's additions stay in that request)", async () => {
    const app = new Koa();
    const api = new ApiRouter({ prefix: '/api/v1' });
    api.get('/thing', (ctx) => {
      ctx.body = 'thing';
    });
    const docs = new Router({ prefix: '/api/v1' });
    docs.get('/docs', (ctx) => {
      ctx.body = `matched ${(ctx as unknown as { matched: unknown[] }).matched.length}`;
    });
    app.use(api.routes());
    app.use(docs.routes());
    const ask = await serve(app);
    for (let i = 0; i < 3; i++) expect(await ask('GET', '/api/v1/docs')).toBe('200 matched 1');
  });

  it('keeps answering correctly past the number of paths it remembers', async () => {
    const app = new Koa();
    const api = new ApiRouter({ prefix: '/api/v1', remember: 2 });
    api.get('/items/:id', (ctx) => {
      ctx.body = `item ${ctx.params.id}`;
    });
    app.use(api.routes());
    const ask = await serve(app);
    for (let round = 0; round < 2; round++) {
      for (const id of ['a', 'b', 'c', 'd', 'e'])
        expect(await ask('GET', `/api/v1/items/${id}`)).toBe(`200 item ${id}`);
    }
    expect(await ask('GET', `/api/v1/items/${'x'.repeat(300)}`)).toBe(`200 item ${'x'.repeat(300)}`);
  });
});
