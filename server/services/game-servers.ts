import { ErrorCode } from '../protocol/errors.js';
import type { GameServerTokenDto } from '../protocol/host-info.js';
import { AppError } from '../errors.js';
import type { ReadCollection as Collection } from '../store/seam.js';
import { appendStaffEntry } from './audit-log.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { hashMatches, sha256 } from './secrets.js';

export type { GameServerTokenDto };

export const GAME_SERVER_TOKENS = 'gameservertokens';
/** Unique index of game-server tokens: the token's SHA-256 (hex). */
const BY_HASH = 'hash';

interface StoredGameServerToken {
  id: string;
  /** SHA-256 of the token; the token itself is shown once, when created. */
  hash: string;
  label: string;
  createdAt: number;
  createdBy: string;
}

/** Which game servers may connect: tokens from the host configuration and tokens made in the host's UI. */
export function createGameServerTokens(
  deps: Pick<ServiceDeps, 'store' | 'clock' | 'ids' | 'config' | 'events'>,
) {
  const { store, clock, ids, config, events } = deps;
  const tokens: Collection<StoredGameServerToken> =
    store.collection<StoredGameServerToken>(GAME_SERVER_TOKENS);
  tokens.addIndex(BY_HASH, (stored) => stored.hash);
  // A token revoked through another host on the database: its servers here are closed on hearing the change,
  // whether or not a message between hosts (Redis) says so too.
  store.watch(GAME_SERVER_TOKENS, (tokenId, remote) => {
    if (remote) events.emit('gameServerTokensChanged', { tokenId });
  });

  return {
    /** Whether the token of this id still lets servers in (`config`: one from the configuration, always). */
    async stillValid(tokenId: string): Promise<boolean> {
      return tokenId === 'config' || (await tokens.has(tokenId));
    },

    /** The id of the token that matches (`config` for one from the configuration), or null. */
    async verify(token: unknown): Promise<string | null> {
      if (typeof token !== 'string' || token.length === 0 || token.length > 512) return null;
      const given = sha256(token);
      let found: string | null = null;
      for (const configured of config.gameServerTokens) {
        if (hashMatches(sha256(configured).toString('hex'), given)) found = 'config';
      }
      // Looked up by the token's SHA-256: the lookup's timing says nothing about the token.
      const stored = await tokens.find(BY_HASH, given.toString('hex'));
      if (stored && hashMatches(stored.hash, given)) found = stored.id;
      return found;
    },

    async list(): Promise<GameServerTokenDto[]> {
      const all: GameServerTokenDto[] = [];
      for await (const { id, label, createdAt, createdBy } of tokens.scan())
        all.push({ id, label, createdAt, createdBy });
      return all.sort((a, b) => b.createdAt - a.createdAt);
    },

    async add(label: string, createdBy: string): Promise<{ token: string; record: GameServerTokenDto }> {
      const token = ids.secret();
      const record: StoredGameServerToken = {
        id: ids.id('gstoken'),
        hash: sha256(token).toString('hex'),
        label: label.trim().slice(0, 100),
        createdAt: unixSeconds(clock),
        createdBy,
      };
      await store.tx(async (t) => {
        const target = { targetId: record.id, targetName: record.label };
        await appendStaffEntry(t, deps, createdBy, 'addgameservertoken', target, { label: record.label });
        t.repo<StoredGameServerToken>(GAME_SERVER_TOKENS).put(record.id, record);
      });
      const { hash: _hash, ...dto } = record;
      return { token, record: dto };
    },

    async revoke(id: string, by?: string): Promise<void> {
      await store.tx(async (t) => {
        const repo = t.repo<StoredGameServerToken>(GAME_SERVER_TOKENS);
        const found = await repo.get(id);
        if (!found)
          throw new AppError(ErrorCode.NOT_FOUND, 'No game-server token has that id.', {
            tokenId: 'not found',
          });
        await repo.remove(id);
        if (by !== undefined) {
          const target = { targetId: id, targetName: found.label };
          await appendStaffEntry(t, deps, by, 'revokegameservertoken', target, { label: found.label });
        }
        t.afterCommit(() => events.emit('gameServerTokenRevoked', { tokenId: id }));
      });
    },
  };
}

export type GameServerTokens = ReturnType<typeof createGameServerTokens>;
