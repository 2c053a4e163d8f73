import type Router from '@koa/router';
import type { Context } from 'koa';
import type { HostConfig } from '../../config.js';
import { reply } from '../envelope.js';

const API_PREFIX = '/api/v1/';

function isLoopback(host: string): boolean {
  const name = host
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  return name === 'localhost' || name === '::1' || name.startsWith('127.') || name.startsWith('::ffff:127.');
}

/** `address:port` as it goes in a URL (an IPv6 address in brackets, an IPv4-mapped one as IPv4). */
function hostOf(address: string, port: number): string {
  const plain = address.replace(/^::ffff:(?=\d+\.)/, '');
  return plain.includes(':') ? `[${plain}]:${port}` : `${plain}:${port}`;
}

/**
 * The API's base URL, ending in `/`, as the caller can reach it (wire reference 12.1): the configured public URL;
 * else the Host the request came in on when it is one of this host's own addresses (loopback only to a caller on
 * this machine); else the address the connection arrived at.
 */
export function apiBaseFor(ctx: Context, config: HostConfig, localHosts: () => string[]): string {
  if (config.publicUrl !== null) {
    try {
      const url = new URL(config.publicUrl);
      const path = url.pathname.replace(/\/+$/, '');
      return `${url.origin}${path.endsWith('/api/v1') ? path.slice(0, -'/api/v1'.length) : path}${API_PREFIX}`;
    } catch {
      // An unparsable publicUrl: answer as if none were set.
    }
  }
  const socket = ctx.req.socket;
  const arrivedAt = socket.localAddress ?? '127.0.0.1';
  const host = ctx.get('host').toLowerCase();
  const known = host !== '' && localHosts().some((local) => local.toLowerCase() === host);
  const usable = known && (!isLoopback(host) || isLoopback(arrivedAt));
  return `${ctx.protocol}://${usable ? host : hostOf(arrivedAt, socket.localPort ?? 0)}${API_PREFIX}`;
}

/** The informational GETs real clients call at start (reference 1.5). */
export function infoRoutes(
  router: Router,
  deps: {
    config: HostConfig;
    socketPort: () => number;
    core: { requireInviteCode(): Promise<boolean>; localHosts(): string[] };
  },
): void {
  const { config } = deps;
  // The 1.5 clients upload to a CDN and fetch files from it; this host is its own, the only one (the dashboard's
  // nearest-server helper fails on two or more).
  router.get('/getCDNs', (ctx) =>
    reply(ctx, 'Got Information', {
      servers: [{ Server: apiBaseFor(ctx, config, () => deps.core.localHosts()), Latitude: 0, Longitude: 0 }],
    }),
  );
  router.get('/isInviteCodeRequired', async (ctx) =>
    reply(ctx, 'Got Information', { inviteCodeRequired: await deps.core.requireInviteCode() }),
  );
  router.get('/allowAnyGameServer', (ctx) =>
    reply(ctx, 'Got Information', { allowAnyGameServer: config.allowAnyGameServer }),
  );
  // Behind a proxy (publicUrl names it) clients reach the socket where they reach the API: its port and scheme.
  const publicSocket = ((): { IsWSS: boolean; Port: number } | null => {
    if (config.publicUrl === null || config.socket.port !== null) return null;
    try {
      const url = new URL(config.publicUrl);
      const secure = url.protocol === 'https:';
      return { IsWSS: secure, Port: url.port ? Number(url.port) : secure ? 443 : 80 };
    } catch {
      return null;
    }
  })();
  router.get('/getSocketInfo', (ctx) =>
    reply(ctx, 'Got Information', publicSocket ?? { IsWSS: false, Port: deps.socketPort() }),
  );
  // authForBuilds, getVersions and getBuild: routes/builds.ts.
  router.get('/gameEngine', (ctx) =>
    reply(ctx, 'Got Information', { GameEngine: 'Unity', GameEngineVersion: '2022.3.5f1' }),
  );
}
