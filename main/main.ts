// Entry of the Electron main process (package.json "main" → dist/main/main.js). It only calls the app's wiring,
// which stays importable by tests without starting anything.
import { app, dialog } from 'electron';
import { startDesktopApp } from './desktop-app.js';

startDesktopApp().catch((error: unknown) => {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`Hypernex Companion failed to start: ${detail}\n`);
  // Launched from a desktop icon there is no terminal: say it in a window too.
  dialog.showErrorBox('Hypernex Companion failed to start', error instanceof Error ? error.message : detail);
  app.exit(1);
});
