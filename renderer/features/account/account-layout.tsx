import type { ReactNode } from 'react';
import { ThemeToggle } from '../../shared/theme-toggle.js';
import { BrandMark } from '../../shared/ui.js';

/** The centred card every signed-out screen (sign in, setup, ban) sits in. */
export function AccountLayout({ children, wide = false }: { children: ReactNode; wide?: boolean }) {
  return (
    <main className="auth-page">
      <div className={wide ? 'auth-card wide' : 'auth-card'}>
        <header className="auth-brand">
          <BrandMark size={36} />
          <div>
            <p className="brand-name">Hypernex Companion</p>
            <p className="brand-host">{window.location.host}</p>
          </div>
          <ThemeToggle />
        </header>
        {children}
      </div>
    </main>
  );
}
