import { useEffect, useRef, useState, type ReactNode } from 'react';

export interface ConfirmDialogProps {
  title: string;
  /** What will happen, naming who it happens to. */
  children: ReactNode;
  confirmLabel: string;
  pendingLabel?: string;
  tone?: 'danger' | 'primary';
  pending?: boolean;
  onConfirm(): void;
  onCancel(): void;
}

/**
 * A modal question before an action that is hard to undo. Escape and "Cancel" back out; focus starts on Cancel so
 * a stray Enter does nothing harmful.
 */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  pendingLabel,
  tone = 'danger',
  pending = false,
  onConfirm,
  onCancel,
}: ConfirmDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => element?.close();
  }, []);

  return (
    <dialog
      ref={dialog}
      className="dialog confirm-dialog"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel={(event) => {
        event.preventDefault();
        if (!pending) onCancel();
      }}
    >
      <h2 id="confirm-title" className="dialog-title">
        {title}
      </h2>
      <div id="confirm-body" className="confirm-body">
        {children}
      </div>
      <div className="button-row confirm-buttons">
        <button type="button" className="button ghost" disabled={pending} autoFocus onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className={`button ${tone}`}
          disabled={pending}
          aria-busy={pending}
          onClick={onConfirm}
        >
          {pending ? (
            <>
              <span className="spinner" aria-hidden="true" />
              {pendingLabel ?? confirmLabel}
            </>
          ) : (
            confirmLabel
          )}
        </button>
      </div>
    </dialog>
  );
}

export interface ConfirmRequest {
  title: string;
  body: ReactNode;
  confirmLabel: string;
  pendingLabel?: string;
  tone?: 'danger' | 'primary';
}

/**
 * Ask first, then act: `confirmThen(request, work)` shows the dialog, runs `work` only after "confirm" (with the
 * dialog showing progress), and closes it afterwards. Resolves false when cancelled; `work`'s errors propagate so
 * the caller can show them next to the action.
 */
export function useConfirm() {
  const [request, setRequest] = useState<(ConfirmRequest & { resolve(ok: boolean): void }) | null>(null);
  const [pending, setPending] = useState(false);

  async function confirmThen(next: ConfirmRequest, work: () => Promise<void>): Promise<boolean> {
    const ok = await new Promise<boolean>((resolve) => setRequest({ ...next, resolve }));
    if (!ok) return false;
    setPending(true);
    try {
      await work();
      return true;
    } finally {
      setPending(false);
      setRequest(null);
    }
  }

  const dialog = request ? (
    <ConfirmDialog
      title={request.title}
      confirmLabel={request.confirmLabel}
      pendingLabel={request.pendingLabel}
      tone={request.tone}
      pending={pending}
      onConfirm={() => request.resolve(true)}
      onCancel={() => {
        request.resolve(false);
        setRequest(null);
      }}
    >
      {request.body}
    </ConfirmDialog>
  ) : null;

  return { confirmThen, dialog };
}
