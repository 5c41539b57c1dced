// The page's history policy, which the p player (p_player.js) and the toy world (toy_world.js)
// mount in the app. Streamlit pushes a browser history entry whenever a run changes the page's query
// string, so each release of p (each move of any one control) would be one more step for Back. With
// the policy, a change of the same one parameter as the current entry's, or of none, replaces that
// entry; a change of anything else (another control, another page: a new view) pushes one. A page
// arrived at is one entry too: Streamlit pushes its bare address, and the link the page's first run
// writes replaces that entry (Back would otherwise stop at the bare address); once that run has
// ended, a page left at its defaults keeps its bare entry, and a change pushes as any other. History
// is the page's, so the policy is mounted once per page, whatever mounts it. The window is passed in,
// never taken from the page, so that Node runs this with a stand-in (tests/js/page_history.test.mjs).

// The query-string parameters whose values differ between two addresses. A companion (a parameter
// the app sets beside another one, named in the payload: the gallery a link was made on) counts only
// when it was there before, so a view's first parameter and its companion are one change.
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
// one; the one parameter the current entry changed afterwards (last: before), or null; and the page
// just arrived at whose link is not written yet (arrived: before), or null.
export function historyStep(from, to, last, companions, arrived = null) {
  const changed = changedParameters(from, to, companions);
  const before = new URL(from);
  if (changed[0] === "(page)") return { replace: false, last: null, arrived: new URL(to, from).pathname };
  if (arrived === before.pathname && before.search === "") return { replace: true, last: null, arrived: null };
  if (changed.length === 0 || (changed.length === 1 && changed[0] === last)) return { replace: true, last, arrived: null };
  return { replace: false, last: changed.length === 1 ? changed[0] : null, arrived: null };
}

// The app's element and the attribute in which Streamlit marks its run's state: the end of the run
// that arrived at a page ends the arrival. Where a release has neither, the arrival ends at the
// next push instead.
const APP = '[data-testid="stApp"]';
const RUN_STATE = "data-test-script-state";

// Installs the policy on win.history, once per page, and returns it; a later mount (another
// drawing, another component) only passes the app's companions on, as its payload names them.
export function mountHistory(win, companions) {
  if (win.anchordivHistory) {
    win.anchordivHistory.companions = [...companions];
    return win.anchordivHistory;
  }
  const { history } = win;
  const push = history.pushState.bind(history);
  const policy = { companions: [...companions], last: null, arrived: null };
  history.pushState = (state, unused, url) => {
    const step = historyStep(win.location.href, url, policy.last, policy.companions, policy.arrived);
    policy.last = step.last;
    policy.arrived = step.arrived;
    if (step.replace) history.replaceState(state, unused, url);
    else push(state, unused, url);
  };
  const app = win.document?.querySelector(APP);
  if (app && win.MutationObserver) {
    new win.MutationObserver(() => {
      if (app.getAttribute(RUN_STATE) === "notRunning") policy.arrived = null;
    }).observe(app, { attributes: true, attributeFilter: [RUN_STATE] });
  }
  win.anchordivHistory = policy;
  return policy;
}
