import type { CommunityDto, ServiceCheckDto } from '../../../server/protocol/host-info.js';

/** One shared service: where it is, and whether it answered this host's check just now. */
function ServiceCheck({ name, check }: { name: string; check: ServiceCheckDto }) {
  return (
    <div data-testid={`community-${name.toLowerCase()}`} data-ok={check.ok}>
      <dt>{name}</dt>
      <dd>
        <span className={check.ok ? 'pill on' : 'pill off'}>{check.ok ? 'Answering' : 'Not answering'}</span>{' '}
        <span className="muted small">{check.ok ? `${check.ms} ms` : check.problem}</span>
        <br />
        <span className="mono small breakable">{check.address}</span>
      </dd>
    </div>
  );
}

/**
 * Where the community lives (issue 25): this host's own data folder, or a PostgreSQL database (and Redis) that
 * several hosts share, each checked when the status is read, and how many hosts the database hears.
 */
export function CommunityCard({ community }: { community: CommunityDto }) {
  const shared = community.storage === 'postgres';
  return (
    <section className="card" aria-labelledby="host-community-title" data-testid="host-community">
      <div className="card-heading">
        <h2 id="host-community-title" className="card-title">
          Community
        </h2>
        <span className="pill" data-testid="host-count">
          {community.hosts} {community.hosts === 1 ? 'host' : 'hosts'}
        </span>
      </div>
      <dl className="facts columns">
        <div>
          <dt>Stored in</dt>
          <dd>{shared ? 'A PostgreSQL database hosts share' : "This host's data folder"}</dd>
        </div>
        {community.database ? <ServiceCheck name="Database" check={community.database} /> : null}
        {community.redis ? (
          <ServiceCheck name="Redis" check={community.redis} />
        ) : shared ? (
          <div>
            <dt>Redis</dt>
            <dd className="muted">Not set: presence and socket messages stay on each host</dd>
          </div>
        ) : null}
      </dl>
      {shared ? (
        <p className="muted small">
          A host that cannot reach the database answers requests with STORAGE_UNAVAILABLE until it is back;
          while Redis is away, sign-ins and everything on this host go on, and messages for users on other
          hosts fail with a clear answer.
        </p>
      ) : null}
    </section>
  );
}
