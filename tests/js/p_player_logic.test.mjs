// The p player's rules (app/components/p_player_logic.js) under Node's own test runner: which step
// a drawing shows, Play's stops, one report per burst of releases, and two players that share
// nothing. Run by tests/test_player_source.py (node --test tests/js/).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  PlayerMemory, REPORT_DELAY_MS, ReleaseReport, isEndStop, nearestStep, nextStop, playDirection, playStep,
  rankingAt, runOf, safeSource, sameOrder,
} from "../../app/components/p_player_logic.js";

// setTimeout and clearTimeout on a clock the test moves: a report's delay passes when the test says.
function fakeTimers() {
  let now = 0;
  let nextId = 1;
  const waiting = new Map();
  return {
    setTimeout(callback, ms) {
      waiting.set(nextId, { at: now + ms, callback });
      return nextId++;
    },
    clearTimeout(id) {
      waiting.delete(id);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...waiting].filter(([, timer]) => timer.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) break;
        waiting.delete(due[0]);
        now = due[1].at;
        due[1].callback();
      }
      now = until;
    },
  };
}

// A player's release reporting as p_player.js wires it, over a stand-in for what it shows.
function releasing(memory, timers, shown = { p: 0.5, pNow: 0.5, playing: false }) {
  const reports = [];
  const settled = [];
  const releases = new ReleaseReport({
    memory, timers, read: () => ({ ...shown }), report: (p) => reports.push(p), settled: () => settled.push(shown.p),
  });
  return { releases, reports, settled, shown };
}

const P = [0, 0.25, 0.5, 0.75, 1];
const RUNS = [[0, 1], [2, 2], [3, 4]];

test("a p is shown at the nearest position, the lower on a tie (as SliderPath.step_of)", () => {
  assert.equal(nearestStep(P, 0.3), 1);
  assert.equal(nearestStep(P, 0.375), 1);
  assert.equal(nearestStep(P, 0.376), 2);
  assert.equal(nearestStep(P, -5), 0);
  assert.equal(nearestStep(P, 7), 4);
});

test("the ranking heading names the run a step is in and the p it spans", () => {
  assert.equal(runOf(RUNS, 4), 2);
  assert.equal(runOf(RUNS, 9), -1);
  assert.deepEqual(rankingAt(P, RUNS, 1), { text: "ranking 1 of 3", title: "the same images from p = 0.00 to 0.25" });
  assert.deepEqual(rankingAt(P, RUNS, 2), { text: "ranking 2 of 3", title: "only at p = 0.50" });
  assert.equal(rankingAt(P, RUNS, 9), null);
});

test("Play goes to the next stop showing other images, turns at the ends and holds them longer", () => {
  const stops = [0, 1, 3, 4];  // two stops of the first run: Play skips the one of the run it is in
  const runs = [[0, 1], [2, 4]];
  assert.equal(nextStop(stops, runs, 0, 1), 3);
  assert.equal(nextStop(stops, runs, 3, 1), 4);  // none of another run ahead: a stop of the same run
  assert.equal(nextStop(stops, runs, 4, 1), null);
  assert.deepEqual(playStep(stops, runs, 4, 1), { stop: 1, direction: -1 });
  assert.deepEqual(playStep(stops, runs, 0, -1), { stop: 3, direction: 1 });
  assert.equal(playDirection(stops, 4), -1);
  assert.equal(playDirection(stops, 2), 1);
  assert.ok(isEndStop(stops, 0) && isEndStop(stops, 4) && !isEndStop(stops, 3));
});

test("the grid is laid out again only when the order changes", () => {
  assert.ok(sameOrder([2, 0, 1], [2, 0, 1]));
  assert.ok(!sameOrder([2, 0, 1], [0, 2, 1]));
  assert.ok(!sameOrder([2, 0], [2, 0, 1]));
  assert.ok(!sameOrder(null, [2, 0, 1]));
});

test("an image address is the server's own path or inline PNG, else none", () => {
  assert.equal(safeSource("/media/a.png"), "/media/a.png");
  assert.equal(safeSource("//evil.example/a.png"), "");
  assert.equal(safeSource({ src: "/media/a.png" }), "");
});

test("a drawing shows the server's p first, then the p shown, and the server's p again when it changes", () => {
  const memory = new PlayerMemory();
  assert.deepEqual(memory.target({ p: P, p_now: 0.25 }, null), { p: 0.25, carried: false });
  assert.deepEqual(memory.target({ p: P, p_now: 0.25 }, { pNow: 0.25, shown: 0.75 }), { p: 0.75, carried: false });
  assert.deepEqual(memory.target({ p: P, p_now: 1 }, { pNow: 0.25, shown: 0.75 }), { p: 1, carried: false });
});

test("a released p wins over a drawing that does not carry it yet, and is let go once one does", () => {
  const memory = new PlayerMemory();
  memory.released = 0.75;
  // a run under way when the key was pressed redraws with the p it had: the release stays
  assert.deepEqual(memory.target({ p: P, p_now: 0.25 }, { pNow: 0.25, shown: 0.75 }), { p: 0.75, carried: false });
  assert.deepEqual(memory.target({ p: P, p_now: 0.25 }, null), { p: 0.75, carried: false });  // a new host element
  assert.equal(memory.released, 0.75);
  assert.deepEqual(memory.target({ p: P, p_now: 0.75 }, { pNow: 0.25, shown: 0.75 }), { p: 0.75, carried: true });
  assert.equal(memory.released, null);
});

test("a burst of releases is one report, of the p shown when the delay is over", () => {
  const timers = fakeTimers();
  const { releases, reports, settled, shown } = releasing(new PlayerMemory(), timers);
  for (const p of [0.75, 1, 0.25]) {
    shown.p = p;
    releases.release(p);
    timers.advance(REPORT_DELAY_MS - 1);
  }
  assert.deepEqual(reports, []);
  timers.advance(1);
  assert.deepEqual(reports, [0.25]);
  assert.deepEqual(settled, [0.25]);
});

test("a release is reported only when it is news, and never while Play runs", () => {
  const timers = fakeTimers();
  const memory = new PlayerMemory();
  const { releases, reports, settled, shown } = releasing(memory, timers);
  releases.release(0.5);  // the server's own p
  timers.advance(REPORT_DELAY_MS);
  shown.p = 0.75;
  releases.release(0.75);
  timers.advance(REPORT_DELAY_MS);
  releases.release(0.75);  // reported already
  timers.advance(REPORT_DELAY_MS);
  shown.p = 1;
  shown.playing = true;
  releases.release(1);
  timers.advance(REPORT_DELAY_MS);
  assert.deepEqual(reports, [0.75]);
  assert.equal(settled.length, 4);  // every delay ends the "reporting" mark, reported or not
  assert.equal(memory.released, 1);
  shown.playing = false;
  releases.forget();  // a new path: 0.75 is news again
  shown.p = 0.75;
  releases.release(0.75);
  timers.advance(REPORT_DELAY_MS);
  assert.deepEqual(reports, [0.75, 0.75]);
});

test("a new host element of the same player reports a release the server has not carried back", () => {
  const timers = fakeTimers();
  const memory = new PlayerMemory();
  const first = releasing(memory, timers, { p: 0.75, pNow: 0.5, playing: false });
  first.releases.release(0.75);
  timers.advance(REPORT_DELAY_MS);
  const second = releasing(memory, timers, { p: 0.75, pNow: 0.5, playing: false });
  assert.equal(memory.released, 0.75);  // what p_player.js checks before releasing again
  second.releases.release(memory.released);
  timers.advance(REPORT_DELAY_MS);
  assert.deepEqual([first.reports, second.reports], [[0.75], [0.75]]);
});

test("two players on one page are independent: a release or a key on one leaves the other alone", () => {
  const timers = fakeTimers();
  const [a, b] = [new PlayerMemory(), new PlayerMemory()];
  const playerA = releasing(a, timers, { p: 1, pNow: 0.5, playing: false });
  const playerB = releasing(b, timers, { p: 0.5, pNow: 0.5, playing: false });
  playerA.releases.release(1);
  a.keyPressed(1000);
  // B redrawn by the server at its own p: nothing of A's release moves it
  assert.deepEqual(b.target({ p: P, p_now: 0.5 }, { pNow: 0.5, shown: 0.5 }), { p: 0.5, carried: false });
  assert.equal(b.released, null);
  assert.ok(a.keyboardRecent(1500) && !b.keyboardRecent(1500));
  timers.advance(REPORT_DELAY_MS);
  assert.deepEqual([playerA.reports, playerB.reports], [[1], []]);
  // B's release is B's, and A's server carrying its release back leaves B's standing
  playerB.shown.p = 0.25;
  playerB.releases.release(0.25);
  assert.deepEqual(a.target({ p: P, p_now: 1 }, { pNow: 0.5, shown: 1 }), { p: 1, carried: true });
  assert.equal(b.released, 0.25);
  timers.advance(REPORT_DELAY_MS);
  assert.deepEqual([playerA.reports, playerB.reports], [[1], [0.25]]);
});
