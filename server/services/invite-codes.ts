import { ErrorCode } from '../protocol/errors.js';
import type { InviteCodeDto } from '../protocol/host-info.js';
import { AppError } from '../errors.js';
import type { ReadCollection as Collection, Tx } from '../store/seam.js';
import { hostSettings, updateHostSettings } from '../store/settings.js';
import { appendStaffEntry } from './audit-log.js';
import { unixSeconds, type ServiceDeps } from './context.js';
import { hashMatches, sha256 } from './secrets.js';

export type { InviteCodeDto };

export const INVITE_CODES = 'invitecodes';
/** Unique index of invite codes: the code's SHA-256 (hex). */
const BY_HASH = 'hash';

interface StoredInviteCode {
  id: string;
  /** SHA-256 of the code; the code is shown once, to whoever made it. */
  hash: string;
  label: string;
  singleUse: boolean;
  /** How many sign-ups it allows, 0 for no limit. Absent on codes made before uses could be chosen. */
  maxUses?: number;
  createdAt: number;
  createdBy: string;
  /** Unix seconds, 0 for never. */
  expiresAt: number;
  uses: Array<{ userId: string; at: number }>;
  revoked: boolean;
}

/** Invite codes made by the owner and admins: single-use or reusable, with an optional expiry. */
export function createInviteCodes(deps: Pick<ServiceDeps, 'store' | 'clock' | 'ids' | 'config'>) {
  const { store, clock, ids, config } = deps;
  const codes: Collection<StoredInviteCode> = store.collection<StoredInviteCode>(INVITE_CODES);
  codes.addIndex(BY_HASH, (code) => code.hash);

  function maxUsesOf(code: StoredInviteCode): number {
    return code.maxUses ?? (code.singleUse ? 1 : 0);
  }
  function usedUp(code: StoredInviteCode): boolean {
    const max = maxUsesOf(code);
    return max > 0 && code.uses.length >= max;
  }
  function usable(code: StoredInviteCode, now: number): boolean {
    return !code.revoked && (code.expiresAt === 0 || code.expiresAt > now) && !usedUp(code);
  }
  function dto(code: StoredInviteCode): InviteCodeDto {
    const { hash: _hash, ...rest } = code;
    return {
      ...rest,
      maxUses: maxUsesOf(code),
      uses: [...code.uses],
      active: usable(code, unixSeconds(clock)),
    };
  }
  /** The code's record: looked up by its SHA-256, so the lookup's timing says nothing about the code. */
  async function find(t: Tx | null, code: string): Promise<StoredInviteCode | undefined> {
    const given = sha256(code);
    const key = given.toString('hex');
    const stored = await (t ? t.repo<StoredInviteCode>(INVITE_CODES) : codes).find(BY_HASH, key);
    return stored && hashMatches(stored.hash, given) ? stored : undefined;
  }

  return {
    /** Whether sign-up needs an invite code now: the owner's setting, else the configuration. */
    async required(): Promise<boolean> {
      return (await hostSettings(store)).requireInviteCode ?? config.requireInviteCode;
    },
    /** The owner's choice of whether sign-up needs an invite code (it overrides the configuration). */
    async setRequired(requireInviteCode: boolean, by?: string): Promise<void> {
      await store.tx(async (t) => {
        await updateHostSettings(t, store, { requireInviteCode });
        if (by === undefined) return;
        const target = { targetId: 'host', targetName: 'Host settings' };
        await appendStaffEntry(t, deps, by, 'changehostsettings', target, { requireInviteCode });
      });
    },
    /**
     * Checks `code` for a sign-up; returns the change that records its use (to commit with the new user), or
     * null for a code from the host configuration. Throws when the code cannot be used.
     */
    async claim(t: Tx | null, code: string, userId: string | null): Promise<void> {
      if (code !== '' && config.globalInviteCodes.includes(code)) return;
      // Inside a transaction the newest version counts (two sign-ups racing for a single-use code).
      const stored = code === '' ? undefined : await find(t, code);
      const now = unixSeconds(clock);
      if (!stored || !usable(stored, now)) {
        const why = !stored
          ? code === ''
            ? 'This host requires an invite code'
            : 'Invite code is not valid'
          : stored.revoked
            ? 'Invite code was revoked'
            : usedUp(stored)
              ? maxUsesOf(stored) === 1
                ? 'Invite code was already used'
                : 'Invite code has been used as many times as it allows'
              : 'Invite code has expired';
        throw new AppError(ErrorCode.INVITE_CODE_REQUIRED, `Failed to create user! ${why}.`, {
          inviteCode: why,
        });
      }
      // No transaction or user only checks the code, e.g. before spending time on hashing a password.
      if (t === null || userId === null) return;
      await t.repo<StoredInviteCode>(INVITE_CODES).update(stored.id, (draft) => {
        draft.uses.push({ userId, at: now });
      });
    },

    /** `maxUses` 0 means no limit; `singleUse` is the same as `maxUses` 1 (the older way to ask). */
    async create(
      input: { label: string; singleUse: boolean; maxUses?: number; expiresInSeconds: number },
      createdBy: string,
    ) {
      const code = ids.secret().slice(0, 20);
      const now = unixSeconds(clock);
      const maxUses = input.maxUses ?? (input.singleUse ? 1 : 0);
      const stored: StoredInviteCode = {
        id: ids.id('invcode'),
        hash: sha256(code).toString('hex'),
        label: input.label.trim().slice(0, 100),
        singleUse: maxUses === 1,
        maxUses,
        createdAt: now,
        createdBy,
        expiresAt: input.expiresInSeconds > 0 ? now + input.expiresInSeconds : 0,
        uses: [],
        revoked: false,
      };
      const saved = await store.tx(async (t) => {
        // The log names the code by its id and label; the code itself is shown once and kept nowhere.
        const fields = { label: stored.label, maxUses, expiresAt: stored.expiresAt };
        const target = { targetId: stored.id, targetName: stored.label };
        await appendStaffEntry(t, deps, createdBy, 'createinvitecode', target, fields);
        return t.repo<StoredInviteCode>(INVITE_CODES).put(stored.id, stored);
      });
      return { code, record: dto(saved) };
    },

    async revoke(id: string, by?: string): Promise<void> {
      await store.tx(async (t) => {
        const repo = t.repo<StoredInviteCode>(INVITE_CODES);
        const found = await repo.get(id);
        if (!found)
          throw new AppError(ErrorCode.NOT_FOUND, 'No invite code has that id.', { codeId: 'not found' });
        await repo.update(id, (draft) => {
          draft.revoked = true;
        });
        if (by !== undefined) {
          const target = { targetId: id, targetName: found.label };
          await appendStaffEntry(t, deps, by, 'revokeinvitecode', target, { label: found.label });
        }
      });
    },

    async list(): Promise<InviteCodeDto[]> {
      const all: InviteCodeDto[] = [];
      for await (const code of codes.scan()) all.push(dto(code));
      return all.sort((a, b) => b.createdAt - a.createdAt);
    },
  };
}

export type InviteCodes = ReturnType<typeof createInviteCodes>;
