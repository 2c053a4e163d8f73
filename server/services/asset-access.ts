import { Publicity } from '../protocol/enums.js';
import type { AvatarMetaDto, WorldMetaDto } from '../protocol/uploads.js';
import type { StoredUser } from '../store/users.js';
import type { AssetTokens } from './asset-tokens.js';
import { unixSeconds, type Clock } from './context.js';

/** Who asks for an asset's meta: any of these may be missing. */
export interface MetaAsker {
  /** The signed-in caller (credentials in headers), if any. */
  caller?: StoredUser | null;
  /** An asset token presented with the request (`meta/:kind/:id/:assetToken`). */
  assetToken?: string;
  /** The network address the request came from (normalised as the socket hub keeps it). */
  address?: string;
}

/**
 * Who may see the whole meta of an OwnerOnly avatar or world (its builds, their file ids and a world's server
 * scripts); everyone else gets the public part. The owner and whoever may use the asset: a holder of a live asset
 * token for it (manageAssetToken; handed on by `shareavatartoken` or by an invite's `assetToken`).
 *
 * Real game clients ask for metas with no credentials at all (Unity's `GetAvatarMeta` / `GetWorldMeta`, and the
 * game server reading a world's server scripts), and Unity looks up the build before it looks at its token: such a
 * request is recognised by the machine it comes from. It gets the whole meta when that address holds a verified
 * socket of the owner, of a user the host delivered a live asset token of this asset to, or (avatars) of a user in
 * a live instance with the owner (the owner's game client shares its avatar with everyone in its instance, and
 * Unity asks for the meta before that share arrives), or (worlds) of a user in a live instance of the world or of
 * the game server hosting one.
 */
export function createAssetAccess(deps: {
  clock: Clock;
  assetTokens: Pick<AssetTokens, 'expiryOf' | 'expiryIn'>;
  presence: { usersAt(address: string): Iterable<string>; gameServersAt(address: string): string[] };
  instances: {
    hostsWorld(gameServerId: string, worldId: string): boolean;
    inInstanceOfWorld(userId: string, worldId: string): boolean;
    shareInstance(userId: string, otherUserId: string): boolean;
  };
}) {
  const { clock, assetTokens, presence, instances } = deps;
  /** asset id -> user id -> the asset token the host delivered to that user, and when it expires (Unix seconds) */
  const delivered = new Map<string, Map<string, { token: string; until: number }>>();
  let sweptAt = 0;

  /** Forgets expired deliveries of every asset, at most once a minute (a delivery lasts an hour at most). */
  function sweep(now: number): void {
    if (now - sweptAt < 60) return;
    sweptAt = now;
    for (const [assetId, byUser] of delivered) {
      for (const [userId, { until }] of byUser) if (until <= now) byUser.delete(userId);
      if (byUser.size === 0) delivered.delete(assetId);
    }
  }

  /** Whether the host delivered `userId` a token of `asset` that is still one of its live tokens (not removed). */
  function holds(asset: AvatarMetaDto | WorldMetaDto, userId: string): boolean {
    const byUser = delivered.get(asset.Id);
    const held = byUser?.get(userId);
    if (held === undefined) return false;
    if (held.until > unixSeconds(clock) && assetTokens.expiryIn(asset, held.token) > 0) return true;
    byUser!.delete(userId);
    if (byUser!.size === 0) delivered.delete(asset.Id);
    return false;
  }

  function userMayUse(
    kind: 'avatar' | 'world',
    asset: AvatarMetaDto | WorldMetaDto,
    userId: string,
  ): boolean {
    if (userId === asset.OwnerId || holds(asset, userId)) return true;
    return kind === 'avatar'
      ? instances.shareInstance(userId, asset.OwnerId)
      : instances.inInstanceOfWorld(userId, asset.Id);
  }

  return {
    /** The host handed `userId` the asset token `token` of `assetId` (if it is a live one, it counts until it expires). */
    async delivered(assetId: string, userId: string, token: string): Promise<void> {
      const until = await assetTokens.expiryOf(assetId, token);
      if (until === 0) return;
      sweep(unixSeconds(clock));
      let byUser = delivered.get(assetId);
      if (!byUser) delivered.set(assetId, (byUser = new Map()));
      const held = byUser.get(userId);
      // The token that lasts longest is the one kept.
      if (!held || held.until < until) byUser.set(userId, { token, until });
    },

    /** Whether `asker` gets the whole meta of `asset` (always, for a public one). */
    mayUse(kind: 'avatar' | 'world', asset: AvatarMetaDto | WorldMetaDto, asker: MetaAsker): boolean {
      if (asset.Publicity === Publicity.Anyone) return true;
      if (asker.caller && userMayUse(kind, asset, asker.caller.Id)) return true;
      if (asker.assetToken && assetTokens.expiryIn(asset, asker.assetToken) > 0) return true;
      if (!asker.address) return false;
      for (const userId of presence.usersAt(asker.address)) {
        if (userMayUse(kind, asset, userId)) return true;
      }
      return (
        kind === 'world' &&
        presence.gameServersAt(asker.address).some((id) => instances.hostsWorld(id, asset.Id))
      );
    },
  };
}

export type AssetAccess = ReturnType<typeof createAssetAccess>;
