// The page's history policy (app/components/page_history.js) under Node's own test runner, on
// a stand-in window: moves of one control are one entry for Back, anything else a new one, and the
// app's companion parameters come from the payload, and a page arrived at is one entry. Run by tests/test_player_source.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { changedParameters, historyStep, mountHistory } from "../../app/components/page_history.js";

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
  assert.deepEqual(historyStep(`${PAGE}?p=0.5`, `${PAGE}?p=0.6`, null, []), { replace: false, last: "p", arrived: null });
  assert.deepEqual(historyStep(`${PAGE}?p=0.6`, `${PAGE}?p=0.7`, "p", []), { replace: true, last: "p", arrived: null });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.7&q=3`, "p", []), { replace: false, last: "q", arrived: null });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.8&q=3`, "p", []), { replace: false, last: null, arrived: null });
  assert.deepEqual(historyStep(`${PAGE}?p=0.7`, `${PAGE}?p=0.7`, "p", []), { replace: true, last: "p", arrived: null });
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

test("a page arrived at is one entry: its first link replaces the bare address Streamlit pushed", () => {
  const ROOT = "http://localhost:8501/";
  const LEARN = "http://localhost:8501/learn";
  assert.deepEqual(historyStep(`${ROOT}?p=0.7`, LEARN, "p", []), { replace: false, last: null, arrived: "/learn" });
  assert.deepEqual(historyStep(LEARN, `${LEARN}?p=0.7&q=3`, null, [], "/learn"), { replace: true, last: null, arrived: null });
  // once the link is written, or with parameters already there, a change is judged as any other
  assert.deepEqual(historyStep(`${LEARN}?p=0.7`, `${LEARN}?p=0.7&q=3`, null, [], "/learn"),
                   { replace: false, last: "q", arrived: null });
  assert.deepEqual(historyStep(LEARN, `${LEARN}?q=3`, null, [], null), { replace: false, last: "q", arrived: null });

  const { win, calls } = standIn(`${ROOT}?p=0.7&gallery=ab12`);
  mountHistory(win, ["gallery"]);
  for (const url of [LEARN, `${LEARN}?p=0.7&gallery=ab12`, `${LEARN}?p=0.7&gallery=ab12&toy_p=0.6`,
                     `${LEARN}?p=0.7&gallery=ab12&toy_p=0.65`, `${ROOT}`, `${ROOT}?p=0.7&gallery=ab12`]) {
    win.history.pushState({}, "", url);
  }
  // Learn: its bare address, then its link over it; a toy p (twice: one entry); back to Explore, whose link replaces it
  assert.deepEqual(calls.map(([kind]) => kind), ["push", "replace", "push", "replace", "push", "replace"]);
});

test("once the run that arrived at a page has ended, its first change pushes: a page left at its defaults keeps its entry", () => {
  const LEARN = "http://localhost:8501/learn";
  const { win, calls } = standIn("http://localhost:8501/?p=0.7");
  const app = { state: "running", getAttribute: () => app.state };
  const observers = [];
  win.document = { querySelector: (selector) => (selector === '[data-testid="stApp"]' ? app : null) };
  win.MutationObserver = class { constructor(callback) { this.callback = callback; } observe() { observers.push(this); } };
  const policy = mountHistory(win, []);
  win.history.pushState({}, "", LEARN);  // arrived; the page's first run writes no link (its defaults)
  assert.equal(policy.arrived, "/learn");
  app.state = "notRunning";
  for (const observer of observers) observer.callback([]);
  assert.equal(policy.arrived, null);
  win.history.pushState({}, "", `${LEARN}?toy_p=0.55`);  // a person's first change: a new entry
  assert.deepEqual(calls.map(([kind]) => kind), ["push", "push"]);
});
