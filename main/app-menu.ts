import type { MenuItemConstructorOptions } from 'electron';

/**
 * The application menu. Packaged builds have no DevTools, reload or zoom-reset surprises: only what a user needs
 * (edit for copy/paste, window). Development builds keep View with DevTools and reload.
 */
export function applicationMenuTemplate(options: {
  packaged: boolean;
  platform: NodeJS.Platform;
}): MenuItemConstructorOptions[] {
  const template: MenuItemConstructorOptions[] = [];
  if (options.platform === 'darwin') template.push({ role: 'appMenu' });
  else template.push({ role: 'fileMenu' });
  template.push({ role: 'editMenu' });
  if (!options.packaged) {
    template.push({
      label: 'View',
      submenu: [
        { role: 'reload' },
        { role: 'forceReload' },
        { role: 'toggleDevTools' },
        { type: 'separator' },
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
      ],
    });
  }
  template.push({ role: 'windowMenu' });
  return template;
}

/** Every role in a template, submenus included (for tests and the DevTools guard). */
export function menuRoles(template: readonly MenuItemConstructorOptions[]): string[] {
  const out: string[] = [];
  for (const item of template) {
    if (item.role) out.push(item.role);
    if (Array.isArray(item.submenu)) out.push(...menuRoles(item.submenu));
  }
  return out;
}
