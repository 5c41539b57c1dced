// Runs app/components/toy_world_math.js on the cases of a JSON file and prints what it computes, as
// JSON, for tests/test_toy_world_math.py to hold against anchordiv.lesson. Not a test itself (its
// name does not end in .test.mjs, so `node --test` leaves it alone).
//
// A case: { world: "circle" | "sphere", a, b (circle: angles; sphere: [azimuth, elevation] pairs,
// in degrees), kind, scale, p, weighting, query (an angle, or a pair), width (circle: the cosine
// arc in degrees), labels (optional: [A's, B's] k-means labels for a GMM) }.
import { readFileSync } from "node:fs";

import * as toy from "../../app/components/toy_world_math.js";

function run(item) {
  const circle = item.world === "circle";
  const toDirection = (angles) => (circle ? toy.circleDirection(angles) : toy.sphereDirection(...angles));
  let geometry;
  try {
    geometry = toy.toyGeometry({ sets: [item.a.map(toDirection), item.b.map(toDirection)], kind: item.kind,
                                 scale: item.scale, p: item.p, weighting: item.weighting, labels: item.labels });
  } catch (error) {
    return { error: error.message };
  }
  const query = toDirection(item.query);
  const profile = circle ? toy.circleProfile(geometry.model, geometry.scale, item.query)
    : toy.sphereProfile(geometry.model, geometry.scale, ...item.query);
  const reverse = circle ? toy.circleProfile(geometry.model, geometry.scale, item.query, 360, true) : null;
  const tilt = toy.tilt(geometry, query);
  const result = {
    notes: geometry.notes, texts: geometry.texts.flat(), gmm_start: geometry.gmmStart,
    tilt: tilt.probabilities, tilt_sets: tilt.sets, exact: tilt.exact,
    kappa: profile.kappa, divergence: profile.divergence, cosine: profile.cosine,
    cosine_distance: profile.cosine_distance, x: circle ? profile.x : null, y: circle ? profile.y : null,
    reverse: reverse?.divergence ?? null,
  };
  if (circle) result.near = toy.equalSizeNeighbourhoods(profile, item.width);
  if (geometry.isMixture) {
    result.responsibilities = toy.responsibilities(geometry, query);
    result.curve = toy.responsibilityCurve(geometry, query);
    result.even = toy.evenShareP(geometry, query);
  }
  return result;
}

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(cases.map(run)));
