import { useEffect, useRef, useState } from 'react';
import { useFileOrigin, useMyContent, useUploadQueue, useUploadRules } from './hooks.js';
import { MyAssets, MyFiles } from './my-content.js';
import { UploadComposer, type ComposerHandle } from './upload-composer.js';
import { hasFieldErrors } from './upload-queue.js';
import { InterruptedList, UploadList } from './upload-list.js';

/** Creators' uploads: pick or drop files, describe avatars and worlds, follow the upload list, manage content. */
export function UploadsPage() {
  const { queue, snapshot } = useUploadQueue();
  const composer = useRef<ComposerHandle>(null);
  const [announcement, setAnnouncement] = useState('');
  // Each finished upload changes what the host holds: refetch the lists then.
  const doneKey = snapshot.jobs
    .filter((j) => j.state === 'done')
    .map((j) => j.id)
    .join(',');
  const content = useMyContent(doneKey);
  const rules = useUploadRules();
  const fileOrigin = useFileOrigin(rules);

  // A refusal with field reasons reopens the form next to those fields, unless something else is being filled in.
  useEffect(
    () =>
      queue.onFailure((job) => {
        if (hasFieldErrors(job)) composer.current?.reopen(job, true);
      }),
    [queue],
  );

  // A file dropped beside the drop zone would make the browser open it and leave the app.
  useEffect(() => {
    const hold = (event: DragEvent): void => {
      if (event.dataTransfer && Array.from(event.dataTransfer.types).includes('Files'))
        event.preventDefault();
    };
    window.addEventListener('dragover', hold);
    window.addEventListener('drop', hold);
    return () => {
      window.removeEventListener('dragover', hold);
      window.removeEventListener('drop', hold);
    };
  }, []);

  function changed(message: string): void {
    setAnnouncement(message);
    content.reload();
  }

  return (
    <div className="page uploads-page">
      <header className="page-header">
        <h1>Uploads</h1>
        <p className="muted">
          Put avatars, worlds, images and server scripts on this host. Big files go up in parts and can resume
          after a lost connection or a reload.
        </p>
      </header>
      <p className="visually-hidden" role="status">
        {announcement}
      </p>
      <UploadComposer
        ref={composer}
        queue={queue}
        jobs={snapshot.jobs}
        content={content.content}
        rules={rules}
        fileOrigin={fileOrigin}
      />
      <UploadList
        queue={queue}
        snapshot={snapshot}
        content={content.content}
        fileOrigin={fileOrigin}
        onFix={(job) => composer.current?.reopen(job, false)}
        onAnotherBuild={(kind, id, platform) => composer.current?.target(kind, id, platform)}
      />
      <InterruptedList
        queue={queue}
        records={snapshot.interrupted}
        onResume={(record, file) => composer.current?.resume(record, file)}
      />
      <MyAssets
        kind="avatar"
        state={content}
        rules={rules}
        fileOrigin={fileOrigin}
        onUpdate={(kind, id, platform) => composer.current?.target(kind, id, platform)}
        onChanged={changed}
        onRetry={content.reload}
      />
      <MyAssets
        kind="world"
        state={content}
        rules={rules}
        fileOrigin={fileOrigin}
        onUpdate={(kind, id, platform) => composer.current?.target(kind, id, platform)}
        onChanged={changed}
        onRetry={content.reload}
      />
      <MyFiles state={content} fileOrigin={fileOrigin} onChanged={changed} />
    </div>
  );
}
