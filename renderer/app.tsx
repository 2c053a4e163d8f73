import { useCallback, useEffect, useRef, useState } from 'react';
import { ErrorCode } from '../server/protocol/errors.js';
import type { BanStatusDto, PrivateUserDto, WarnStatusDto } from '../server/protocol/types.js';
import type { SignedIn } from './features/account/account-api.js';
import { AccountLayout } from './features/account/account-layout.js';
import { AuthScreen } from './features/account/auth-screen.js';
import { BannedScreen } from './features/account/banned-screen.js';
import { OwnerSetupScreen, type SecretSource } from './features/account/owner-setup-screen.js';
import { WarnedNotice } from './features/account/warned-notice.js';
import { ApiError, call, describeError } from './shared/api-client.js';
import { watchAddressLinks, type AddressLink } from './shared/address-links.js';
import { hostBridge, hostState } from './shared/host-bridge.js';
import {
  endSession,
  forgetStoredSession,
  loadStoredSession,
  restoreSession,
  SESSION_STORAGE_KEY,
  SessionContext,
  type Session,
  type SessionValue,
} from './shared/session.js';
import { FIRST_RUN_PARAM, replaceRoute } from './shared/route.js';
import { sessionEndedNotice } from './shared/socket-client.js';
import { AccountFollowsPushes } from './shared/account-push.js';
import { SocketProvider } from './shared/socket-context.js';
import { ToastProvider, useToasts } from './shared/toast.js';
import { Spinner } from './shared/ui.js';
import { Shell } from './shell.js';

type Phase =
  | { kind: 'loading' }
  | { kind: 'unreachable'; message: string }
  | { kind: 'setup' }
  | { kind: 'signedOut'; notice: string | null }
  | { kind: 'banned'; ban: BanStatusDto; username: string }
  | { kind: 'signedIn'; session: Session; user: PrivateUserDto; warning: WarnStatusDto | null };

interface SetupInfo {
  needed: boolean;
  secret: string;
  source: SecretSource;
}

const SESSION_ENDED = sessionEndedNotice('');

const TITLES: Record<Phase['kind'], string> = {
  loading: 'Hypernex Companion',
  unreachable: 'Host unreachable · Hypernex Companion',
  setup: 'Set up · Hypernex Companion',
  signedOut: 'Sign in · Hypernex Companion',
  banned: 'Banned · Hypernex Companion',
  signedIn: 'Hypernex Companion',
};

/** A sign-up link's invite code, and which link it was (each one opened starts the form afresh). */
interface SignupLink {
  code: string;
  round: number;
}

/**
 * `initialLink`: a `#setup=` or `#signup=` link the page was opened with, already removed from the address bar.
 * Links opened later in the same page (the address changed) are followed too.
 */
export function App({ initialLink }: { initialLink: AddressLink | null }) {
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' });
  const [setup, setSetup] = useState<SetupInfo>({ needed: false, secret: '', source: null });
  const [bootCount, setBootCount] = useState(0);
  const [linkSecret, setLinkSecret] = useState(initialLink?.kind === 'setup' ? initialLink.secret : '');
  const [signup, setSignup] = useState<SignupLink | null>(
    initialLink?.kind === 'signup' ? { code: initialLink.code, round: 0 } : null,
  );
  const signedInNow = useRef(false);
  useEffect(() => {
    signedInNow.current = phase.kind === 'signedIn';
  }, [phase.kind]);

  useEffect(() => {
    let live = true;
    void boot(linkSecret).then((outcome) => {
      if (!live) return;
      setSetup(outcome.setup);
      setPhase(outcome.phase);
    });
    return () => {
      live = false;
    };
  }, [linkSecret, bootCount]);

  // A link pasted into the address bar of an open page: a setup link starts over with its secret (unless someone
  // is signed in here), a sign-up link opens the sign-up form with its code.
  useEffect(
    () =>
      watchAddressLinks((link) => {
        if (link.kind === 'signup') {
          setSignup((old) => ({ code: link.code, round: (old?.round ?? 0) + 1 }));
        } else if (!signedInNow.current) {
          setLinkSecret(link.secret);
          setBootCount((n) => n + 1);
        }
      }),
    [],
  );

  useEffect(() => {
    // Signed in, the shell names the screen in the title.
    if (phase.kind !== 'signedIn') document.title = TITLES[phase.kind];
  }, [phase.kind]);

  const signedInSession = phase.kind === 'signedIn' ? phase.session : null;

  // The desktop app notifies the signed-in user of invite and friend requests from the host process, window open
  // or not: tell it who that is (and when nobody is).
  useEffect(() => {
    const bridge = hostBridge();
    if (!bridge) return;
    const user = signedInSession
      ? { userId: signedInSession.userid, tokenContent: signedInSession.tokenContent }
      : null;
    bridge.setDesktopUser(user).catch(() => undefined);
  }, [signedInSession]);

  // Another tab signing out (or in) changes the shared localStorage; follow it rather than act on a dead token.
  useEffect(() => {
    const onStorage = (event: StorageEvent): void => {
      if (event.key !== SESSION_STORAGE_KEY && event.key !== null) return;
      if (signedInSession && event.newValue === null) {
        setPhase({ kind: 'signedOut', notice: 'You signed out in another window.' });
      } else if (!signedInSession && event.newValue !== null) {
        setBootCount((n) => n + 1);
      }
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }, [signedInSession]);

  const onSignedIn = useCallback((signedIn: SignedIn) => {
    setSetup((s) => ({ ...s, needed: false }));
    // A sign-up link's code is spent (or not wanted) once someone is signed in through the form.
    setSignup(null);
    setPhase({ kind: 'signedIn', ...signedIn });
  }, []);
  // The new owner's next step is on the Host screen: share the address and a sign-up link.
  const onOwnerCreated = useCallback(
    (signedIn: SignedIn) => {
      replaceRoute('host', FIRST_RUN_PARAM);
      onSignedIn(signedIn);
    },
    [onSignedIn],
  );
  const onBanned = useCallback((ban: BanStatusDto, username: string) => {
    setPhase({ kind: 'banned', ban, username });
  }, []);
  const toSignIn = useCallback(() => setPhase({ kind: 'signedOut', notice: null }), []);

  switch (phase.kind) {
    case 'loading':
      return (
        <main className="center-page">
          <Spinner label="Connecting to the host…" />
        </main>
      );
    case 'unreachable':
      return (
        <AccountLayout>
          <h1 className="form-title">Can&apos;t reach the host</h1>
          <p className="form-intro">{phase.message}</p>
          <button
            type="button"
            className="button primary block"
            onClick={() => {
              setPhase({ kind: 'loading' });
              setBootCount((n) => n + 1);
            }}
          >
            Try again
          </button>
        </AccountLayout>
      );
    case 'setup':
      return (
        <OwnerSetupScreen
          // A setup link opened later brings a new secret: the form starts again with it.
          key={setup.secret}
          initialSecret={setup.secret}
          secretSource={setup.source}
          onSignedIn={onOwnerCreated}
          onSkip={toSignIn}
        />
      );
    case 'signedOut':
      return (
        <AuthScreen
          key={signup?.round ?? -1}
          signupCode={signup?.code ?? null}
          notice={phase.notice}
          onSignedIn={onSignedIn}
          onBanned={onBanned}
          onOpenSetup={setup.needed ? () => setPhase({ kind: 'setup' }) : undefined}
        />
      );
    case 'banned':
      return <BannedScreen ban={phase.ban} username={phase.username} onBack={toSignIn} />;
    case 'signedIn':
      return <SignedInApp phase={phase} setPhase={setPhase} signup={signup} />;
  }
}

function SignedInApp({
  phase,
  setPhase,
  signup,
}: {
  phase: Extract<Phase, { kind: 'signedIn' }>;
  setPhase: (update: Phase | ((old: Phase) => Phase)) => void;
  /** A sign-up link opened while signed in: said in a toast, and kept for the sign-up form after signing out. */
  signup: SignupLink | null;
}) {
  const { session, user, warning } = phase;
  // While this session is being replaced (a password change ends every session, this one too), the host ending
  // it is expected and not reported.
  const replacing = useRef<string | null>(null);
  const isBeingReplaced = (): boolean => replacing.current === session.tokenContent;

  const value: SessionValue = {
    session,
    user,
    setUser(update) {
      setPhase((old) => (old.kind === 'signedIn' ? { ...old, user: update(old.user) } : old));
    },
    async authedCall<R extends object>(path: string, body: object = {}): Promise<R> {
      try {
        return await call<R>(path, { ...body, userid: session.userid, tokenContent: session.tokenContent });
      } catch (error) {
        if (error instanceof ApiError && error.code === ErrorCode.INVALID_TOKEN && !isBeingReplaced()) {
          forgetStoredSession();
          setPhase({ kind: 'signedOut', notice: SESSION_ENDED });
        }
        throw error;
      }
    },
    async signOut() {
      await endSession(session);
      setPhase({ kind: 'signedOut', notice: null });
    },
    async replaceSession(work, notice) {
      replacing.current = session.tokenContent;
      let next: Awaited<ReturnType<typeof work>>;
      try {
        next = await work();
      } catch (error) {
        replacing.current = null;
        throw error;
      }
      // The old session is over either way: continue with the new one, or sign in again.
      if (next) {
        setPhase({ kind: 'signedIn', session: next.session, user: next.user, warning: null });
      } else {
        if (loadStoredSession()?.tokenContent === session.tokenContent) forgetStoredSession();
        setPhase({ kind: 'signedOut', notice });
      }
    },
  };

  // The socket closes with "token revoked" when the host ends the session (ban, warning, expiry, sign-out
  // elsewhere); its reason says which.
  const onRevoked = (why: string): void => {
    if (isBeingReplaced()) return;
    if (loadStoredSession()?.tokenContent === session.tokenContent) forgetStoredSession();
    setPhase((old) =>
      old.kind === 'signedIn' && old.session === session
        ? { kind: 'signedOut', notice: sessionEndedNotice(why) }
        : old,
    );
  };

  return (
    <SessionContext value={value}>
      <ToastProvider>
        <SocketProvider key={session.tokenContent} session={session} onRevoked={onRevoked}>
          <AccountFollowsPushes />
          <Shell />
        </SocketProvider>
        {signup ? <SignupLinkWhileSignedIn key={signup.round} username={user.Username} /> : null}
      </ToastProvider>
      {warning ? (
        <WarnedNotice
          warning={warning}
          onClose={() => setPhase((old) => (old.kind === 'signedIn' ? { ...old, warning: null } : old))}
        />
      ) : null}
    </SessionContext>
  );
}

/** Says once that a sign-up link is for someone new, when it is opened by someone signed in. */
function SignupLinkWhileSignedIn({ username }: { username: string }) {
  const toasts = useToasts();
  useEffect(() => {
    toasts.show({
      id: 'signup-link',
      tone: 'info',
      title: 'That is a sign-up link',
      body: `It creates a new account; you are signed in as ${username}. Sign out to use it here, or send it to the person it is for.`,
    });
  }, [toasts, username]);
  return null;
}

/** Decides the first screen: a still-valid saved session wins, then owner setup if the host has none. */
async function boot(linkSecret: string): Promise<{ phase: Phase; setup: SetupInfo }> {
  const noSetup: SetupInfo = { needed: false, secret: '', source: null };
  try {
    const [{ needsOwnerSetup }, restored] = await Promise.all([
      call<{ needsOwnerSetup: boolean }>('setupStatus'),
      restoreSession(),
    ]);
    let setup = noSetup;
    if (needsOwnerSetup) {
      const desktopSecret = linkSecret ? null : ((await hostState())?.setupSecret ?? null);
      setup = linkSecret
        ? { needed: true, secret: linkSecret, source: 'link' }
        : desktopSecret
          ? { needed: true, secret: desktopSecret, source: 'desktop' }
          : { needed: true, secret: '', source: null };
    }
    if (restored.kind === 'restored') {
      return {
        phase: { kind: 'signedIn', session: restored.session, user: restored.user, warning: null },
        setup,
      };
    }
    if (needsOwnerSetup) return { phase: { kind: 'setup' }, setup };
    const notice =
      restored.kind === 'expired'
        ? 'Your saved session is no longer valid. Sign in again.'
        : linkSecret
          ? 'This host already has an owner, so the setup link is spent. Sign in instead.'
          : null;
    return { phase: { kind: 'signedOut', notice }, setup };
  } catch (error) {
    return { phase: { kind: 'unreachable', message: describeError(error) }, setup: noSetup };
  }
}
