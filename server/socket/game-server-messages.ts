import type { InstancesService } from '../services/instances.js';

/** Messages only a game server may send (reference 8.5). */
export const GAME_SERVER_MESSAGES = new Set([
  'claiminstancerequest',
  'instanceready',
  'removeinstance',
  'addmoderator',
  'removemoderator',
  'kickuser',
  'banuser',
  'unbanuser',
]);

/** A verified game server's message, to the instances service; other names are ignored. */
export function dispatchGameServer(
  instances: InstancesService,
  gameServerId: string,
  name: string,
  rawArgs: unknown,
): void {
  const args = rawArgs !== null && typeof rawArgs === 'object' ? (rawArgs as Record<string, unknown>) : {};
  switch (name) {
    case 'claiminstancerequest':
      return instances.claim(gameServerId, args);
    case 'instanceready':
      return instances.ready(gameServerId, args);
    case 'removeinstance':
      return instances.remove(gameServerId, args);
    case 'addmoderator':
    case 'removemoderator':
    case 'kickuser':
    case 'banuser':
    case 'unbanuser':
      return instances.moderate(gameServerId, name, args);
    default:
      return;
  }
}
