import { resolvedTheme, setThemeChoice, useThemeChoice, type ThemeChoice } from './theme.js';

const NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'light', light: 'dark', dark: 'system' };
const WORDS: Record<ThemeChoice, string> = { system: 'System', light: 'Light', dark: 'Dark' };

/** One button that goes System → Light → Dark; its label says what is on now. */
export function ThemeToggle() {
  const choice = useThemeChoice();
  const shown = resolvedTheme(choice);
  return (
    <button
      type="button"
      className="button ghost small theme-toggle"
      data-testid="theme-toggle"
      data-choice={choice}
      aria-label={`Theme: ${WORDS[choice]}${choice === 'system' ? ` (${shown})` : ''}. Switch to ${WORDS[NEXT[choice]]}.`}
      title={`Theme: ${WORDS[choice]}. Click for ${WORDS[NEXT[choice]]}.`}
      onClick={() => setThemeChoice(NEXT[choice])}
    >
      <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false">
        {shown === 'light' ? (
          <path
            d="M12 4V2m0 20v-2m8-8h2M2 12h2m13.66-5.66 1.41-1.41M4.93 19.07l1.41-1.41m0-11.32L4.93 4.93m14.14 14.14-1.41-1.41M12 7a5 5 0 1 0 0 10 5 5 0 0 0 0-10Z"
            fill="none"
            stroke="currentColor"
            strokeWidth="2"
            strokeLinecap="round"
          />
        ) : (
          <path
            d="M21 12.8A9 9 0 1 1 11.2 3a7 7 0 0 0 9.8 9.8Z"
            fill="none"
            stroke="currentColor"
            strokeWidth="2"
            strokeLinejoin="round"
          />
        )}
      </svg>
    </button>
  );
}
