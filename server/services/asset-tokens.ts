import { ErrorCode } from '../protocol/errors.js';
import type { TokenDto } from '../protocol/types.js';
import type { AvatarMetaDto, WorldMetaDto } from '../protocol/uploads.js';
import { AppError } from '../errors.js';
import type { StoredUser } from '../store/users.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import type { UploadsService } from './uploads.js';
import { hashMatches, sha256 } from './secrets.js';

/** An asset token as stored on its avatar or world: only its hash. Never shown by meta endpoints. */
interface StoredAssetToken {
  hash: string;
  dateCreated: number;
  dateExpire: number;
  app: string;
}

type WithTokens = (AvatarMetaDto | WorldMetaDto) & { Tokens?: StoredAssetToken[] };

const ASSET_TOKEN_SECONDS = 3600;
const MAX_TOKENS = 50;

/**
 * manageAssetToken (reference 6.6): the owner of an OwnerOnly avatar or world hands out one-hour tokens that let
 * others download its builds through `file/:userid/:fileid/:filetoken`.
 */
export function createAssetTokens(deps: Pick<ServiceDeps, 'clock' | 'ids'> & { uploads: UploadsService }) {
  const { clock, ids, uploads } = deps;

  async function assetOf(assetId: string): Promise<{ kind: 'avatar' | 'world'; asset: WithTokens } | null> {
    if (assetId.startsWith('avatar_')) {
      const asset = await uploads.avatar(assetId);
      return asset ? { kind: 'avatar', asset } : null;
    }
    if (assetId.startsWith('world_')) {
      const asset = await uploads.world(assetId);
      return asset ? { kind: 'world', asset } : null;
    }
    return null;
  }

  function live(asset: WithTokens): StoredAssetToken[] {
    const now = unixSeconds(clock);
    return (asset.Tokens ?? []).filter((t) => t.dateExpire > now);
  }

  return {
    async add(caller: StoredUser, assetId: string): Promise<TokenDto> {
      const found = await assetOf(assetId);
      if (!found)
        throw new AppError(
          ErrorCode.CONTENT_NOT_FOUND,
          'Failed to add Token! No avatar or world has that id.',
        );
      if (found.asset.OwnerId !== caller.Id)
        throw new AppError(ErrorCode.NOT_OWNER, 'Failed to add Token! You do not own that asset.');
      const now = unixSeconds(clock);
      const content = ids.secret();
      const token: TokenDto = {
        content,
        dateCreated: now,
        dateExpire: now + ASSET_TOKEN_SECONDS,
        app: 'unknown',
      };
      const added: StoredAssetToken = {
        hash: sha256(content).toString('hex'),
        dateCreated: now,
        dateExpire: token.dateExpire,
        app: 'unknown',
      };
      await uploads.saveAssetTokens<StoredAssetToken>(found.kind, found.asset.Id, (tokens) => [
        ...tokens.filter((t) => t.dateExpire > now).slice(-(MAX_TOKENS - 1)),
        added,
      ]);
      return token;
    },

    async remove(caller: StoredUser, assetId: string, assetToken: string): Promise<void> {
      const found = await assetOf(assetId);
      if (!found)
        throw new AppError(
          ErrorCode.CONTENT_NOT_FOUND,
          'Failed to remove Token! No avatar or world has that id.',
        );
      if (found.asset.OwnerId !== caller.Id)
        throw new AppError(ErrorCode.NOT_OWNER, 'Failed to remove Token! You do not own that asset.');
      const given = sha256(assetToken).toString('hex');
      let removed = false;
      await uploads.saveAssetTokens<StoredAssetToken>(found.kind, found.asset.Id, (tokens) => {
        const after = tokens.filter((t) => t.hash !== given);
        removed = after.length < tokens.length;
        return after;
      });
      if (!removed)
        throw new AppError(ErrorCode.NOT_FOUND, 'Failed to remove Token! That token does not exist.');
    },

    /** True when `token` is a live asset token of the avatar or world with id `assetId`. */
    async allows(assetId: string, token: string): Promise<boolean> {
      return (await expiryOf(assetId, token)) > 0;
    },

    /** When the live asset token `token` of `assetId` expires (Unix seconds); 0 when it is not one. */
    expiryOf,
    expiryIn,
  };

  async function expiryOf(assetId: string, token: string): Promise<number> {
    const found = await assetOf(assetId);
    return found ? expiryIn(found.asset, token) : 0;
  }

  /** When the live asset token `token` of `asset` (as read) expires (Unix seconds); 0 when it is not one. */
  function expiryIn(asset: WithTokens, token: string): number {
    const given = sha256(token);
    let expiry = 0;
    // Every stored token is compared, in constant time each: no early exit on a match.
    for (const stored of live(asset)) {
      if (hashMatches(stored.hash, given)) expiry = stored.dateExpire;
    }
    return expiry;
  }
}

export type AssetTokens = ReturnType<typeof createAssetTokens>;
