// The page's history policy (app/components/p_player_history.js) under Node's own test runner, on
// a stand-in window: moves of one control are one entry for Back, anything else a new one, and the
// app's companion parameters come from the payload. Run by tests/test_player_source.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { changedParameters, historyStep, mountHistory } from "../../app/components/p_player_history.js";

const PAGE = "http://localhost:8501/explore";

// A window with a history that records what it was asked and moves the address as a browser does.
function standIn(href) {
  const calls = [];
  const win = { location: { href } };
  const go = (kind) => (state, unused, url) => {
    calls.push([kind, url]);
    win.location.href = new URL(url, win.location.href).href;
  };
  win.history = { pushState: go("push"), replaceState: go("replace") };
  return { win, calls };
}

test("the parameters that differ between two addresses; another page is a change of its own", () => {
  assert.deepEqual(changedParameters(`${PAGE}?p=0.5&k=10`, `${PAGE}?p=0.6&k=10`, []), ["p"]);
  assert.deepEqual(changedParameters(`${PAGE}?p=0.5`, `${PAGE}?p=0.5`, []), []);
  assert.deepEqual(changedParameters(`${PAGE}?p=0.5`, undefined, []), []);
  assert.deepEqual(changedParameters(`${PAGE}?p=0.5`, "?p=0.5&q=3", []), ["q"]);
  assert.deepEqual(changedParameters(`${PAGE}?p=0.5`, "http://localhost:8501/report?p=0.5", []), ["(page)", "(path)"]);
});

test("a companion the app adds beside a view's first parameter is no change of its own, unless it was there", () => {
  assert.deepEqual(changedParameters(PAGE, `${PAGE}?p=0.6&gallery=ab12`, ["gallery"]), ["p"]);
  assert.deepEqual(changedParameters(`${PAGE}?gallery=ab12&p=0.6`, `${PAGE}?gallery=cd34&p=0.6`, ["gallery"]), ["gallery"]);
  // the names come from the payload: with none, the gallery counts like any parameter
  assert.deepEqual(changedParameters(PAGE, `${PAGE}?p=0.6&gallery=ab12`, []).sort(), ["gallery", "p"]);
});

test("a change of the entry's one parameter replaces it; another parameter pushes, and is the entry's", () => {
  assert.deepEqual(historyStep(`${PAGE}?p=0.5`, `${PAGE}?p=0.6`, null, []), { replace: false, last: "p" });
  assert.deepEqual(historyStep(`${PAGE}?p=0.6`, `${PAGE}?p=0.7`, "p", []), { replace: true, last: "p" });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.7&q=3`, "p", []), { replace: false, last: "q" });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.8&q=3`, "p", []), { replace: false, last: null });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.7`, "p", []), { replace: true, last: "p" });
});

test("mounted on a window, a run of moves of p is one entry for Back and a new query another", () => {
  const { win, calls } = standIn(`${PAGE}?p=0.5`);
  mountHistory(win, ["gallery"]);
  for (const url of ["?p=0.51&gallery=ab12", "?p=0.52&gallery=ab12", "?p=0.53&gallery=ab12", "?p=0.53&gallery=ab12&q=7"]) {
    win.history.pushState({}, "", url);
  }
  assert.deepEqual(calls.map(([kind]) => kind), ["push", "replace", "replace", "push"]);
  assert.equal(win.location.href, `${PAGE}?p=0.53&gallery=ab12&q=7`);
});

test("the policy is mounted once per page, however many players mount it, with the payload's companions", () => {
  const { win, calls } = standIn(PAGE);
  const first = mountHistory(win, ["gallery"]);
  const wrapped = win.history.pushState;
  const second = mountHistory(win, ["gallery", "store"]);
  assert.equal(second, first);
  assert.equal(win.history.pushState, wrapped);
  assert.deepEqual(first.companions, ["gallery", "store"]);
  win.history.pushState({}, "", "?p=0.6&store=x");
  win.history.pushState({}, "", "?p=0.7&store=x");
  assert.deepEqual(calls.map(([kind]) => kind), ["push", "replace"]);  // one history entry, not two
});
