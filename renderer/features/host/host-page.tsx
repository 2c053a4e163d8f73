import { useEffect, useId, useState, type ReactNode } from 'react';
import { Rank } from '../../../server/protocol/enums.js';
import type { HostBridge, HostState } from '../../../server/protocol/host-bridge.js';
import { useConfirm } from '../../shared/confirm-dialog.js';
import { FormProblem, useForm } from '../../shared/form.js';
import { hostBridge } from '../../shared/host-bridge.js';
import { replaceRoute } from '../../shared/route.js';
import { useSession } from '../../shared/session.js';
import { Alert, FormStatus, Spinner, SubmitButton, TextField } from '../../shared/ui.js';
import {
  ALL_INTERFACES,
  bindAddressProblem,
  bridgeErrorText,
  dataDirProblem,
  LOOPBACK,
  portProblem,
  portWarning,
  settingsPatch,
} from './host-model.js';
import { ClientBuildsCard } from './client-builds-card.js';
import { FirstRunCard } from './first-run-card.js';
import { WebhookCard } from './webhook-card.js';
import {
  ConnectedUserList,
  GameServerTokensCard,
  HostStatusCard,
  InviteCodesCard,
  LanAddressList,
} from './host-admin.js';

/**
 * The host's screen. The desktop window adds what only it can do (start, stop, bind address, port, data folder);
 * the owner and admins get the administration cards in any window (issue 18): in a browser the host status
 * comes from the API instead of the desktop bridge.
 */
export function HostPage({ firstRun = false }: { firstRun?: boolean }) {
  const bridge = hostBridge();
  const { user } = useSession();
  const admin = user.Rank >= Rank.Admin;
  // A code made by the first-run card shows in the codes list at once.
  const [codesRound, setCodesRound] = useState(0);
  const next =
    firstRun && admin ? (
      <FirstRunCard onDone={() => replaceRoute('host')} onCodeMade={() => setCodesRound((n) => n + 1)} />
    ) : null;
  const cards = admin ? (
    <>
      <InviteCodesCard key={codesRound} />
      <GameServerTokensCard />
      <ClientBuildsCard />
      <WebhookCard />
    </>
  ) : null;
  if (!bridge) {
    return (
      <div className="page">
        <header className="page-header">
          <h1>Host</h1>
          <p className="muted">
            The server your community uses: who can reach it, who is connected, and who may join.
          </p>
        </header>
        {next}
        {admin ? <HostStatusCard /> : null}
        {cards}
      </div>
    );
  }
  return (
    <HostControls bridge={bridge} next={next}>
      {cards}
    </HostControls>
  );
}

function HostControls({
  bridge,
  next,
  children,
}: {
  bridge: HostBridge;
  /** The first-run card, first on the page. */
  next?: ReactNode;
  children?: ReactNode;
}) {
  const [state, setState] = useState<HostState | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'start' | 'stop' | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const { confirmThen, dialog } = useConfirm();

  useEffect(() => {
    let live = true;
    bridge
      .getState()
      .then((s) => {
        if (live) setState(s);
      })
      .catch((error: unknown) => {
        if (live) setLoadError(bridgeErrorText(error));
      });
    const unsubscribe = bridge.onStateChanged((s) => setState(s));
    return () => {
      live = false;
      unsubscribe();
    };
  }, [bridge]);

  async function start(): Promise<void> {
    setBusy('start');
    setActionError(null);
    try {
      setState(await bridge.start());
    } catch (error) {
      setActionError(bridgeErrorText(error));
    } finally {
      setBusy(null);
    }
  }

  function stop(): void {
    if (!state) return;
    const users = state.clients.users.length;
    setActionError(null);
    confirmThen(
      {
        title: 'Stop the host?',
        body: (
          <>
            <p className="form-intro">
              {users === 0
                ? 'Nobody else is connected right now.'
                : `${users} connected ${users === 1 ? 'user is' : 'users are'} disconnected.`}{' '}
              Game clients and browsers cannot reach the host until you start it again.
            </p>
            <p className="muted small">
              This window keeps these controls; its other screens wait for the host.
            </p>
          </>
        ),
        confirmLabel: 'Stop the host',
        pendingLabel: 'Stopping…',
      },
      async () => {
        setBusy('stop');
        try {
          setState(await bridge.stop());
        } finally {
          setBusy(null);
        }
      },
    ).catch((error: unknown) => setActionError(bridgeErrorText(error)));
  }

  if (!state) {
    return (
      <div className="page">
        {loadError ? (
          <Alert tone="error">Could not read the host state: {loadError}</Alert>
        ) : (
          <Spinner label="Reading the host state…" />
        )}
      </div>
    );
  }

  const { clients } = state;

  return (
    <div className="page">
      <header className="page-header with-aside">
        <div>
          <h1>Host</h1>
          <p className="muted">
            The server this computer runs for your community: who can reach it, and how.
          </p>
        </div>
      </header>
      {next}

      <section className="card" aria-labelledby="host-state-title">
        <div className="card-heading spread">
          <div className="card-heading">
            <h2 id="host-state-title" className="card-title">
              Server
            </h2>
            <span className={state.running ? 'pill on' : 'pill'} data-testid="host-running">
              {state.running ? 'Running' : 'Stopped'}
            </span>
          </div>
          <div className="button-row">
            {state.running ? (
              <button
                type="button"
                className="button small secondary"
                disabled={busy !== null}
                onClick={stop}
              >
                {busy === 'stop' ? 'Stopping…' : 'Stop'}
              </button>
            ) : (
              <button
                type="button"
                className="button small primary"
                disabled={busy !== null}
                onClick={() => void start()}
              >
                {busy === 'start' ? 'Starting…' : 'Start'}
              </button>
            )}
          </div>
        </div>
        {state.error ? (
          <Alert tone="error" title="The host could not start">
            <span data-testid="host-error">{state.error}</span>
          </Alert>
        ) : null}
        {actionError ? <Alert tone="error">{actionError}</Alert> : null}
        <dl className="facts columns">
          <div>
            <dt>On this computer</dt>
            <dd className="mono breakable">{state.url ?? 'Not running'}</dd>
          </div>
          <div>
            <dt>Listening on</dt>
            <dd className="mono">
              {state.settings.host}:{state.settings.port === 0 ? 'any free port' : state.settings.port}
            </dd>
          </div>
          <div className="wide-fact">
            <dt>Data folder</dt>
            <dd className="data-folder">
              <span className="mono breakable" data-testid="host-data-dir">
                {state.settings.dataDir}
              </span>
              <button
                type="button"
                className="button small ghost"
                onClick={() => {
                  setActionError(null);
                  bridge.openDataFolder().catch((error: unknown) => setActionError(bridgeErrorText(error)));
                }}
              >
                Open folder
              </button>
            </dd>
          </div>
        </dl>
      </section>

      <section className="card" aria-labelledby="share-title">
        <h2 id="share-title" className="card-title">
          Addresses to share
        </h2>
        {!state.running ? (
          <p className="muted">Start the host to get addresses others can use.</p>
        ) : state.lanUrls.length === 0 ? (
          <Alert tone="info" title="Only this computer can connect">
            The host listens on {state.settings.host}, so other machines cannot reach it. To let your local
            network in, set the bind address below to “Local network” and save.
          </Alert>
        ) : (
          <LanAddressList urls={state.lanUrls} />
        )}
      </section>

      <section className="card" aria-labelledby="clients-title">
        <div className="card-heading">
          <h2 id="clients-title" className="card-title">
            Connected clients
          </h2>
          <span className="pill" data-testid="host-connections">
            {clients.connections} {clients.connections === 1 ? 'connection' : 'connections'}
          </span>
        </div>
        {clients.users.length === 0 ? (
          <p className="muted">
            {clients.connections === 0
              ? 'Nobody is connected right now.'
              : 'Nobody has signed in on the open connections yet.'}
          </p>
        ) : (
          <ConnectedUserList users={clients.users} />
        )}
        {clients.connections > clients.users.reduce((n, u) => n + u.sockets, 0) ? (
          <p className="muted small">
            {clients.connections - clients.users.reduce((n, u) => n + u.sockets, 0)} more not signed in (yet).
          </p>
        ) : null}
      </section>

      {/* Keyed by the saved settings: a change from elsewhere (main's "use a free port") refills the form. */}
      <SettingsCard
        key={JSON.stringify(state.settings)}
        state={state}
        bridge={bridge}
        onSaved={(next, message) => {
          setState(next);
          setSaved(message);
        }}
        saved={saved}
        clearSaved={() => setSaved(null)}
        confirmThen={confirmThen}
      />
      {children}
      {dialog}
    </div>
  );
}

type BindChoice = 'loopback' | 'lan' | 'custom';

function choiceOf(host: string): BindChoice {
  return host === LOOPBACK ? 'loopback' : host === ALL_INTERFACES ? 'lan' : 'custom';
}

function SettingsCard({
  state,
  bridge,
  onSaved,
  saved,
  clearSaved,
  confirmThen,
}: {
  state: HostState;
  bridge: HostBridge;
  onSaved(state: HostState, message: string): void;
  saved: string | null;
  clearSaved(): void;
  confirmThen: ReturnType<typeof useConfirm>['confirmThen'];
}) {
  const current = state.settings;
  const [choice, setChoice] = useState<BindChoice>(choiceOf(current.host));
  const groupId = useId();
  const form = useForm({ host: current.host, port: String(current.port), dataDir: current.dataDir }, (v) => ({
    host: bindAddressProblem(v.host),
    port: portProblem(v.port),
    dataDir: dataDirProblem(v.dataDir),
  }));
  const patch = settingsPatch(current, form.values);
  const changed = Object.keys(patch).length > 0;

  return (
    <section className="card" aria-labelledby="settings-title">
      <h2 id="settings-title" className="card-title">
        Settings
      </h2>
      <form
        className="form host-settings"
        noValidate
        aria-label="Host settings"
        onSubmit={form.handleSubmit(async (v) => {
          clearSaved();
          const next = settingsPatch(current, v);
          if (Object.keys(next).length === 0) {
            onSaved(state, 'Nothing changed.');
            return;
          }
          const save = async (): Promise<void> => {
            let after: HostState;
            try {
              after = await bridge.updateSettings(next);
            } catch (error) {
              const text = bridgeErrorText(error);
              const field = /^port/.test(text)
                ? 'port'
                : /^host/.test(text)
                  ? 'host'
                  : /^dataDir/.test(text)
                    ? 'dataDir'
                    : null;
              throw new FormProblem(text, field ? { [field]: text } : {});
            }
            onSaved(
              after,
              after.error
                ? 'Saved, but the host did not start again: see the error above.'
                : state.running
                  ? 'Saved. The host restarted with the new settings.'
                  : 'Saved.',
            );
          };
          if (!state.running) {
            await save();
            return;
          }
          await confirmThen(
            {
              title: 'Save and restart the host?',
              body: (
                <p className="form-intro">
                  The host restarts
                  {patch.port !== undefined || patch.host !== undefined ? ' on its new address' : ''}.
                  Everyone connected is disconnected for a moment; the companion and game clients reconnect by
                  themselves{patch.port !== undefined ? ', but people must use the new port' : ''}.
                </p>
              ),
              confirmLabel: 'Save and restart',
              pendingLabel: 'Restarting…',
              tone: 'primary',
            },
            save,
          );
        })}
      >
        <fieldset className="field choice-field" aria-describedby={`${groupId}-bind`}>
          <legend>Bind address</legend>
          <div className="choices">
            <label className="choice">
              <input
                type="radio"
                name="bind"
                checked={choice === 'loopback'}
                onChange={() => {
                  setChoice('loopback');
                  form.setValue('host', LOOPBACK);
                }}
              />
              <span className="choice-text">
                This computer only <span className="choice-detail mono">{LOOPBACK}</span>
              </span>
            </label>
            <label className="choice">
              <input
                type="radio"
                name="bind"
                checked={choice === 'lan'}
                onChange={() => {
                  setChoice('lan');
                  form.setValue('host', ALL_INTERFACES);
                }}
              />
              <span className="choice-text">
                Local network <span className="choice-detail mono">{ALL_INTERFACES}</span>
              </span>
            </label>
            <label className="choice">
              <input
                type="radio"
                name="bind"
                checked={choice === 'custom'}
                onChange={() => setChoice('custom')}
              />
              <span className="choice-text">
                One address <span className="choice-detail">of this computer</span>
              </span>
            </label>
          </div>
          <p id={`${groupId}-bind`} className="field-message">
            {choice === 'loopback'
              ? 'Only programs on this computer can connect.'
              : choice === 'lan'
                ? 'Other machines on your network can connect (your firewall may ask).'
                : 'Listen on one network address of this computer only.'}
          </p>
        </fieldset>
        {choice === 'custom' ? (
          <TextField
            label="Address to bind"
            name="host"
            value={form.values.host}
            onValueChange={(v) => form.setValue('host', v)}
            error={form.errors.host}
            hint="An IP address of this computer, e.g. 192.168.1.20"
            className="mono"
            spellCheck={false}
            autoComplete="off"
          />
        ) : form.errors.host ? (
          <p className="field-message is-error">{form.errors.host}</p>
        ) : null}
        <TextField
          label="Port"
          name="port"
          value={form.values.port}
          onValueChange={(v) => form.setValue('port', v)}
          error={form.errors.port}
          hint={portWarning(form.values.port) ?? 'The same port serves the API, the socket and this app.'}
          inputMode="numeric"
          className="mono port-input"
          autoComplete="off"
        />
        <TextField
          label="Data folder"
          name="dataDir"
          value={form.values.dataDir}
          onValueChange={(v) => form.setValue('dataDir', v)}
          error={form.errors.dataDir}
          hint="Accounts, uploads and the moderation log live here. A new folder starts a new, empty host."
          className="mono"
          spellCheck={false}
          autoComplete="off"
        />
        <div className="button-row">
          <SubmitButton pending={form.pending} pendingLabel="Saving…">
            {state.running && changed ? 'Save and restart…' : 'Save'}
          </SubmitButton>
        </div>
        <FormStatus message={form.formError} />
        {saved ? (
          <Alert tone="success">
            <span data-testid="host-saved">{saved}</span>
          </Alert>
        ) : null}
      </form>
    </section>
  );
}
