import { useSyncExternalStore } from 'react';
import type { SectionName } from './navigation.js';

/**
 * Screens live in the address's hash (`#/friends`, `#/moderation/user_…`): a reload keeps the screen, Back and
 * Forward move between screens, and a link can open a user in Moderation. The hash works wherever the UI is
 * loaded (LAN browsers and the desktop window) with no server-side routes.
 */
export interface Route {
  section: string | null;
  /** What follows the section, e.g. a user id in Moderation. */
  param: string | null;
}

export function parseRoute(hash: string): Route {
  if (!hash.startsWith('#/')) return { section: null, param: null };
  const [section, ...rest] = hash.slice(2).split('/');
  const param = rest.join('/');
  let decoded = param;
  try {
    decoded = decodeURIComponent(param);
  } catch {
    // A malformed escape is taken as it is.
  }
  return { section: section || null, param: decoded || null };
}

/** The Host screen's parameter right after the owner account was made: it shows the first next step. */
export const FIRST_RUN_PARAM = 'welcome';

export function routeHash(section: SectionName, param?: string | null): string {
  return `#/${section}${param ? `/${encodeURIComponent(param)}` : ''}`;
}

/** Goes to a screen as a new history entry (unless already there). */
export function navigate(section: SectionName, param?: string | null): void {
  const hash = routeHash(section, param);
  if (window.location.hash !== hash) window.location.hash = hash;
}

/** Said when `replaceRoute` changed the address: replacing an entry fires neither hashchange nor popstate. */
const REPLACED = 'hnx:route-replaced';

/** Replaces the current entry (a screen chosen for you, e.g. the first one). */
export function replaceRoute(section: SectionName, param?: string | null): void {
  const url = new URL(window.location.href);
  url.hash = routeHash(section, param);
  window.history.replaceState(window.history.state, '', url);
  window.dispatchEvent(new Event(REPLACED));
}

function subscribe(listener: () => void): () => void {
  window.addEventListener('hashchange', listener);
  window.addEventListener('popstate', listener);
  window.addEventListener(REPLACED, listener);
  return () => {
    window.removeEventListener('hashchange', listener);
    window.removeEventListener('popstate', listener);
    window.removeEventListener(REPLACED, listener);
  };
}

export function useRouteHash(): string {
  return useSyncExternalStore(subscribe, () => window.location.hash);
}

export function useRoute(): Route {
  return parseRoute(useRouteHash());
}
