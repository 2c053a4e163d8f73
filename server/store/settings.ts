import type { DataStore, Tx } from './seam.js';
import { Store, type StoreMeta } from './store.js';

/** Host settings changed at run time (first-run state, owner's choices): one record in its own collection. */
export const SETTINGS = 'settings';
/** The id of the host settings' record. */
export const HOST = 'host';

export interface HostSettingsRecord {
  /** True once the host has an owner: the setup secret is never offered again. */
  ownerSetupDone: boolean;
  /** The owner's choice; overrides the configuration when set. */
  requireInviteCode?: boolean;
}

/** The durable host settings (for a folder of the first layout, what its meta.json held). */
export async function hostSettings(store: DataStore): Promise<HostSettingsRecord> {
  return (await store.collection<HostSettingsRecord>(SETTINGS).get(HOST)) ?? firstLayoutSettings(store);
}

/** The settings a folder of the first layout kept in meta.json (PostgreSQL stores began with the collection). */
function firstLayoutSettings(store: DataStore): HostSettingsRecord {
  const meta: Partial<StoreMeta> = store instanceof Store ? store.meta : {};
  return {
    ownerSetupDone: meta.ownerSetupDone ?? false,
    ...(meta.settings?.requireInviteCode !== undefined
      ? { requireInviteCode: meta.settings.requireInviteCode }
      : {}),
  };
}

/** Changes the host settings in transaction `t` (read through it: no second connection while it runs). */
export async function updateHostSettings(
  t: Tx,
  store: DataStore,
  patch: Partial<HostSettingsRecord>,
): Promise<void> {
  const repo = t.repo<HostSettingsRecord>(SETTINGS);
  repo.put(HOST, { ...((await repo.get(HOST)) ?? firstLayoutSettings(store)), ...patch });
}
