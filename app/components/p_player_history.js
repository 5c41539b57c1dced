// The page's history policy, which the p player (p_player.js) mounts. Streamlit pushes a browser
// history entry whenever a run changes the page's query string, so each release of p (each move of
// any one control) would be one more step for Back. With the policy, a change of the same one
// parameter as the current entry's, or of none, replaces that entry; a change of anything else
// (another control, another page: a new view) pushes one. History is the page's, so the policy is
// mounted once per page, whatever the number of players. The window is passed in, never taken from
// the page, so that Node runs this with a stand-in (tests/js/p_player_history.test.mjs).

// The query-string parameters whose values differ between two addresses. A companion (a parameter
// the app sets beside another one, named in the player's payload: the gallery a link was made on)
// counts only when it was there before, so a view's first parameter and its companion are one change.
export function changedParameters(from, to, companions) {
  const before = new URL(from);
  const after = new URL(to ?? from, from);
  if (before.pathname !== after.pathname) return ["(page)", "(path)"];
  const names = new Set([...before.searchParams.keys(), ...after.searchParams.keys()]);
  for (const companion of companions) {
    if (!before.searchParams.has(companion)) names.delete(companion);
  }
  const value = (params, name) => params.getAll(name).join("\n");
  return [...names].filter((name) => value(before.searchParams, name) !== value(after.searchParams, name));
}

// What a push from address `from` to `to` becomes: a replacement of the current entry, or a new
// one; and the one parameter the current entry changed afterwards (last: before), or null.
export function historyStep(from, to, last, companions) {
  const changed = changedParameters(from, to, companions);
  if (changed.length === 0 || (changed.length === 1 && changed[0] === last)) return { replace: true, last };
  return { replace: false, last: changed.length === 1 ? changed[0] : null };
}

// Installs the policy on win.history, once per page, and returns it; a later mount (another
// drawing, another player) only passes the app's companions on, as its payload names them.
export function mountHistory(win, companions) {
  if (win.anchordivHistory) {
    win.anchordivHistory.companions = [...companions];
    return win.anchordivHistory;
  }
  const { history } = win;
  const push = history.pushState.bind(history);
  const policy = { companions: [...companions], last: null };
  history.pushState = (state, unused, url) => {
    const step = historyStep(win.location.href, url, policy.last, policy.companions);
    policy.last = step.last;
    if (step.replace) history.replaceState(state, unused, url);
    else push(state, unused, url);
  };
  win.anchordivHistory = policy;
  return policy;
}
