import { useEffect, useEffectEvent, useMemo, useState, useSyncExternalStore } from 'react';
import type { UploadRulesDto } from '../../../server/protocol/host-info.js';
import { call, describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import { useSocketStatus } from '../../shared/socket-context.js';
import { shareableOrigin, type MyContent } from './content-api.js';
import { uploadQueueFor, type QueueSnapshot, type UploadQueue } from './upload-queue.js';

/** This session's upload list and its current state. */
export function useUploadQueue(): { queue: UploadQueue; snapshot: QueueSnapshot } {
  const { session, authedCall } = useSession();
  const queue = useMemo(() => uploadQueueFor(session), [session]);
  const onRejected = useEffectEvent(() => {
    // authedCall runs the app's "session ended" path when the host refuses the token.
    authedCall('getUser').catch(() => undefined);
  });
  useEffect(() => {
    queue.setCredentialsRejectedHandler(() => onRejected());
    return () => queue.setCredentialsRejectedHandler(null);
  }, [queue]);
  const snapshot = useSyncExternalStore(queue.subscribe, queue.getSnapshot);
  return { queue, snapshot };
}

export interface ContentState {
  content: MyContent | null;
  error: string | null;
  loading: boolean;
}

/**
 * Your files, avatars and worlds; fetched again whenever `refreshKey` changes (e.g. an upload finished). The last
 * good list stays on screen while a newer one loads, so nothing jumps.
 */
export function useMyContent(refreshKey: string): ContentState & { reload(): void } {
  const { authedCall } = useSession();
  const [state, setState] = useState<ContentState>({ content: null, error: null, loading: true });
  const [version, setVersion] = useState(0);
  const load = useEffectEvent((isLive: () => boolean) => {
    authedCall<MyContent>('getMyContent')
      .then((content) => {
        if (isLive()) setState({ content, error: null, loading: false });
      })
      .catch((error: unknown) => {
        if (isLive()) setState((old) => ({ ...old, error: describeError(error), loading: false }));
      });
  });
  useEffect(() => {
    let live = true;
    load(() => live);
    return () => {
      live = false;
    };
  }, [refreshKey, version]);
  return {
    ...state,
    reload() {
      setState((old) => ({ ...old, loading: true }));
      setVersion((v) => v + 1);
    },
  };
}

/**
 * Every rule the host applies to an upload (`GET uploadRules`: allowed image domains, size limit…), so the form
 * checks them before a byte goes. Asked again when the connection to the host comes back (it may have restarted
 * with other settings). null until known, or when the host does not answer: the host still checks everything.
 */
export function useUploadRules(): UploadRulesDto | null {
  const [rules, setRules] = useState<UploadRulesDto | null>(null);
  const { connection } = useSocketStatus();
  useEffect(() => {
    let live = true;
    call<UploadRulesDto>('uploadRules')
      .then((r) => {
        if (live) setRules(r);
      })
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [connection]);
  return rules;
}

/**
 * The origin of the file URLs this page stores and copies: a LAN address of the host when the page is open on
 * loopback (see `shareableOrigin`), known once `uploadRules` answered; the page's origin until then.
 */
export function useFileOrigin(rules: UploadRulesDto | null): string {
  const { protocol, hostname, port, origin } = window.location;
  return shareableOrigin({ protocol, hostname, port, origin }, rules?.localHosts ?? []);
}

/**
 * Mounted by the shell on every screen: tells this session's upload list whether the host can be reached, so
 * uploads an outage stopped continue by themselves when it returns, whichever screen is open (issue 18).
 */
export function UploadsFollowConnection(): null {
  const { session } = useSession();
  const { health } = useSocketStatus();
  useEffect(() => {
    uploadQueueFor(session).setHostReachable(health === 'connected');
  }, [session, health]);
  return null;
}
