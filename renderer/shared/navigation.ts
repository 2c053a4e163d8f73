import { createContext, useContext } from 'react';

/** Section ids of the shell (`account`, `invites`, ...). */
export type SectionName = 'account' | 'uploads' | 'moderation' | 'invites' | 'friends' | 'downloads' | 'host';

/** Opens a section of the shell, e.g. from a toast's "View" button; the shell provides it. */
export const NavigationContext = createContext<(section: SectionName) => void>(() => undefined);

export function useOpenSection(): (section: SectionName) => void {
  return useContext(NavigationContext);
}
