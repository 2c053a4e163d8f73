import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react';

export type ToastTone = 'info' | 'success' | 'warning' | 'error';

export interface ToastAction {
  label: string;
  onClick(): void;
}

export interface ToastInput {
  /** Showing a toast with the id of one on screen replaces it (e.g. one toast per invite request). */
  id?: string;
  tone?: ToastTone;
  title: string;
  body?: string;
  actions?: ToastAction[];
  /** Hides itself after this long; null keeps it until closed. Default 8 s. */
  timeoutMs?: number | null;
}

interface Toast extends Required<Omit<ToastInput, 'body' | 'timeoutMs'>> {
  body: string | null;
  timeoutMs: number | null;
}

export interface Toasts {
  show(toast: ToastInput): string;
  dismiss(id: string): void;
}

const ToastContext = createContext<Toasts | null>(null);

/** At most this many at once; the oldest leaves first. */
const MAX_TOASTS = 4;

let counter = 0;

/** The window-wide toast area: visible over every section, announced politely to screen readers. */
export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);

  const dismiss = useCallback((id: string) => {
    setToasts((list) => list.filter((t) => t.id !== id));
  }, []);

  const show = useCallback((input: ToastInput): string => {
    const id = input.id ?? `toast-${++counter}`;
    const toast: Toast = {
      id,
      tone: input.tone ?? 'info',
      title: input.title,
      body: input.body ?? null,
      actions: input.actions ?? [],
      timeoutMs: input.timeoutMs === undefined ? 8000 : input.timeoutMs,
    };
    setToasts((list) => [...list.filter((t) => t.id !== id), toast].slice(-MAX_TOASTS));
    return id;
  }, []);

  const value = useMemo(() => ({ show, dismiss }), [show, dismiss]);

  return (
    <ToastContext value={value}>
      {children}
      <section className="toast-area" aria-label="Notifications">
        <ol className="toast-list" aria-live="polite" aria-relevant="additions">
          {toasts.map((toast) => (
            <ToastItem key={toast.id} toast={toast} onClose={() => dismiss(toast.id)} />
          ))}
        </ol>
      </section>
    </ToastContext>
  );
}

function ToastItem({ toast, onClose }: { toast: Toast; onClose(): void }) {
  const [paused, setPaused] = useState(false);
  const close = useRef(onClose);
  useEffect(() => {
    close.current = onClose;
  }, [onClose]);

  // Hovering or focusing a toast keeps it, so nobody loses one while reaching for its button.
  useEffect(() => {
    if (toast.timeoutMs === null || paused) return;
    const timer = setTimeout(() => close.current(), toast.timeoutMs);
    return () => clearTimeout(timer);
  }, [toast.timeoutMs, paused]);

  return (
    <li
      className={`toast toast-${toast.tone}`}
      data-testid="toast"
      onMouseEnter={() => setPaused(true)}
      onMouseLeave={() => setPaused(false)}
      onFocus={() => setPaused(true)}
      onBlur={() => setPaused(false)}
    >
      <div className="toast-text">
        <p className="toast-title">{toast.title}</p>
        {toast.body ? <p className="toast-body">{toast.body}</p> : null}
        {toast.actions.length > 0 ? (
          <div className="toast-actions">
            {toast.actions.map((action) => (
              <button
                key={action.label}
                type="button"
                className="button small secondary"
                onClick={() => {
                  action.onClick();
                  onClose();
                }}
              >
                {action.label}
              </button>
            ))}
          </div>
        ) : null}
      </div>
      <button type="button" className="toast-close" aria-label={`Close: ${toast.title}`} onClick={onClose}>
        <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false">
          <path d="M6 6l12 12M18 6L6 18" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
        </svg>
      </button>
    </li>
  );
}

export function useToasts(): Toasts {
  const value = useContext(ToastContext);
  if (!value) throw new Error('useToasts is only available inside ToastProvider');
  return value;
}
