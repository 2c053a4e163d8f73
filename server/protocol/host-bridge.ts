/**
 * The contract between the Electron shell (main/preload) and the UI: host-only things, never business logic.
 * The preload exposes one object of type `HostBridge` as `window.hypernexHost`; in a LAN browser it is absent.
 */

export interface HostSettings {
  /** Address to bind: 127.0.0.1 (this machine only) or 0.0.0.0 (the LAN). */
  host: string;
  port: number;
  dataDir: string;
}

/** A user with at least one verified socket on the host. */
export interface HostClientUser {
  userId: string;
  username: string;
  /** How many sockets the user holds (desktop window, game client, browsers). */
  sockets: number;
}

export interface HostClients {
  /** Open socket connections, verified or not. */
  connections: number;
  /** Connected users, by username. */
  users: HostClientUser[];
}

export interface HostState {
  running: boolean;
  /** e.g. http://127.0.0.1:5180 while running. */
  url: string | null;
  /** Addresses to share with other machines on the LAN. */
  lanUrls: string[];
  settings: HostSettings;
  /** One-time owner setup secret while the host has no owner; only the host machine ever sees it. */
  setupSecret: string | null;
  /** Last start failure, in words (e.g. "port 5180 is in use"). */
  error: string | null;
  /** Who is connected right now; empty while stopped. */
  clients: HostClients;
}

export interface NotificationRequest {
  title: string;
  body: string;
}

export interface DesktopUser {
  userId: string;
  tokenContent: string;
}

export interface HostBridge {
  getState(): Promise<HostState>;
  start(): Promise<HostState>;
  stop(): Promise<HostState>;
  /** Saves settings and restarts the host if it was running. */
  updateSettings(settings: Partial<HostSettings>): Promise<HostState>;
  openDataFolder(): Promise<void>;
  /** Opens an http(s) URL in the system browser; anything else is refused. */
  openExternal(url: string): Promise<void>;
  notify(notification: NotificationRequest): Promise<void>;
  /** Subscribes to state changes; returns the unsubscribe function. */
  onStateChanged(listener: (state: HostState) => void): () => void;
  /**
   * Tells the desktop app who is signed in in its window (null on sign-out), so the host process can notify them
   * of invite and friend requests even with the window closed. The token is checked by the host.
   */
  setDesktopUser(user: DesktopUser | null): Promise<void>;
  /** Main asks the page to show a section (a notification was clicked); returns the unsubscribe function. */
  onNavigate(listener: (section: string) => void): () => void;
}
