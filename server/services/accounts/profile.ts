import { ErrorCode } from '../../protocol/errors.js';
import { pronounsFromIds } from '../../protocol/pronouns.js';
import { BioInput, fieldErrorsOf } from '../../protocol/schemas.js';
import { isUrlAllowed } from '../../protocol/urls.js';
import { AppError } from '../../errors.js';
import { UsersRepo, type StoredUser } from '../../store/users.js';
import type { AccountsShared } from './state.js';

/** Checks and stores a Bio change (an object or its JSON text); returns the new Bio. */
export async function updateBio(
  up: AccountsShared,
  user: StoredUser,
  rawBio: unknown,
): Promise<StoredUser['Bio']> {
  const { config, store, events } = up.deps;
  let bio: unknown = rawBio;
  if (typeof bio === 'string') {
    try {
      bio = JSON.parse(bio);
    } catch {
      throw new AppError(ErrorCode.INVALID_BIO, 'Failed to update bio! bio is not JSON.', {
        bio: 'is not JSON',
      });
    }
  }
  const parsed = BioInput.safeParse(bio);
  if (!parsed.success) {
    throw new AppError(
      ErrorCode.INVALID_BIO,
      'Failed to update bio! Check the marked fields.',
      prefix(fieldErrorsOf(parsed.error)),
    );
  }
  const input = parsed.data;
  const urlOpts = { allowedDomains: config.allowedDomains, localHosts: up.deps.localHosts() };
  const fields: Record<string, string> = {};
  for (const key of ['PfpURL', 'BannerURL'] as const) {
    const value = input[key];
    if (value !== undefined && value !== '' && !isUrlAllowed(value, urlOpts)) {
      fields[`bio.${key}`] = 'must be empty, on this host, or on an allowed image domain';
    }
  }
  if (Object.keys(fields).length > 0) {
    throw new AppError(ErrorCode.INVALID_BIO, 'Failed to update bio! Check the marked fields.', fields);
  }
  const { Pronouns, ...rest } = input;
  return store.tx(async (t) => {
    const updated = await UsersRepo.in(t).update(user.Id, (draft) => {
      Object.assign(draft.Bio, rest);
      if (Pronouns === 'remove') delete draft.Bio.Pronouns;
      else if (Pronouns !== undefined) draft.Bio.Pronouns = pronounsFromIds(Pronouns);
    });
    t.afterCommit(() => events.emit('bioUpdated', { userId: user.Id, user: updated }));
    return updated.Bio;
  });
}

function prefix(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [`bio.${key}`, value]));
}
