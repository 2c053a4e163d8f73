import { useEffect, useState } from 'react';
import { copyText } from './clipboard.js';

/**
 * A button that copies `text` and says so for a moment in its own label (announced to screen readers through the
 * button's live text). Its width does not change between the two labels.
 */
export function CopyButton({
  text,
  label,
  what,
  className = 'button secondary small',
}: {
  text: string;
  label: string;
  /** Names the copied thing for screen readers, e.g. `the id of "Robot"`. */
  what: string;
  className?: string;
}) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const timer = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <button
      type="button"
      className={`${className} copy-button`}
      aria-label={`${label}: ${what}`}
      data-copy-state={state}
      onClick={() => {
        void copyText(text).then((ok) => setState(ok ? 'copied' : 'failed'));
      }}
    >
      <span className="copy-button-sizer" aria-hidden="true">
        <span>{label}</span>
        <span>Copied</span>
        <span>Copy failed</span>
      </span>
      <span className="copy-button-label" aria-live="polite">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label}
      </span>
    </button>
  );
}
