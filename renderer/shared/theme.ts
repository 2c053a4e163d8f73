import { useSyncExternalStore } from 'react';

/**
 * Light or dark (issue 18): follows the system (prefers-color-scheme) until the person picks one with the toggle;
 * the choice is kept per browser. The resolved theme is `data-theme` on <html>, which styles.css keys on.
 */
export type ThemeChoice = 'system' | 'light' | 'dark';
export const THEME_KEY = 'hnx.theme';

const listeners = new Set<() => void>();
const systemQuery = (): MediaQueryList | null =>
  typeof window.matchMedia === 'function' ? window.matchMedia('(prefers-color-scheme: light)') : null;

export function themeChoice(): ThemeChoice {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

export function resolvedTheme(choice: ThemeChoice = themeChoice()): 'light' | 'dark' {
  if (choice !== 'system') return choice;
  return systemQuery()?.matches ? 'light' : 'dark';
}

function apply(): void {
  const theme = resolvedTheme();
  const root = document.documentElement;
  root.dataset.theme = theme;
  document.querySelector('meta[name="color-scheme"]')?.setAttribute('content', theme);
  document
    .querySelector('meta[name="theme-color"]')
    ?.setAttribute('content', theme === 'light' ? '#f4f5fa' : '#0d0f1a');
  for (const listener of listeners) listener();
}

export function setThemeChoice(choice: ThemeChoice): void {
  try {
    if (choice === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, choice);
  } catch {
    // Without storage the choice lasts until the page closes.
  }
  apply();
}

/** Applies the theme before the first render and follows the system and other tabs from then on. */
export function startTheme(): void {
  apply();
  systemQuery()?.addEventListener('change', apply);
  window.addEventListener('storage', (event) => {
    if (event.key === THEME_KEY || event.key === null) apply();
  });
}

export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, themeChoice);
}
