import { useEffect, useEffectEvent, useMemo, useState, useSyncExternalStore } from 'react';
import { describeError } from '../../shared/api-client.js';
import { useSession } from '../../shared/session.js';
import type { MyContent } from './content-api.js';
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
