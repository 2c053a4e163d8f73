/** Placeholder until the friends screen lands (being built now); it says so honestly. */
export function FriendsPage() {
  return (
    <div className="page">
      <section className="card placeholder">
        <p>This part of the companion is not built yet.</p>
      </section>
    </div>
  );
}
