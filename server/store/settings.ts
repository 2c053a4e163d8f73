import type { Store, Tx } from './store.js';

/** Host settings changed at run time (first-run state, owner's choices): one record in its own collection. */
export const SETTINGS = 'settings';
const HOST = 'host';

export interface HostSettingsRecord {
  /** True once the host has an owner: the setup secret is never offered again. */
  ownerSetupDone: boolean;
  /** The owner's choice; overrides the configuration when set. */
  requireInviteCode?: boolean;
}

/** The durable host settings (for a folder of the first layout, what its meta.json held). */
export function hostSettings(store: Store): HostSettingsRecord {
  return (
    store.collection<HostSettingsRecord>(SETTINGS).get(HOST) ?? {
      ownerSetupDone: store.meta.ownerSetupDone ?? false,
      ...(store.meta.settings?.requireInviteCode !== undefined
        ? { requireInviteCode: store.meta.settings.requireInviteCode }
        : {}),
    }
  );
}

/** Changes the host settings in transaction `t`. */
export function updateHostSettings(t: Tx, store: Store, patch: Partial<HostSettingsRecord>): void {
  const repo = t.repo<HostSettingsRecord>(SETTINGS);
  repo.put(HOST, { ...(repo.get(HOST) ?? hostSettings(store)), ...patch });
}
