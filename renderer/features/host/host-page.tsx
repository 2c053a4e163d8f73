/** Placeholder until the host screen lands (being built now); it says so honestly. */
export function HostPage() {
  return (
    <div className="page">
      <section className="card placeholder">
        <p>This part of the companion is not built yet.</p>
      </section>
    </div>
  );
}
