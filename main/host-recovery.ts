// What the desktop shell asks when its host is not serving (it could not start, or the page cannot reach it): try
// again, move to a free port, start on the default settings, or quit.
import { dialog, type BrowserWindow, type MessageBoxOptions } from 'electron';
import { findFreePort } from './free-port.js';
import { isPortProblem, type HostController } from './host-controller.js';
import { defaultHostSettings, HostSettingsFileError } from './host-settings-file.js';

type Choice = 'Retry' | 'Use a free port' | 'Use the default settings' | 'Quit';

/** The question for the last start's failure: what may fix it, and the words. */
function recoveryBox(failure: unknown, reason: string): { box: MessageBoxOptions; buttons: Choice[] } {
  // A settings file that cannot be used: fixed by hand (Retry reads it again), or replaced by the defaults,
  // which the Settings screen can then change.
  const settingsFix = failure instanceof HostSettingsFileError;
  const buttons: Choice[] = isPortProblem(failure)
    ? ['Retry', 'Use a free port', 'Quit']
    : settingsFix
      ? ['Retry', 'Use the default settings', 'Quit']
      : ['Retry', 'Quit'];
  const box: MessageBoxOptions = {
    type: 'error',
    title: 'Hypernex Companion',
    message: 'The host is not running',
    detail: settingsFix
      ? `${reason}\n\nFix the file and choose Retry, or start on the default settings (they replace the file) and change them in Settings.`
      : reason,
    buttons,
    defaultId: 0,
    cancelId: buttons.length - 1,
    noLink: true,
  };
  return { box, buttons };
}

/**
 * Asks until the host serves or the user gives up; false when they chose Quit. `parent()` is the window the
 * question belongs to, when there is one.
 */
export async function recoverHost(
  controller: HostController,
  reason: string,
  parent: () => BrowserWindow | null,
): Promise<boolean> {
  for (;;) {
    const { box, buttons } = recoveryBox(controller.lastFailure(), reason);
    const window = parent();
    const { response } =
      window && !window.isDestroyed()
        ? await dialog.showMessageBox(window, box)
        : await dialog.showMessageBox(box);
    const choice = buttons[response];
    if (choice === 'Quit' || choice === undefined) return false;
    if (choice === 'Use a free port') {
      const port = await findFreePort(controller.state().settings.host).catch(() => 0);
      await controller.updateSettings({ port });
    }
    if (choice === 'Use the default settings') await controller.updateSettings(defaultHostSettings());
    const state = await controller.start();
    if (state.running) return true;
    reason = state.error ?? reason;
  }
}
