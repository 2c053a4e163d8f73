// First: no schema may be built before zod is told not to compile with `new Function` (see the module).
import './zod-jitless.js';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { takeLinkFromAddress } from './shared/address-links.js';
import { startTheme } from './shared/theme.js';
import './styles.css';

// Outside React: StrictMode runs state initialisers twice, and the hash must be read before it is cleared.
const initialLink = takeLinkFromAddress();

startTheme();

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App initialLink={initialLink} />
  </StrictMode>,
);
