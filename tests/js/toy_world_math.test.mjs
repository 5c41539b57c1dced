// The toy world's math (app/components/toy_world_math.js) under Node's own test runner: what holds
// whatever the library says (tests/test_toy_world_math.py holds the numbers to the library's): a
// divergence is 0 from a direction to itself and never negative, a weight of 0 is exact, the EM
// starts from k-means labels of its own where the server gave none, the eigenvectors and the
// projection of the sphere's picture invert. Run by tests/test_player_source.py (node --test tests/js/).
import assert from "node:assert/strict";
import { test } from "node:test";

import * as toy from "../../app/components/toy_world_math.js";
import { project, unproject } from "../../app/components/toy_world_draw.js";

const circle = (angles) => angles.map(toy.circleDirection);

function world(kind, options = {}) {
  return toy.toyGeometry({ sets: [circle([0, 40, 80, 100, 130]), circle([160, 250, 260])], kind, scale: 8, p: 0.4,
                           weighting: "balanced", ...options });
}

test("a divergence is 0 from a direction to itself and never negative, for every kind", () => {
  for (const kind of toy.TOY_KINDS) {
    const geometry = world(kind);
    const profile = toy.circleProfile(geometry.model, geometry.scale, 90);
    assert.ok(Math.abs(profile.divergence[90]) < 1e-9, kind);
    assert.ok(Math.min(...profile.divergence) > -1e-9, kind);
  }
});

test("p = 1 leaves all of the tilt to A, p = 0 to B, exactly", () => {
  const geometry = world("softmax");
  const u = toy.circleDirection(200);
  assert.deepEqual(toy.responsibilities(geometry, u, 1), [1, 0]);
  assert.deepEqual(toy.responsibilities(geometry, u, 0), [0, 1]);
  assert.equal(toy.logSumExp([-Infinity, -Infinity]), -Infinity);
});

test("the tilt sums to 1 over both sets, A's anchors first", () => {
  const tilt = toy.tilt(world("gaussian"), toy.circleDirection(30));
  assert.ok(Math.abs(tilt.probabilities.reduce((a, b) => a + b, 0) - 1) < 1e-12);
  assert.deepEqual(tilt.sets, ["A", "A", "A", "A", "A", "B", "B", "B"]);
  assert.equal(tilt.texts[5], "B1 160°");
  assert.equal(tilt.exact, false);
});

test("a GMM without the server's labels starts from k-means labels of its own, and says so", () => {
  const sets = [circle([...Array(20).keys()].map((k) => 7 * k)), []];
  const geometry = toy.toyGeometry({ sets, kind: "gmm", scale: 5, p: 0.5, weighting: "literal" });
  assert.equal(geometry.gmmStart, false);
  assert.equal(new Set(geometry.labels[0]).size, 2);
  const given = toy.toyGeometry({ sets, kind: "gmm", scale: 5, p: 0.5, weighting: "literal", labels: [geometry.labels[0], null] });
  assert.equal(given.gmmStart, true);
  const wrong = toy.toyGeometry({ sets, kind: "gmm", scale: 5, p: 0.5, weighting: "literal", labels: [[0, 1], null] });
  assert.equal(wrong.gmmStart, false);  // labels for other anchors are not used
});

test("the library's refusals come as errors in its words", () => {
  assert.throws(() => toy.toyGeometry({ sets: [[], circle([10])], kind: "softmax", scale: 5, p: 0.5, weighting: "literal" }),
                /set A is empty/);
  assert.throws(() => world("latent-softmax", { sets: [circle([10]), []] }), /at least two distinct anchors/);
  assert.throws(() => world("softmax", { p: 1.5 }), /between 0 and 1/);
});

test("symmetricEigen's vectors and values rebuild the matrix", () => {
  const matrix = [[2, 0.5, 0.1], [0.5, 1, 0.3], [0.1, 0.3, 0.4]];
  const { values, vectors } = toy.symmetricEigen(matrix);
  assert.ok(values[0] >= values[1] && values[1] >= values[2]);
  for (let a = 0; a < 3; a++) {
    for (let b = 0; b < 3; b++) {
      const rebuilt = values.reduce((total, value, k) => total + value * vectors[k][a] * vectors[k][b], 0);
      assert.ok(Math.abs(rebuilt - matrix[a][b]) < 1e-12);
    }
  }
});

test("the sphere's picture: a direction on the near side unprojects to itself", () => {
  const view = { yaw: -30, pitch: 20 };
  for (const [azimuth, elevation] of [[0, 0], [-40, 30], [120, -60], [200, 80]]) {
    const u = toy.sphereDirection(azimuth, elevation);
    const [x, y, depth] = project(view, u);
    if (depth < 0) continue;
    const back = unproject(view, x, y);
    u.forEach((value, j) => assert.ok(Math.abs(back[j] - value) < 1e-12));
  }
  assert.equal(unproject(view, 0.9, 0.9), null);
});

test("equal-size neighbourhoods: as many directions by divergence as by cosine", () => {
  const geometry = world("softmax");
  const profile = toy.circleProfile(geometry.model, geometry.scale, 45);
  const near = toy.equalSizeNeighbourhoods(profile, 40);
  assert.equal(near.near_by_cosine.filter(Boolean).length, near.count);
  assert.equal(near.near_by_divergence.filter(Boolean).length, near.count);
});
