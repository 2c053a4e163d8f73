import { useEffect, useEffectEvent, useState } from 'react';
import type { HostStatusDto, InviteCodeDto } from '../../../server/protocol/host-info.js';
import { signupLink } from '../../shared/address-links.js';
import { describeError } from '../../shared/api-client.js';
import { CopyButton } from '../../shared/copy-button.js';
import { useSession } from '../../shared/session.js';
import { Alert } from '../../shared/ui.js';

/** What the first sign-up link allows: enough for a group of friends, not a code that works forever. */
const FIRST_LINK = { label: 'First sign-up link', maxUses: 25, expiresInSeconds: 7 * 86_400 } as const;

/**
 * The owner's one next step, right after the owner account was made: give people the host's address and a
 * sign-up link, which opens this app's sign-up form with an invite code filled in.
 */
export function FirstRunCard({ onDone, onCodeMade }: { onDone(): void; onCodeMade(): void }) {
  const { authedCall } = useSession();
  const [status, setStatus] = useState<HostStatusDto | null>(null);
  const [links, setLinks] = useState<string[] | null>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  const fetchStatus = useEffectEvent((isLive: () => boolean) => {
    // Without it the card still offers this page's own address.
    authedCall<HostStatusDto>('hostStatus').then(
      (s) => isLive() && setStatus(s),
      () => undefined,
    );
  });
  useEffect(() => {
    let live = true;
    fetchStatus(() => live);
    return () => {
      live = false;
    };
  }, []);

  // Other machines use the LAN addresses; bound to this computer only, this page's own address is all there is.
  const addresses = status && status.lanUrls.length > 0 ? status.lanUrls : [window.location.origin];

  async function makeLink(): Promise<void> {
    setBusy(true);
    setProblem(null);
    try {
      const { code } = await authedCall<{ code: string; InviteCode: InviteCodeDto }>(
        'createInviteCode',
        FIRST_LINK,
      );
      setLinks(addresses.map((address) => signupLink(address, code)));
      onCodeMade();
    } catch (error) {
      setProblem(`Could not make the link: ${describeError(error)}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card first-run" aria-labelledby="first-run-title" data-testid="first-run">
      <p className="eyebrow">Next step</p>
      <h2 id="first-run-title" className="card-title">
        Invite your community
      </h2>
      <p>
        This host is ready and you are its owner. Send people its address, or better, a sign-up link: it opens
        this app&apos;s sign-up form with an invite code already filled in.
      </p>
      {status?.localOnly ? (
        <Alert tone="warning" title="Only this computer can connect for now">
          Other machines can use the address and the link once the host is open to your network: the Server
          card below says how.
        </Alert>
      ) : null}
      {links === null ? (
        <>
          <ul className="address-list" aria-label="Addresses to share" data-testid="first-run-addresses">
            {addresses.map((url) => (
              <li key={url} className="address-row">
                <span className="mono breakable">{url}</span>
                <CopyButton text={url} label="Copy" what={url} />
              </li>
            ))}
          </ul>
          <div className="button-row">
            <button type="button" className="button primary" disabled={busy} onClick={() => void makeLink()}>
              {busy ? 'Making the link…' : 'Make a sign-up link'}
            </button>
          </div>
          <p className="muted small">
            It works for {FIRST_LINK.maxUses} sign-ups over 7 days. Revoke it, or make other codes, under
            Invite codes below.
            {status && !status.requireInviteCode
              ? ' Sign-ups are open to anyone for now: to let in only people with a code, turn on “New accounts need an invite code” there.'
              : ''}
          </p>
        </>
      ) : (
        <>
          <p className="muted small">
            Send this link (the code in it works for {FIRST_LINK.maxUses} sign-ups over 7 days; the host shows
            it only now):
          </p>
          <ul className="address-list" aria-label="Sign-up links" data-testid="signup-links">
            {links.map((link) => (
              <li key={link} className="address-row">
                <span className="mono breakable" data-testid="signup-link">
                  {link}
                </span>
                <CopyButton text={link} label="Copy link" what={link} />
              </li>
            ))}
          </ul>
        </>
      )}
      {problem ? <Alert tone="error">{problem}</Alert> : null}
      <p>
        <button type="button" className="link-button" onClick={onDone}>
          {links === null ? 'Skip for now' : 'Done'}
        </button>
      </p>
    </section>
  );
}
