import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { takeSetupSecretFromHash } from './setup-link.js';
import { startTheme } from './shared/theme.js';
import './styles.css';

// Outside React: StrictMode runs state initialisers twice, and the hash must be read before it is cleared.
const linkSecret = takeSetupSecretFromHash();

startTheme();

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App linkSecret={linkSecret} />
  </StrictMode>,
);
