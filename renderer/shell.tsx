import { useEffect, type ReactNode } from 'react';
import { Rank } from '../server/protocol/enums.js';
import { AccountMenu } from './features/account/account-menu.js';
import { AccountPage } from './features/account/account-page.js';
import { DownloadsPage } from './features/builds/downloads-page.js';
import { FriendsPage } from './features/friends/friends-page.js';
import { FriendsNavBadge, FriendsProvider } from './features/friends/friends-store.js';
import { HostPage } from './features/host/host-page.js';
import { InvitesPage } from './features/invites/invites-page.js';
import { InvitesNavBadge, InvitesProvider } from './features/invites/invites-store.js';
import { ModerationPage } from './features/moderation/moderation-page.js';
import { UploadsFollowConnection } from './features/uploads/hooks.js';
import { UploadsPage } from './features/uploads/uploads-page.js';
import { hostBridge } from './shared/host-bridge.js';
import { NavigationContext, type SectionName } from './shared/navigation.js';
import { FIRST_RUN_PARAM, navigate, replaceRoute, routeHash, useRoute } from './shared/route.js';
import { useSession } from './shared/session.js';
import { HostDownBanner, ShellConnection } from './shared/connection-state.js';
import { useStickyHeight } from './shared/sticky-height.js';
import { ThemeToggle } from './shared/theme-toggle.js';
import { BrandMark } from './shared/ui.js';

type SectionId = SectionName;

interface Section {
  id: SectionId;
  label: string;
  render: (param: string | null) => ReactNode;
  minRank?: Rank;
  /** Only in the desktop window, where the preload exposes the host controls. */
  desktopOnly?: boolean;
  /** With desktopOnly: shown outside the desktop window too, to users of at least this rank. */
  orMinRank?: Rank;
  /** Beside the label, e.g. a count of new items. */
  badge?: ReactNode;
}

const SECTIONS: Section[] = [
  { id: 'account', label: 'Account', render: () => <AccountPage /> },
  { id: 'uploads', label: 'Uploads', render: () => <UploadsPage /> },
  {
    id: 'moderation',
    label: 'Moderation',
    render: (param) => <ModerationPage userId={param} />,
    minRank: Rank.Moderator,
  },
  { id: 'invites', label: 'Invites', render: () => <InvitesPage />, badge: <InvitesNavBadge /> },
  { id: 'friends', label: 'Friends', render: () => <FriendsPage />, badge: <FriendsNavBadge /> },
  { id: 'downloads', label: 'Downloads', render: () => <DownloadsPage /> },
  // Desktop window: the host controls; elsewhere admins still publish client builds there.
  {
    id: 'host',
    label: 'Host',
    render: (param) => <HostPage firstRun={param === FIRST_RUN_PARAM} />,
    desktopOnly: true,
    orMinRank: Rank.Admin,
  },
];

/** The signed-in frame: header with navigation and the account menu, and the chosen section below. */
export function Shell() {
  const { user } = useSession();
  // The screen is in the address (#/friends): reload keeps it, Back and Forward work.
  const route = useRoute();
  const stackRef = useStickyHeight();
  const setActive = (section: SectionId): void => navigate(section);
  // A click on a desktop notification brings the window up on its screen.
  useEffect(() => {
    const bridge = hostBridge();
    if (!bridge) return;
    return bridge.onNavigate((section) => {
      const known = SECTIONS.find((s) => s.id === section);
      if (known) navigate(known.id);
    });
  }, []);
  const visible = SECTIONS.filter(
    (s) =>
      (s.minRank === undefined || user.Rank >= s.minRank) &&
      (!s.desktopOnly ||
        hostBridge() !== undefined ||
        (s.orMinRank !== undefined && user.Rank >= s.orMinRank)),
  );
  const section = visible.find((s) => s.id === route.section) ?? visible[0];
  const param = section?.id === route.section ? route.param : null;
  // An address naming no screen (or one this user cannot see) shows the first one, and says so in the address.
  useEffect(() => {
    if (section && section.id !== route.section) replaceRoute(section.id);
  }, [section, route.section]);
  useEffect(() => {
    document.title = section ? `${section.label} · Hypernex Companion` : 'Hypernex Companion';
  }, [section]);

  return (
    <NavigationContext value={setActive}>
      <InvitesProvider>
        <FriendsProvider>
          <div className="shell">
            <a href="#main" className="skip-link">
              Skip to content
            </a>
            {/* The top bar and the host-down banner stay on screen together, however far the page is scrolled. */}
            <div className="topbar-stack" ref={stackRef}>
              <header className="topbar">
                <div className="topbar-brand">
                  <BrandMark size={28} />
                  <span className="brand-name">Hypernex Companion</span>
                </div>
                <nav className="topnav" aria-label="Sections">
                  {visible.map((s) => (
                    <a
                      key={s.id}
                      href={routeHash(s.id)}
                      className="topnav-item"
                      aria-current={s.id === section?.id ? 'page' : undefined}
                    >
                      {s.label}
                      {s.badge}
                    </a>
                  ))}
                </nav>
                <ShellConnection />
                <ThemeToggle />
                <AccountMenu />
              </header>
              <HostDownBanner />
            </div>
            <UploadsFollowConnection />
            <main id="main" className="content" tabIndex={-1}>
              {section?.render(param)}
            </main>
          </div>
        </FriendsProvider>
      </InvitesProvider>
    </NavigationContext>
  );
}
