import { useEffect, useEffectEvent, useId, useState } from 'react';
import {
  webhookUrlProblem,
  type WebhookDeliveryDto,
  type WebhookSettingsDto,
} from '../../../server/protocol/webhooks.js';
import { describeError } from '../../shared/api-client.js';
import { useConfirm } from '../../shared/confirm-dialog.js';
import { useForm } from '../../shared/form.js';
import { PastTime } from '../../shared/past-time.js';
import { useSession } from '../../shared/session.js';
import { Alert, FormStatus, SubmitButton, TextField } from '../../shared/ui.js';

/**
 * The card's state: the settings as the host shows them (URL masked), a test in flight, the last problem, and a
 * short notice ("Saved.") until the next thing done here.
 */
function useWebhookSettings() {
  const { authedCall } = useSession();
  const { confirmThen, dialog } = useConfirm();
  const [settings, setSettings] = useState<WebhookSettingsDto | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [testing, setTesting] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);

  const fetchSettings = useEffectEvent((isLive: () => boolean) => {
    authedCall<{ Webhook: WebhookSettingsDto }>('webhookSettings')
      .then((answer) => {
        if (isLive()) setSettings(answer.Webhook);
      })
      .catch((e: unknown) => {
        if (isLive()) setProblem(describeError(e));
      });
  });
  useEffect(() => {
    let live = true;
    fetchSettings(() => live);
    return () => {
      live = false;
    };
  }, []);

  function sendTest(): void {
    setProblem(null);
    setNotice(null);
    setTesting(true);
    authedCall<{ Webhook: WebhookSettingsDto }>('testWebhook')
      .then((answer) => setSettings(answer.Webhook))
      .catch((e: unknown) => setProblem(describeError(e)))
      .finally(() => setTesting(false));
  }

  function remove(): void {
    setProblem(null);
    setNotice(null);
    confirmThen(
      {
        title: 'Remove the webhook URL?',
        body: 'Nothing more is sent to that channel. To send again, paste a webhook URL anew.',
        confirmLabel: 'Remove',
        pendingLabel: 'Removing…',
      },
      async () => {
        const answer = await authedCall<{ Webhook: WebhookSettingsDto }>('webhookSettings', { url: '' });
        setSettings(answer.Webhook);
        setNotice('Removed: nothing more is sent.');
      },
    ).catch((e: unknown) => setProblem(describeError(e)));
  }

  function saved(next: WebhookSettingsDto): void {
    setSettings(next);
    setNotice('Saved.');
  }

  return { settings, problem, testing, notice, setNotice, sendTest, remove, saved, dialog };
}

/**
 * Outgoing notifications (issue 28): the webhook URL (shown masked once saved: anyone holding it can post to the
 * channel), which events it gets, a test message, and how the last message went, so the owner sees it works.
 */
export function WebhookCard() {
  const titleId = useId();
  const { settings, problem, testing, notice, setNotice, sendTest, remove, saved, dialog } =
    useWebhookSettings();
  return (
    <section className="card" aria-labelledby={titleId} data-testid="webhook-card">
      <div className="card-heading spread">
        <h2 id={titleId} className="card-title">
          Webhook notifications
        </h2>
        {settings ? (
          <span className={settings.configured ? 'pill on' : 'pill'} data-testid="webhook-state">
            {settings.configured ? 'On' : 'Off'}
          </span>
        ) : null}
      </div>
      <p className="muted small">
        Tells a Discord channel (or anything that takes Discord&apos;s webhook messages) about moderation
        actions and new accounts. Messages go out in the background and are tried again if the channel cannot
        be reached; an action never waits for them.
      </p>
      {settings ? (
        <>
          {settings.maskedUrl ? (
            <div className="address-row">
              <span className="mono breakable" data-testid="webhook-masked-url">
                {settings.maskedUrl}
              </span>
              <button type="button" className="button ghost small" onClick={remove}>
                Remove URL
              </button>
            </div>
          ) : null}
          <WebhookForm
            key={JSON.stringify(settings.events) + String(settings.configured)}
            settings={settings}
            onSaved={saved}
            onEdit={() => setNotice(null)}
            testing={testing}
            onTest={sendTest}
          />
          {notice ? (
            <Alert tone="success">
              <span data-testid="webhook-notice">{notice}</span>
            </Alert>
          ) : null}
          <LastDelivery delivery={settings.lastDelivery} />
        </>
      ) : !problem ? (
        <p className="muted small">Loading…</p>
      ) : null}
      {problem ? <Alert tone="error">{problem}</Alert> : null}
      {dialog}
    </section>
  );
}

/** The URL field (empty: keep the saved one), the two event choices, Save and Send test. */
function WebhookForm({
  settings,
  onSaved,
  onEdit,
  testing,
  onTest,
}: {
  settings: WebhookSettingsDto;
  onSaved(settings: WebhookSettingsDto): void;
  /** Something in the form changed: a "Saved." shown is no longer true. */
  onEdit(): void;
  testing: boolean;
  onTest(): void;
}) {
  const { authedCall } = useSession();
  const [moderation, setModeration] = useState(settings.events.moderation);
  const [signups, setSignups] = useState(settings.events.signups);
  const form = useForm({ url: '' }, (v) => {
    const url = v.url.trim();
    const problem = url === '' ? null : webhookUrlProblem(url);
    return { url: problem ? `The URL ${problem}.` : undefined };
  });

  return (
    <form
      className="form"
      noValidate
      aria-label="Webhook settings"
      onSubmit={form.handleSubmit(async (v) => {
        const url = v.url.trim();
        const answer = await authedCall<{ Webhook: WebhookSettingsDto }>('webhookSettings', {
          ...(url === '' ? {} : { url }),
          moderation,
          signups,
        });
        form.reset();
        onSaved(answer.Webhook);
      })}
    >
      <TextField
        label={settings.configured ? 'New webhook URL' : 'Webhook URL'}
        name="url"
        value={form.values.url}
        onValueChange={(v) => {
          onEdit();
          form.setValue('url', v);
        }}
        error={form.errors.url}
        placeholder="https://discord.com/api/webhooks/…"
        hint={
          settings.configured
            ? 'Leave empty to keep the saved URL. Anyone with the URL can post to the channel, so it is not shown again.'
            : 'In Discord: the channel’s settings → Integrations → Webhooks → New Webhook → Copy Webhook URL.'
        }
        className="mono"
        spellCheck={false}
        autoComplete="off"
      />
      <EventChoices
        moderation={moderation}
        signups={signups}
        onChange={(next) => {
          onEdit();
          setModeration(next.moderation);
          setSignups(next.signups);
        }}
      />
      <div className="button-row">
        <SubmitButton pending={form.pending} pendingLabel="Saving…">
          Save
        </SubmitButton>
        <button
          type="button"
          className="button secondary"
          disabled={!settings.configured || testing}
          aria-busy={testing}
          onClick={onTest}
        >
          {testing ? 'Sending…' : 'Send test'}
        </button>
      </div>
      <FormStatus message={form.formError} />
    </form>
  );
}

/** Which events get a message. */
function EventChoices({
  moderation,
  signups,
  onChange,
}: {
  moderation: boolean;
  signups: boolean;
  onChange(next: { moderation: boolean; signups: boolean }): void;
}) {
  const messageId = useId();
  return (
    <fieldset className="field" aria-describedby={messageId}>
      <legend>Send a message for</legend>
      <label className="check">
        <input
          type="checkbox"
          checked={moderation}
          onChange={(e) => onChange({ moderation: e.target.checked, signups })}
        />
        <span>
          Moderation actions{' '}
          <span className="muted">(warnings, bans, ranks, badges and removed content)</span>
        </span>
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={signups}
          onChange={(e) => onChange({ moderation, signups: e.target.checked })}
        />
        <span>New accounts</span>
      </label>
      <p id={messageId} className="field-message">
        Names and reasons are sent as plain text: nothing in a message can mention @everyone.
      </p>
    </fieldset>
  );
}

/** "Test message · 2 minutes ago · HTTP 204", as a success or a warning. */
function LastDelivery({ delivery }: { delivery: WebhookDeliveryDto | null }) {
  if (!delivery) {
    return (
      <p className="muted small" data-testid="webhook-last-delivery" data-state="none">
        Nothing sent to this webhook yet.
      </p>
    );
  }
  const what =
    delivery.what === 'test'
      ? 'Test message'
      : delivery.what.startsWith('sign-up')
        ? 'New account'
        : `Moderation action (${delivery.what.split(' ')[0] ?? ''})`;
  return (
    <div data-testid="webhook-last-delivery" data-state={delivery.ok ? 'delivered' : 'failed'}>
      <Alert
        tone={delivery.ok ? 'success' : 'warning'}
        title={delivery.ok ? 'Last message delivered' : 'Last message not delivered'}
      >
        <p>
          {what} · <PastTime unixSeconds={delivery.at} /> · {delivery.detail}
          {delivery.attempts > 1 ? ` (try ${delivery.attempts})` : ''}
        </p>
      </Alert>
    </div>
  );
}
