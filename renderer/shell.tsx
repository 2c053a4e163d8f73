import { useState } from 'react';
import { Rank } from '../server/protocol/enums.js';
import { AccountMenu } from './features/account/account-menu.js';
import { AccountPage } from './features/account/account-page.js';
import { useSession } from './shared/session.js';
import { BrandMark } from './shared/ui.js';

type SectionId = 'account' | 'uploads' | 'moderation' | 'invites' | 'host';

interface Section {
  id: SectionId;
  label: string;
  /** What the section will do, for the honest "coming soon" placeholder. */
  plan?: string;
  minRank?: Rank;
}

const SECTIONS: Section[] = [
  { id: 'account', label: 'Account' },
  {
    id: 'uploads',
    label: 'Uploads',
    plan: 'Upload avatars and worlds by drag and drop, follow progress, and manage your builds for each platform.',
  },
  {
    id: 'moderation',
    label: 'Moderation',
    plan: 'Find a user by name or id, see their rank, badges, warnings and bans, act on them, and read the log.',
    minRank: Rank.Moderator,
  },
  {
    id: 'invites',
    label: 'Invites',
    plan: 'See invite requests arrive live, with who sent them and when, and answer or dismiss them.',
  },
  {
    id: 'host',
    label: 'Host',
    plan: 'See the address to share on your network and which clients are connected right now.',
  },
];

/** The signed-in frame: header with navigation and the account menu, and the chosen section below. */
export function Shell() {
  const { user } = useSession();
  const [active, setActive] = useState<SectionId>('account');
  const visible = SECTIONS.filter((s) => s.minRank === undefined || user.Rank >= s.minRank);
  const section = visible.find((s) => s.id === active) ?? visible[0];

  return (
    <div className="shell">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-brand">
          <BrandMark size={28} />
          <span className="brand-name">Hypernex Companion</span>
        </div>
        <nav className="topnav" aria-label="Sections">
          {visible.map((s) => (
            <button
              key={s.id}
              type="button"
              className="topnav-item"
              aria-current={s.id === section?.id ? 'page' : undefined}
              onClick={() => setActive(s.id)}
            >
              {s.label}
              {s.plan ? (
                <>
                  <span className="soon-dot" aria-hidden="true" />
                  <span className="visually-hidden">(coming soon)</span>
                </>
              ) : null}
            </button>
          ))}
        </nav>
        <AccountMenu />
      </header>
      <main id="main" className="content" tabIndex={-1}>
        {section?.plan ? <ComingSoon title={section.label} plan={section.plan} /> : <AccountPage />}
      </main>
    </div>
  );
}

function ComingSoon({ title, plan }: { title: string; plan: string }) {
  return (
    <div className="page">
      <header className="page-header">
        <h1>
          {title} <span className="pill soon">Coming soon</span>
        </h1>
      </header>
      <section className="card placeholder">
        <p>This part of the companion is not built yet.</p>
        <p className="muted">
          When it is, you will be able to: {plan.charAt(0).toLowerCase() + plan.slice(1)}
        </p>
      </section>
    </div>
  );
}
