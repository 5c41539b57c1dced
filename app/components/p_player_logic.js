// The p player's rules that need no page: which step a drawing shows, where Play goes next, when a
// release is reported, which image addresses are kept. p_player.js draws; this decides. A plain ES
// module with no DOM access, so that Node runs it as it is (tests/js/p_player_logic.test.mjs).
// What the player receives and sends: docs/design.md §13, "The p player's protocol".

export const KEYBOARD_MS = 3000;     // a redraw this soon after a key on the slider gives the keyboard back
export const REPORT_DELAY_MS = 300;  // quick key presses in a row are one release: one run, not one per step

export const formatP = (p) => p.toFixed(2);

// The index of the position nearest p, the lower on a tie (as the server's SliderPath.step_of).
export function nearestStep(positions, p) {
  let best = 0;
  for (let i = 1; i < positions.length; i += 1) {
    if (Math.abs(positions[i] - p) < Math.abs(positions[best] - p)) best = i;
  }
  return best;
}

// The index of the run ([first, last] steps) that holds step, or -1.
export const runOf = (runs, step) => runs.findIndex(([first, last]) => first <= step && step <= last);

// Which run of one set of images step is in and the p it spans, as the player's heading says it;
// null for a step in no run.
export function rankingAt(positions, runs, step) {
  const run = runOf(runs, step);
  if (run < 0) return null;
  const [first, last] = runs[run];
  return {
    text: `ranking ${run + 1} of ${runs.length}`,
    title: first === last ? `only at p = ${formatP(positions[first])}`
      : `the same images from p = ${formatP(positions[first])} to ${formatP(positions[last])}`,
  };
}

// The first of the ascending stops after step (direction 1) or the last before it (-1) that shows
// other images than step's run (a stop of the same run when there is none), or null.
export function nextStop(stops, runs, step, direction) {
  const ahead = direction > 0 ? stops.filter((stop) => stop > step) : stops.filter((stop) => stop < step).reverse();
  const other = ahead.find((stop) => runOf(runs, stop) !== runOf(runs, step));
  return other ?? (ahead.length ? ahead[0] : null);
}

// Play's way from step: towards p = 1 (1), or back (-1) from the last stop on, turning at each end
// (the next stop, and the direction it was reached in).
export function playStep(stops, runs, step, direction) {
  const stop = nextStop(stops, runs, step, direction);
  if (stop !== null) return { stop, direction };
  return { stop: nextStop(stops, runs, step, -direction), direction: -direction };
}

export const playDirection = (stops, step) => (step >= stops[stops.length - 1] ? -1 : 1);

// The ends (p = 0, p = 1) are held twice as long.
export const isEndStop = (stops, stop) => stop === stops[0] || stop === stops[stops.length - 1];

// Whether a step's order is the one drawn (same images in the same places): then only captions change.
export const sameOrder = (drawn, order) => drawn !== null && drawn.length === order.length
  && drawn.every((index, rank) => index === order[rank]);

// Only the server's own addresses, a path from its root ("/media/...") or from here ("./..."), or
// inline PNG data; anything else becomes "" (no image). A browser reads "//host" and "/\host" as
// another host, drops tabs and newlines inside an address and reads "\" as "/" (so "/<tab>/host"
// is "//host" too): a path is printable ASCII (0x21-0x7e) less the backslash (0x5c), and its first
// "/" is not followed by another.
const SERVER_PATH = /^\.{0,2}\/(?!\/)[\x21-\x5b\x5d-\x7e]*$/;
const PNG_DATA = /^data:image\/png;base64,[A-Za-z0-9+/]*={0,2}$/;
export const safeSource = (src) => typeof src === "string" && (SERVER_PATH.test(src) || PNG_DATA.test(src)) ? src : "";

// What one player remembers across its drawings, on whatever host element Streamlit draws it (a
// busy server can redraw it on a new one): the p the visitor last released, until a drawing from
// the server carries it back (its p_now), and when its slider last had the keyboard. One per
// player (the payload's "instance"): two players never share it.
export class PlayerMemory {
  constructor() {
    this.released = null;
    this.keyboardAt = -Infinity;
  }

  keyPressed(now) {
    this.keyboardAt = now;
  }

  keyboardRecent(now) {
    return now - this.keyboardAt < KEYBOARD_MS;
  }

  // Where a drawing of data puts p, and whether the server has just carried the release back (so a
  // later release of that p is news again). previous: { pNow, shown } of the drawing before on this
  // host element, or null. The visitor's release wins while the server has not carried it back
  // (a run under way when the keys were pressed redraws with the p it had); else the server's p on
  // a first drawing (a link, a reload, a return to the page) or when the server's p changed (Back);
  // else the p shown, which the visitor may be moving (Play, a drag).
  target(data, previous) {
    let carried = false;
    if (this.released !== null && nearestStep(data.p, this.released) === nearestStep(data.p, data.p_now)) {
      this.released = null;
      carried = true;
    }
    if (this.released !== null) return { p: this.released, carried };
    if (previous === null || data.p_now !== previous.pNow) return { p: data.p_now, carried };
    return { p: previous.shown, carried };
  }
}

// The releases of one drawing host, reported once each burst is over: a release is remembered at
// once (memory.released) and reported after delay ms without another, if by then the p shown is
// still news: not while Play runs, nor the p last reported (or, before any, the server's own).
// read() says what the player shows when the delay is over: { p, pNow, playing }; settled() runs
// then whatever the decision. timers: setTimeout and clearTimeout (the page's, or a test's).
export class ReleaseReport {
  constructor({ memory, read, report, settled = () => {}, timers = globalThis, delay = REPORT_DELAY_MS }) {
    Object.assign(this, { memory, read, report, settled, timers, delay });
    this.reported = null;
    this.timer = null;
  }

  release(p) {
    this.memory.released = p;
    this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => this.due(), this.delay);
  }

  due() {
    this.timer = null;
    this.settled();
    const { p, pNow, playing } = this.read();
    if (playing || p === (this.reported ?? pNow)) return;
    this.reported = p;
    this.report(p);
  }

  // A new path, or the server has the release: the next release is news whatever it is.
  forget() {
    this.reported = null;
  }
}
