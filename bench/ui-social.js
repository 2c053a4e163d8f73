// Issue 18's figures for bench/ui.js: friend request -> the target's screen, acceptance -> the sender's screen
// (both pages open on Friends, the actions sent over HTTP from here), and the API requests a Friends screen with
// 200 friends makes to render.

export const SOCIAL_TARGETS = { socialPushMs: 200, friendsRenderRequests: 2 };
export const SOCIAL_USERS = { d: 'BenchDan', e: 'BenchEve', f: 'BenchFay' };
export const MANY_FRIENDS = 200;

/** Records when an element first matches each watched selector (this machine's clock, as Node's Date.now()). */
const MARK_SCRIPT = `
  (() => {
    window.__marks = {};
    window.__watch = {};
    new MutationObserver(() => {
      for (const [key, selector] of Object.entries(window.__watch)) {
        if (window.__marks[key] === undefined && document.querySelector(selector)) window.__marks[key] = Date.now();
      }
    }).observe(document, { childList: true, subtree: true, attributes: true });
  })();
`;

async function post(url, path, body) {
  const res = await fetch(new URL(`api/v1/${path}`, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (!answer.success) throw new Error(`${path}: ${answer.message}`);
  return answer;
}

async function watchFor(page, key, selector, timeoutMs = 5000) {
  await page.evaluate(
    ([k, s]) => {
      globalThis.__watch[k] = s;
      if (globalThis.document.querySelector(s)) globalThis.__marks[k] = Date.now();
    },
    [key, selector],
  );
  return async () => {
    await page.waitForFunction((k) => globalThis.__marks[k] !== undefined, key, { timeout: timeoutMs });
    return page.evaluate((k) => globalThis.__marks[k], key);
  };
}

/**
 * `open(session)` opens a signed-in page (fresh context) and returns it; `users` has d, e (strangers) and f (with
 * MANY_FRIENDS friends). Returns the figures.
 */
export async function runSocial({ url, rounds, open, users }) {
  // 1) Requests to render Friends with 200 friends.
  const fay = await open(users.f);
  await fay.page.goto(`${url}#/account`);
  await fay.page.getByTestId('signed-in-username').waitFor({ timeout: 20_000 });
  await fay.page.waitForLoadState('networkidle');
  const calls = [];
  fay.page.on('request', (r) => {
    if (r.url().includes('/api/v1/')) calls.push(new URL(r.url()).pathname);
  });
  const started = performance.now();
  await fay.page.locator('nav[aria-label="Sections"] a', { hasText: 'Friends' }).click();
  await fay.page.waitForFunction(
    (n) => globalThis.document.querySelectorAll('[data-testid="friend-row"]').length === n,
    MANY_FRIENDS,
    { timeout: 20_000 },
  );
  const friendsRenderMs = performance.now() - started;
  await fay.page.waitForLoadState('networkidle');
  await fay.close();

  // 2) Pushes, D and E both on their Friends screen.
  const dan = await open(users.d);
  const eve = await open(users.e);
  for (const tab of [dan, eve]) {
    await tab.page.addInitScript({ content: MARK_SCRIPT });
    await tab.page.goto(`${url}#/friends`);
    await tab.page.reload();
    await tab.page.getByRole('heading', { name: 'Add a friend' }).waitFor({ timeout: 20_000 });
    await tab.page
      .locator('[data-testid="socket-health"][data-health="connected"]')
      .waitFor({ timeout: 20_000 });
  }
  const request = [];
  const accept = [];
  const as = (u, extra) => ({ userid: u.id, tokenContent: u.token, ...extra });
  for (let round = 0; round < rounds + 1; round++) {
    const arrived = await watchFor(
      dan.page,
      `req${round}`,
      `[data-testid="incoming-request"][data-username="${users.e.username}"]`,
    );
    const t0 = Date.now();
    await post(url, 'sendFriendRequest', as(users.e, { targetUserId: users.d.id }));
    const r = (await arrived()) - t0;
    const friended = await watchFor(
      eve.page,
      `acc${round}`,
      `[data-testid="friend-row"][data-username="${users.d.username}"]`,
    );
    const t1 = Date.now();
    await post(url, 'acceptFriendRequest', as(users.d, { targetUserId: users.e.id }));
    const a = (await friended()) - t1;
    if (round > 0) {
      request.push(r);
      accept.push(a);
    }
    await post(url, 'removeFriend', as(users.e, { targetUserId: users.d.id }));
    await dan.page.waitForFunction(
      (name) => !globalThis.document.querySelector(`[data-testid="friend-row"][data-username="${name}"]`),
      users.e.username,
    );
    await eve.page.waitForFunction(
      (name) => !globalThis.document.querySelector(`[data-testid="friend-row"][data-username="${name}"]`),
      users.d.username,
    );
  }
  await dan.close();
  await eve.close();
  return { friendsRenderRequests: calls.length, friendsRenderCalls: calls, friendsRenderMs, request, accept };
}
