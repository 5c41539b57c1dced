// The Learn page's toy world, computed in the page: the same numbers as anchordiv.lesson (and the
// anchor models of anchordiv.models it fits through the registry), for directions on the circle
// (d = 2) and on the sphere (d = 3). No DOM: toy_world.js draws, Node runs this file in the tests
// (tests/js/toy_world_math.test.mjs; tests/test_toy_world_math.py checks it against the library on a
// grid of cases, to 1e-6).
//
// Notation (docs/design.md §1-§3, anchordiv/lesson.py): a direction u is a unit vector of dimension
// d; gamma_i the i-th anchor; s the scale and eta = s u the natural parameter of u;
// kappa(eta) = log E_P[exp(eta . gamma)] the anchor model's CGF and grad kappa(eta) its gradient (the
// tilted mean of the anchors); D(x -> y) = KL(p(.|eta_x) || p(.|eta_y))
//            = kappa(eta_y) - kappa(eta_x) - grad kappa(eta_x) . (eta_y - eta_x),
// the anchor divergence. Angles are in degrees: u(theta) = (cos theta, sin theta) on the circle, and
// on the sphere u(phi, e) = (cos e cos phi, cos e sin phi, sin e) for azimuth phi and elevation e.
//
// The anchor models (anchordiv.models.registry's rules for a small set are kept, notes included):
// * "softmax" (EmpiricalAnchors): kappa(eta) = logsumexp_i(gamma_i . eta + log w_i), w_i = 1/N;
// * "gaussian" (GaussianAnchors): kappa(eta) = mu . eta + 1/2 eta^T Sigma eta, mu the anchors' mean and
//   Sigma their Ledoit-Wolf shrunk covariance (one anchor: Sigma = 0.01 I);
// * "gmm" (GaussianMixtureAnchors): kappa(eta) = logsumexp_m(log pi_m + mu_m . eta + 1/2 eta^T Sigma_m eta),
//   M = max(1, min(4, floor(N / 8), N)) components fitted by EM from k-means labels (anchordiv/models/em.py);
// * "latent-softmax": kappa(eta) = mu . eta + logsumexp_i(c_i . (U eta)) - log N, U (r, d) the top r
//   principal directions of the anchors and c_i = U (gamma_i - mu);
// * "latent-gaussian" (probabilistic PCA): kappa(eta) = mu . eta + 1/2 (|W^T eta|^2 + sigma^2 |eta|^2),
//   W^T = diag(sqrt(max(lambda_j - sigma^2, 0))) U, sigma^2 the mean of the other d - r eigenvalues;
//   for both latent kinds r = min(32, N - 1, d - 1).
// Two sets A and B mix as MixtureAnchors([P_A, P_B], [p, 1 - p]) (anchordiv/models/mixture.py):
// kappa(eta) = logsumexp_k(log w_k + kappa_k(eta)), grad kappa = sum_k r_k grad kappa_k, with the
// responsibilities r_k(eta) = softmax_k(log w_k + kappa_k(eta)); "literal" weights w = (p, 1 - p),
// "balanced" w_k ∝ p_k exp(-c_k), c_k the mean of kappa_k over REFERENCE_COUNT evenly spread directions.

export const TOY_KINDS = Object.freeze(["softmax", "gaussian", "gmm", "latent-softmax", "latent-gaussian"]);
export const WEIGHTINGS = Object.freeze(["balanced", "literal"]);
export const SET_NAMES = Object.freeze(["A", "B"]);
// anchordiv.lesson: evenly spread directions the balanced weights average kappa over; two anchors
// closer than SAME_DIRECTION_DEG are one direction; at most MAX_TOY_ANCHORS per set.
export const REFERENCE_COUNT = 360;
export const SAME_DIRECTION_DEG = 1e-6;
export const MAX_TOY_ANCHORS = 72;
// anchordiv.models.registry's rules for small sets, and GaussianMixtureAnchors' EM settings.
const SINGLE_ANCHOR_RIDGE = 0.01;
const GMM_REG_COVAR = 1e-4;
const GMM_COMPONENTS = 4;
const ANCHORS_PER_COMPONENT = 8;
const GMM_MAX_ITER = 100;
const GMM_TOL = 1e-3;
const LATENT_RANK = 32;
const EPS = 2.220446049250313e-16;  // float64's machine epsilon (torch.finfo(float64).eps)
const DEG = Math.PI / 180;          // np.radians multiplies by this one constant,
const RAD = 180 / Math.PI;          // and np.degrees (and math.degrees) by this one

// -- small vector helpers ---------------------------------------------------------------------------
function dot(a, b) {
  let total = 0;
  for (let j = 0; j < a.length; j++) total += a[j] * b[j];
  return total;
}

// log sum_i exp(v_i), exact for entries of -Infinity (a weight of 0); -Infinity when all are.
export function logSumExp(values) {
  let top = -Infinity;
  for (const value of values) if (value > top) top = value;
  if (top === -Infinity) return -Infinity;
  let total = 0;
  for (const value of values) total += Math.exp(value - top);
  return top + Math.log(total);
}

// exp(v_i - logsumexp(v)): the softmax of v.
function softmax(values) {
  const total = logSumExp(values);
  return values.map((value) => Math.exp(value - total));
}

// x * (scale / |x|): anchordiv._validation.unit_rows, so that eta = s x / |x| as the models take it.
function scaled(x, scale) {
  const factor = scale / Math.hypot(...x);
  return x.map((value) => value * factor);
}

// -- directions -------------------------------------------------------------------------------------
export function circleDirection(thetaDeg) {
  const theta = thetaDeg * DEG;
  return [Math.cos(theta), Math.sin(theta)];
}

export function sphereDirection(azimuthDeg, elevationDeg) {
  const phi = azimuthDeg * DEG;
  const elevation = elevationDeg * DEG;
  return [Math.cos(elevation) * Math.cos(phi), Math.cos(elevation) * Math.sin(phi), Math.sin(elevation)];
}

// A direction from its angles: [theta] on the circle, [azimuth, elevation] on the sphere.
export function direction(angles) {
  return angles.length === 1 ? circleDirection(angles[0]) : sphereDirection(angles[0], angles[1]);
}

// count directions spread evenly (anchordiv.lesson.reference_directions): on the circle one every
// 360/count degrees from 180/count; on the sphere a Fibonacci lattice (equal area per point):
// elevation asin(1 - 2 t / count), azimuth 180 (1 + sqrt 5) t mod 360, t = k + 1/2.
export function referenceDirections(dim, count = REFERENCE_COUNT) {
  const directions = [];
  for (let k = 0; k < count; k++) {
    const t = k + 0.5;
    if (dim === 2) directions.push(circleDirection(360.0 * t / count));
    else directions.push(sphereDirection(pyMod((Math.PI * (1.0 + 5.0 ** 0.5) * t) * RAD, 360.0),
                                         Math.asin(1.0 - 2.0 * t / count) * RAD));
  }
  return directions;
}

// Python's a % b for floats: the sign of b.
function pyMod(a, b) {
  const r = a % b;
  return r !== 0 && (r < 0) !== (b < 0) ? r + b : r + 0;
}

// Whether two directions are one (anchordiv.lesson._check_distinct): cosine >= cos(1e-6 degrees).
export function sameDirection(u, v) {
  return dot(u, v) >= Math.cos(SAME_DIRECTION_DEG * DEG);
}

// An angle as a person types it (anchordiv.lesson._degrees): "30°", "-12.5°", two decimals at most.
export function degreesText(value) {
  return `${(round2(value) + 0).toFixed(2).replace(/0+$/, "").replace(/\.$/, "")}°`;
}

function round2(value) {
  return Number(value.toFixed(2));
}

// A direction's label (anchordiv.lesson._direction_label): its angle on the circle, "(azimuth,
// elevation)" on the sphere, azimuth in [0, 360).
export function directionLabel(u) {
  const azimuth = pyMod(round2(Math.atan2(u[1], u[0]) * RAD), 360.0);
  if (u.length === 2) return degreesText(azimuth);
  const elevation = Math.asin(Math.max(-1, Math.min(1, u[2]))) * RAD;
  return `(${degreesText(azimuth)}, ${degreesText(elevation)})`;
}

// -- the anchor models: each has cgf(eta) -> kappa and cgfGrad(eta) -> [kappa, grad] ----------------
class Softmax {
  // kappa(eta) = logsumexp_i(gamma_i . eta + log w_i), w_i = 1 / N; grad = sum_i softmax_i gamma_i.
  constructor(anchors) {
    this.anchors = anchors;
    this.logWeight = -Math.log(anchors.length);
    this.exact = true;  // its tilt over the anchors is the model's own
  }

  logits(eta) {
    return this.anchors.map((gamma) => dot(gamma, eta) + this.logWeight);
  }

  cgf(eta) {
    return logSumExp(this.logits(eta));
  }

  cgfGrad(eta) {
    const logits = this.logits(eta);
    const kappa = logSumExp(logits);
    const grad = new Array(eta.length).fill(0);
    this.anchors.forEach((gamma, i) => {
      const weight = Math.exp(logits[i] - kappa);
      for (let j = 0; j < grad.length; j++) grad[j] += weight * gamma[j];
    });
    return [kappa, grad];
  }
}

class Gaussian {
  // kappa(eta) = mu . eta + 1/2 eta^T Sigma eta; grad = mu + Sigma eta.
  constructor(mean, covariance) {
    this.mean = mean;
    this.covariance = covariance;
    this.exact = false;
  }

  cgfGrad(eta) {
    const spread = this.covariance.map((row) => dot(row, eta));
    return [dot(eta, this.mean) + 0.5 * dot(spread, eta), this.mean.map((value, j) => value + spread[j])];
  }

  cgf(eta) {
    return this.cgfGrad(eta)[0];
  }
}

class GaussianMixture {
  // kappa(eta) = logsumexp_m(log pi_m + mu_m . eta + 1/2 eta^T Sigma_m eta);
  // grad = sum_m r_m (mu_m + Sigma_m eta), r the softmax of those terms.
  constructor(weights, means, covariances) {
    this.parts = weights.map((weight, m) => ({ logWeight: Math.log(weight), gaussian: new Gaussian(means[m], covariances[m]) }));
    this.exact = false;
  }

  cgfGrad(eta) {
    const pairs = this.parts.map(({ gaussian }) => gaussian.cgfGrad(eta));
    const terms = pairs.map(([kappa], m) => this.parts[m].logWeight + kappa);
    const kappa = logSumExp(terms);
    const grad = new Array(eta.length).fill(0);
    pairs.forEach(([, part], m) => {
      const weight = Math.exp(terms[m] - kappa);
      for (let j = 0; j < grad.length; j++) grad[j] += weight * part[j];
    });
    return [kappa, grad];
  }

  cgf(eta) {
    return this.cgfGrad(eta)[0];
  }
}

class LatentSoftmax {
  // kappa(eta) = mu . eta + logsumexp_i(c_i . (U eta)) - log N; grad = mu + (sum_i softmax_i c_i) U.
  constructor(mean, components, coordinates) {
    Object.assign(this, { mean, components, coordinates, exact: false });
    this.logCount = Math.log(coordinates.length);
  }

  cgfGrad(eta) {
    const latent = this.components.map((row) => dot(row, eta));
    const logits = this.coordinates.map((c) => dot(c, latent) - this.logCount);
    const total = logSumExp(logits);
    const mean = new Array(latent.length).fill(0);
    this.coordinates.forEach((c, i) => {
      const weight = Math.exp(logits[i] - total);
      for (let r = 0; r < mean.length; r++) mean[r] += weight * c[r];
    });
    const grad = this.mean.slice();
    this.components.forEach((row, r) => { for (let j = 0; j < grad.length; j++) grad[j] += mean[r] * row[j]; });
    return [dot(eta, this.mean) + total, grad];
  }

  cgf(eta) {
    return this.cgfGrad(eta)[0];
  }
}

class LatentGaussian {
  // kappa(eta) = mu . eta + 1/2 (|W^T eta|^2 + sigma^2 |eta|^2); grad = mu + W W^T eta + sigma^2 eta.
  constructor(mean, loadingsT, noise) {
    Object.assign(this, { mean, loadingsT, noise, exact: false });
  }

  cgfGrad(eta) {
    const latent = this.loadingsT.map((row) => dot(row, eta));
    const kappa = dot(eta, this.mean) + 0.5 * (dot(latent, latent) + this.noise * dot(eta, eta));
    const grad = this.mean.map((value, j) => value + this.noise * eta[j]);
    this.loadingsT.forEach((row, r) => { for (let j = 0; j < grad.length; j++) grad[j] += latent[r] * row[j]; });
    return [kappa, grad];
  }

  cgf(eta) {
    return this.cgfGrad(eta)[0];
  }
}

// -- fitting (anchordiv.models.registry's fitters, for the kinds of TOY_KINDS) -----------------------
function meanOf(rows) {
  const mean = new Array(rows[0].length).fill(0);
  for (const row of rows) for (let j = 0; j < mean.length; j++) mean[j] += row[j];
  return mean.map((value) => value / rows.length);
}

// The sample covariance S = sum_i (x_i - mu)(x_i - mu)^T / N and the centred rows.
function sampleCovariance(rows, mean) {
  const d = mean.length;
  const centred = rows.map((row) => row.map((value, j) => value - mean[j]));
  const sample = Array.from({ length: d }, () => new Array(d).fill(0));
  for (const row of centred) for (let a = 0; a < d; a++) for (let b = 0; b < d; b++) sample[a][b] += row[a] * row[b];
  return [sample.map((row) => row.map((value) => value / rows.length)), centred];
}

function identityTimes(d, value) {
  return Array.from({ length: d }, (_, a) => Array.from({ length: d }, (__, b) => (a === b ? value : 0)));
}

// Whether every row is the same (anchordiv.models.base.is_single_point).
function singlePoint(rows) {
  return rows.every((row) => row.every((value, j) => value === rows[0][j]));
}

function distinctCount(rows) {
  return new Set(rows.map((row) => row.join(","))).size;
}

// Ledoit-Wolf (anchordiv.models.gaussian.ledoit_wolf_covariance): Sigma = (1 - a) S + a m I with
// m = tr(S) / d and a = min(beta, delta) / delta, beta = (sum_i |x_i - mu|^4 / N - |S|_F^2) / (d N),
// delta = (|S|_F^2 - 2 m tr(S) + d m^2) / d (a = 0 where beta <= 0 or delta = 0).
function ledoitWolf(rows, mean) {
  const [sample, centred] = sampleCovariance(rows, mean);
  const d = mean.length;
  const n = rows.length;
  let trace = 0;
  let squaredNorm = 0;
  for (let a = 0; a < d; a++) {
    trace += sample[a][a];
    for (let b = 0; b < d; b++) squaredNorm += sample[a][b] ** 2;
  }
  const mu = trace / d;
  let fourth = 0;
  for (const row of centred) fourth += dot(row, row) ** 2;
  const beta = (fourth / n - squaredNorm) / (d * n);
  const delta = (squaredNorm - 2.0 * mu * trace + d * mu ** 2) / d;
  const shrinkage = beta <= 0 || delta === 0 ? 0 : Math.min(beta, delta) / delta;
  return sample.map((row, a) => row.map((value, b) => (1 - shrinkage) * value + (a === b ? shrinkage * mu : 0)));
}

function fitGaussian(anchors, notes) {
  const mean = meanOf(anchors);
  if (singlePoint(anchors)) {
    notes.push(`One anchor (or copies of one) has no covariance; using a ridge Sigma = ${SINGLE_ANCHOR_RIDGE} I `
               + "(a scaled cosine geometry).");
    return new Gaussian(mean, sampleCovariance(anchors, mean)[0].map((row, a) => row.map(
      (value, b) => value + (a === b ? SINGLE_ANCHOR_RIDGE : 0))));
  }
  return new Gaussian(mean, ledoitWolf(anchors, mean));
}

// Cholesky factor L (lower, L L^T = A) of a small symmetric matrix; null when A is not positive definite.
function cholesky(matrix) {
  const d = matrix.length;
  const lower = Array.from({ length: d }, () => new Array(d).fill(0));
  for (let a = 0; a < d; a++) {
    for (let b = 0; b <= a; b++) {
      let total = matrix[a][b];
      for (let k = 0; k < b; k++) total -= lower[a][k] * lower[b][k];
      if (a === b) {
        if (!(total > 0)) return null;
        lower[a][a] = Math.sqrt(total);
      } else lower[a][b] = total / lower[b][b];
    }
  }
  return lower;
}

// EM's M-step (anchordiv/models/em.py, full covariances): n_k = sum_i r_ik + 10 eps, pi_k = n_k / N,
// mu_k = sum_i r_ik x_i / n_k, Sigma_k = sum_i (r_ik / n_k) x_i x_i^T - (2 - sum_i r_ik / n_k) mu_k mu_k^T
// + reg I (the centred scatter written without centred copies, as em.py writes it).
function mStep(x, resp) {
  const d = x[0].length;
  return resp[0].map((_, k) => {
    let mass = 0;
    for (const row of resp) mass += row[k];
    const nk = mass + 10 * EPS;
    const mean = new Array(d).fill(0);
    const scatter = Array.from({ length: d }, () => new Array(d).fill(0));
    x.forEach((point, i) => {
      const weight = resp[i][k] / nk;
      for (let a = 0; a < d; a++) {
        mean[a] += resp[i][k] * point[a];
        for (let b = 0; b < d; b++) scatter[a][b] += weight * point[a] * point[b];
      }
    });
    for (let a = 0; a < d; a++) mean[a] /= nk;
    const c = 2 - mass / nk;
    const covariance = scatter.map((row, a) => row.map((value, b) => value - c * mean[a] * mean[b] + (a === b ? GMM_REG_COVAR : 0)));
    return { weight: nk / x.length, mean, covariance };
  });
}

// EM's E-step: log sum_m pi_m N(x_i | mu_m, Sigma_m) per anchor, and the log responsibilities.
function eStep(x, parts) {
  const d = x[0].length;
  const factors = parts.map(({ covariance }) => {
    const lower = cholesky(covariance);
    if (lower === null) {
      throw new Error("A mixture component's covariance is not positive definite (too few or duplicate anchors "
                      + "for it); increase reg_covar, use fewer components, or covariance_type='diag'.");
    }
    return lower;
  });
  const logNorms = [];
  const logResp = x.map((point) => {
    const weighted = parts.map(({ weight, mean }, m) => {
      const lower = factors[m];
      const z = new Array(d);  // L z = x - mu, so |z|^2 = (x - mu)^T Sigma^-1 (x - mu)
      let logDet = 0;
      for (let a = 0; a < d; a++) {
        let total = point[a] - mean[a];
        for (let b = 0; b < a; b++) total -= lower[a][b] * z[b];
        z[a] = total / lower[a][a];
        logDet -= Math.log(lower[a][a]);
      }
      return -0.5 * (d * Math.log(2 * Math.PI) + dot(z, z)) + logDet + Math.log(weight);
    });
    const norm = logSumExp(weighted);
    logNorms.push(norm);
    return weighted.map((value) => value - norm);
  });
  return [logNorms, logResp];
}

// EM from the labels of a first clustering (em.py: one-hot labels as the first responsibilities, then
// E and M steps until the mean log-likelihood changes by less than GMM_TOL, at most GMM_MAX_ITER).
function gaussianMixtureEM(x, labels, count) {
  let parts = mStep(x, labels.map((label) => Array.from({ length: count }, (_, k) => (k === label ? 1 : 0))));
  let lowerBound = -Infinity;
  for (let iteration = 1; iteration <= GMM_MAX_ITER; iteration++) {
    const previous = lowerBound;
    const [logNorms, logResp] = eStep(x, parts);
    parts = mStep(x, logResp.map((row) => row.map(Math.exp)));
    lowerBound = logNorms.reduce((total, value) => total + value, 0) / logNorms.length;
    if (Math.abs(lowerBound - previous) < GMM_TOL) break;
  }
  return parts;
}

// k-means labels when the server's (scikit-learn's, from em.py) are not at hand: Lloyd's algorithm
// from the farthest-first choice of centres (the first anchor, then each time the anchor farthest
// from the centres so far). A stand-in: scikit-learn's k-means++ draws its start at random.
export function kMeansLabels(x, count) {
  const centres = [x[0]];
  while (centres.length < count) {
    let best = 0;
    let bestDistance = -1;
    x.forEach((point, i) => {
      const nearest = Math.min(...centres.map((centre) => squaredDistance(point, centre)));
      if (nearest > bestDistance) { best = i; bestDistance = nearest; }
    });
    centres.push(x[best]);
  }
  let labels = null;
  for (let iteration = 0; iteration < 300; iteration++) {
    const next = x.map((point) => nearestIndex(point, centres));
    if (labels !== null && next.every((label, i) => label === labels[i])) break;
    labels = next;
    for (let k = 0; k < count; k++) {
      const members = x.filter((_, i) => labels[i] === k);
      if (members.length) centres[k] = meanOf(members);
    }
  }
  return labels;
}

function squaredDistance(a, b) {
  let total = 0;
  for (let j = 0; j < a.length; j++) total += (a[j] - b[j]) ** 2;
  return total;
}

function nearestIndex(point, centres) {
  let best = 0;
  centres.forEach((centre, k) => { if (squaredDistance(point, centre) < squaredDistance(point, centres[best])) best = k; });
  return best;
}

// The number of GMM components a set of anchors supports (registry._gmm): max(1, min(4, floor(N / 8),
// distinct anchors)).
export function gmmComponentCount(anchors) {
  return Math.max(1, Math.min(GMM_COMPONENTS, Math.floor(anchors.length / ANCHORS_PER_COMPONENT), distinctCount(anchors)));
}

// labels: the k-means labels to start EM from (one per anchor, each in 0..M-1, every one used), as
// the server's fit had them; otherwise (or when they do not fit) kMeansLabels'. Sets fitted.exact
// to whether EM started from given labels, the library's start.
function fitGaussianMixture(anchors, notes, labels, fitted) {
  const count = gmmComponentCount(anchors);
  if (count !== GMM_COMPONENTS) {
    const distinct = distinctCount(anchors);
    const duplicates = distinct < anchors.length ? `, ${distinct} of them distinct,` : "";
    notes.push(`${anchors.length} anchor(s)${duplicates} support at most ${count} component(s) (at least `
               + `${ANCHORS_PER_COMPONENT} anchors each, one distinct anchor at least); using ${count}.`);
  }
  let start = count === 1 ? anchors.map(() => 0) : null;
  if (start === null && validLabels(labels, anchors.length, count)) start = labels;
  fitted.startedFromLabels = count === 1 || start !== null;
  if (start === null) start = kMeansLabels(anchors, count);
  fitted.labels = start;
  const parts = gaussianMixtureEM(anchors, start, count);
  return new GaussianMixture(parts.map((part) => part.weight), parts.map((part) => part.mean),
                             parts.map((part) => part.covariance));
}

function validLabels(labels, n, count) {
  return Array.isArray(labels) && labels.length === n && labels.every((label) => Number.isInteger(label) && label >= 0 && label < count)
    && new Set(labels).size === count;
}

// Eigenvalues (descending) and unit eigenvectors of a small symmetric matrix, by cyclic Jacobi
// rotations until the off-diagonal part is round-off.
export function symmetricEigen(matrix) {
  const d = matrix.length;
  const a = matrix.map((row) => row.slice());
  const v = identityTimes(d, 1);
  for (let sweep = 0; sweep < 64; sweep++) {
    let off = 0;
    for (let p = 0; p < d; p++) for (let q = p + 1; q < d; q++) off += a[p][q] ** 2;
    if (off === 0 || off < 1e-300) break;
    for (let p = 0; p < d; p++) {
      for (let q = p + 1; q < d; q++) {
        if (a[p][q] === 0) continue;
        // The rotation by angle t in the (p, q) plane that zeroes a[p][q]: tan 2t = 2 a_pq / (a_qq - a_pp).
        const theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < d; k++) {
          const kp = a[k][p];
          const kq = a[k][q];
          a[k][p] = c * kp - s * kq;
          a[k][q] = s * kp + c * kq;
        }
        for (let k = 0; k < d; k++) {
          const pk = a[p][k];
          const qk = a[q][k];
          a[p][k] = c * pk - s * qk;
          a[q][k] = s * pk + c * qk;
        }
        for (let k = 0; k < d; k++) {
          const kp = v[k][p];
          const kq = v[k][q];
          v[k][p] = c * kp - s * kq;
          v[k][q] = s * kp + c * kq;
        }
      }
    }
  }
  const order = [...Array(d).keys()].sort((i, j) => a[j][j] - a[i][i]);
  return { values: order.map((i) => a[i][i]), vectors: order.map((i) => v.map((row) => row[i])) };
}

// The latent kinds (registry._latent and anchordiv.models.empirical.principal_subspace): the anchors'
// mean, their covariance's top r eigenvectors U (r, d) and all its eigenvalues, r = min(32, N - 1, d - 1).
function principalSubspace(anchors, notes) {
  const n = anchors.length;
  const d = anchors[0].length;
  const distinct = distinctCount(anchors);
  const limit = Math.min(distinct - 1, d - 1);
  if (limit < 1) throw new Error("a latent model needs at least two distinct anchors; add anchors or choose another model");
  const rank = Math.min(LATENT_RANK, limit);
  if (rank !== LATENT_RANK) {
    const duplicates = distinct < n ? ` (${distinct} distinct)` : "";
    notes.push(`${n} anchors${duplicates} span at most ${limit} principal direction(s); using rank ${rank}.`);
  }
  const mean = meanOf(anchors);
  const { values, vectors } = symmetricEigen(sampleCovariance(anchors, mean)[0]);
  return { mean, components: vectors.slice(0, rank), values: values.map((value) => Math.max(value, 0)), rank };
}

function fitLatentSoftmax(anchors, notes) {
  const { mean, components } = principalSubspace(anchors, notes);
  const coordinates = anchors.map((gamma) => components.map((row) => dot(row, gamma.map((value, j) => value - mean[j]))));
  return new LatentSoftmax(mean, components, coordinates);
}

function fitLatentGaussian(anchors, notes) {
  const { mean, components, values, rank } = principalSubspace(anchors, notes);
  const d = mean.length;
  // Only min(N, d) eigenvalues exist (em.py takes them from an SVD); the rest are 0.
  const rest = values.slice(rank, Math.min(anchors.length, d)).reduce((total, value) => total + value, 0);
  const noise = rest / (d - rank);
  const loadingsT = components.map((row, r) => {
    const loading = Math.sqrt(Math.max(values[r] - noise, 0));
    return row.map((value) => value * loading);
  });
  return new LatentGaussian(mean, loadingsT, noise);
}

// kind fitted to one set's anchors (unit rows (N, d)): [model, notes], as anchor_model_kind(kind).fit.
// options.labels: for "gmm", the server's k-means labels (fitGaussianMixture); options.fitted gets
// what the fit says of itself.
export function fitKind(kind, anchors, options = {}) {
  const notes = [];
  const fitted = options.fitted ?? {};
  let model;
  if (kind === "softmax") {
    if (singlePoint(anchors)) {
      notes.push("With one anchor (or copies of one) every image tilts to the same distribution, so every softmax "
                 + "divergence is 0 and the ranking is arbitrary; add anchors, one per line.");
    }
    model = new Softmax(anchors);
  } else if (kind === "gaussian") model = fitGaussian(anchors, notes);
  else if (kind === "gmm") model = fitGaussianMixture(anchors, notes, options.labels, fitted);
  else if (kind === "latent-softmax") model = fitLatentSoftmax(anchors, notes);
  else if (kind === "latent-gaussian") model = fitLatentGaussian(anchors, notes);
  else throw new Error(`the toy world offers the anchor models ${JSON.stringify(TOY_KINDS)}; got ${JSON.stringify(kind)}.`);
  return [model, notes];
}

// -- the mixture of A and B -------------------------------------------------------------------------
// log w (2,) of MixtureAnchors at weights (p, 1 - p) with kappa offsets c (zeros: literal weights):
// logits log p_k - c_k, normalised so that the w sum to 1 (a weight of 0 stays -Infinity).
export function mixtureLogWeights(p, offsets) {
  const logits = [Math.log(p) - offsets[0], Math.log(1 - p) - offsets[1]];
  const total = logSumExp(logits);
  return logits.map((value) => value - total);
}

class Mixture {
  // kappa(eta) = logsumexp_k(log w_k + kappa_k(eta)); grad = sum_k r_k grad kappa_k(eta).
  constructor(models, logWeights) {
    this.models = models;
    this.logWeights = logWeights;
    this.exact = models.every((model) => model.exact);
  }

  terms(eta) {
    return this.models.map((model, k) => this.logWeights[k] + model.cgf(eta));
  }

  responsibilities(eta) {
    return softmax(this.terms(eta));
  }

  cgf(eta) {
    return logSumExp(this.terms(eta));
  }

  cgfGrad(eta) {
    const pairs = this.models.map((model) => model.cgfGrad(eta));
    const terms = pairs.map(([kappa], k) => this.logWeights[k] + kappa);
    const kappa = logSumExp(terms);
    const grad = new Array(eta.length).fill(0);
    pairs.forEach(([, part], k) => {
      const weight = Math.exp(terms[k] - kappa);
      if (weight > 0) for (let j = 0; j < grad.length; j++) grad[j] += weight * part[j];
    });
    return [kappa, grad];
  }
}

// The toy world (anchordiv.lesson.toy_geometry) at one setting:
//   world = { sets: [anchorsA, anchorsB] (unit directions, (N_k, d) each; B may be empty), kind,
//             scale, p, weighting, labels: [labelsA, labelsB] (gmm only, optional) }.
// Returns { model (the mixture at p, or A's model alone), models, names, texts, anchors, notes,
// isMixture, offsets, scale, dim, exact (the tilt is the model's own), gmmStart (whether every GMM
// started EM from given labels), labels }. Throws an Error with the library's words for a setting
// the library refuses.
export function toyGeometry(world) {
  const { kind, scale, p, weighting } = world;
  if (!TOY_KINDS.includes(kind)) throw new Error(`the toy world offers the anchor models ${JSON.stringify(TOY_KINDS)}; got ${JSON.stringify(kind)}.`);
  if (!WEIGHTINGS.includes(weighting)) throw new Error(`weighting=${JSON.stringify(weighting)}; choose one of ${JSON.stringify(WEIGHTINGS)}.`);
  if (!(p >= 0 && p <= 1)) throw new Error(`p=${p} is the weight of set A; choose a number between 0 and 1.`);
  if (!(scale > 0 && Number.isFinite(scale))) throw new Error(`scale must be a finite positive number; got ${scale}.`);
  if (!world.sets[0].length) throw new Error("set A is empty; give it at least one direction (set B may be empty).");
  const names = [];
  const anchors = [];
  const models = [];
  const notes = [];
  const labels = [];
  let gmmStart = true;
  world.sets.forEach((set, k) => {
    if (!set.length) return;
    const fitted = {};
    const [model, modelNotes] = fitKind(kind, set.map((u) => scaled(u, 1)), { labels: world.labels?.[k], fitted });
    names.push(SET_NAMES[k]);
    anchors.push(set);
    models.push(model);
    labels.push(fitted.labels ?? null);
    if (fitted.startedFromLabels === false) gmmStart = false;
    notes.push(...modelNotes.map((note) => `Set ${SET_NAMES[k]}: ${note}`));
  });
  const dims = new Set(anchors.map((set) => set[0].length));
  if (dims.size !== 1) throw new Error(`sets A and B must live in one space; got dimensions ${[...dims].sort()}.`);
  const dim = anchors[0][0].length;
  const texts = anchors.map((set, k) => set.map((u, i) => `${names[k]}${i + 1} ${directionLabel(u)}`));
  const geometry = { models, names, texts, anchors, notes, scale, dim, kind, weighting, labels, gmmStart,
                     isMixture: models.length === 2, exact: models.every((model) => model.exact) };
  if (models.length === 1) {
    notes.push("Set B is empty, so the model is set A's alone and p changes nothing.");
    geometry.offsets = [0];
    geometry.model = models[0];
  } else {
    // c_k = mean of kappa_k(s r) over the reference directions r (zeros for literal weights).
    const reference = weighting === "balanced" ? referenceDirections(dim).map((r) => scaled(r, scale)) : null;
    geometry.offsets = reference === null ? [0, 0]
      : models.map((model) => reference.reduce((total, eta) => total + model.cgf(eta), 0) / reference.length);
    geometry.model = modelAt(geometry, p);
  }
  geometry.p = p;
  return geometry;
}

// The geometry's model at weights (p, 1 - p), same components and offsets (ToyGeometry.model_at).
export function modelAt(geometry, p) {
  if (!geometry.isMixture) return geometry.models[0];
  if (!(p >= 0 && p <= 1)) throw new Error(`p=${p} is the weight of set A; choose a number between 0 and 1.`);
  return new Mixture(geometry.models, mixtureLogWeights(p, geometry.offsets));
}

// eta = s u / |u| for the geometry's scale.
export function naturalParameter(geometry, u) {
  return scaled(u, geometry.scale);
}

// D(x -> y) for every y of ys under model at scale s: kappa(eta_y) - grad_x . eta_y + (grad_x . eta_x
// - kappa(eta_x)), as AnchorModel.divergence sums it; reverse: D(y -> x).
export function divergences(model, scale, x, ys, reverse = false) {
  const etaX = scaled(x, scale);
  if (!reverse) {
    const [kappaX, gradX] = model.cgfGrad(etaX);
    const conjugate = dot(gradX, etaX) - kappaX;
    return ys.map((y) => {
      const etaY = scaled(y, scale);
      return model.cgf(etaY) - dot(gradX, etaY) + conjugate;
    });
  }
  const kappaX = model.cgf(etaX);
  return ys.map((y) => {
    const etaY = scaled(y, scale);
    const [kappaY, gradY] = model.cgfGrad(etaY);
    return kappaX - dot(gradY, etaX) + (dot(gradY, etaY) - kappaY);
  });
}

// What the model says along the circle (anchordiv.lesson.circle_profile): at n angles theta = k 360 / n,
// seen from x = u(queryDeg): angle, x, y, kappa = kappa(s u(theta)), divergence = D(x -> u(theta)),
// cosine = x . u(theta) and cosine_distance = 1 - cosine.
export function circleProfile(model, scale, queryDeg, n = 360, reverse = false) {
  const angles = Array.from({ length: n }, (_, k) => k * 360.0 / n);
  return profileAt(model, scale, circleDirection(queryDeg), angles.map(circleDirection), { angle: angles }, reverse);
}

// The sphere grid of anchordiv.lesson.sphere_profile: azimuths -180..180 and elevations -90..90 every
// stepDeg degrees, azimuth fastest.
export function sphereGrid(stepDeg = 5.0) {
  const azimuths = [];
  const elevations = [];
  const columns = Math.floor((360.0 + 1e-9) / stepDeg) + 1;
  const rows = Math.floor((180.0 + 1e-9) / stepDeg) + 1;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < columns; c++) {
      azimuths.push(-180.0 + c * stepDeg);
      elevations.push(-90.0 + r * stepDeg);
    }
  }
  return { azimuth: azimuths, elevation: elevations, columns, rows };
}

// What a 3-D model says over the sphere (anchordiv.lesson.sphere_profile), seen from
// x = u(azimuth, elevation): the grid's azimuth and elevation, with kappa, divergence, cosine and
// cosine_distance as in circleProfile; also columns and rows (the grid's shape).
export function sphereProfile(model, scale, azimuthDeg, elevationDeg, stepDeg = 5.0, reverse = false) {
  const grid = sphereGrid(stepDeg);
  const directions = grid.azimuth.map((azimuth, i) => sphereDirection(azimuth, grid.elevation[i]));
  const profile = profileAt(model, scale, sphereDirection(azimuthDeg, elevationDeg), directions,
                            { azimuth: grid.azimuth, elevation: grid.elevation }, reverse);
  return Object.assign(profile, { columns: grid.columns, rows: grid.rows });
}

function profileAt(model, scale, query, directions, columns, reverse) {
  const cosine = directions.map((u) => dot(u, query));
  return {
    ...columns,
    x: directions.map((u) => u[0]),
    y: directions.map((u) => u[1]),
    kappa: directions.map((u) => model.cgf(scaled(u, scale))),
    divergence: divergences(model, scale, query, directions, reverse),
    cosine,
    cosine_distance: cosine.map((value) => 1.0 - value),
  };
}

// The query's neighbourhood on the circle under each geometry, at one size
// (anchordiv.lesson.equal_size_neighbourhoods): near_by_cosine holds the directions with
// cosine >= cos(width / 2) (an arc of widthDeg degrees centred on the query); near_by_divergence as
// many of them, those of smallest divergence (ties by position, as a stable sort).
export function equalSizeNeighbourhoods(profile, widthDeg) {
  if (!(widthDeg > 0 && widthDeg <= 360)) throw new Error(`width_deg=${widthDeg} must be in (0, 360]: the width of the cosine arc in degrees.`);
  const threshold = Math.cos((widthDeg / 2.0) * DEG) - 1e-12;
  const nearByCosine = profile.cosine.map((value) => value >= threshold);
  const count = Math.max(1, nearByCosine.filter(Boolean).length);
  const order = profile.divergence.map((_, i) => i).sort((i, j) => profile.divergence[i] - profile.divergence[j] || i - j);
  const nearByDivergence = new Array(profile.divergence.length).fill(false);
  for (const i of order.slice(0, count)) nearByDivergence[i] = true;
  return { near_by_cosine: nearByCosine, near_by_divergence: nearByDivergence, count };
}

// The tilted distribution p(gamma_i | eta) over every anchor, A's first (ToyGeometry.tilt through
// anchordiv.explain.tilted_distribution): within set k the softmax of gamma_i . eta + log w_i (the
// softmax model's own tilt; for the other kinds the softmax tilt stands in, as the page says), times
// the set's responsibility r_k(eta) when there are two sets. { probabilities, sets, texts, exact }.
// In float64 throughout; the library takes the query as an image embedding, at float32, so its
// tilt carries float32's round-off (tests/test_toy_world_math.py says how much).
export function tilt(geometry, u, model = geometry.model) {
  const eta = scaled(u, geometry.scale);
  const shares = geometry.isMixture ? model.responsibilities(eta).map(Math.log) : [0];
  const logs = [];
  geometry.anchors.forEach((set, k) => {
    const logTilt = set.map((gamma) => dot(scaled(gamma, 1), eta) - Math.log(set.length));
    const total = logSumExp(logTilt);
    for (const value of logTilt) logs.push(value - total + shares[k]);
  });
  const probabilities = logs.map(Math.exp);
  const sum = probabilities.reduce((total, value) => total + value, 0);
  return {
    probabilities: probabilities.map((value) => value / sum),
    sets: geometry.anchors.flatMap((set, k) => set.map(() => geometry.names[k])),
    texts: geometry.texts.flat(),
    exact: geometry.exact,
  };
}

// [r_A, r_B] of direction u at weights (p, 1 - p): MixtureAnchors.responsibilities.
export function responsibilities(geometry, u, p = geometry.p) {
  if (!geometry.isMixture) throw new Error("responsibilities need two anchor sets (a mixture); set B is empty, so A has it all.");
  return modelAt(geometry, p).responsibilities(scaled(u, geometry.scale));
}

// np.linspace(0, 1, count) as numpy computes it: k * (1 / (count - 1)), the last exactly 1.
export function linspace01(count = 21) {
  const step = 1.0 / (count - 1);
  return Array.from({ length: count }, (_, k) => (k === count - 1 ? 1.0 : k * step));
}

// A's responsibility for u at each p of ps (anchordiv.lesson.responsibility_curve's "A" rows).
export function responsibilityCurve(geometry, u, ps = linspace01(21)) {
  return ps.map((p) => responsibilities(geometry, u, p)[0]);
}

// The p at which set A takes half of u's tilt, r_A(s u) = 1/2, by bisection to within tolerance
// (anchordiv.lesson.even_share_p: r_A grows with p from 0 to 1, so the crossing exists).
export function evenShareP(geometry, u, tolerance = 1e-4) {
  let low = 0.0;
  let high = 1.0;
  while (high - low > tolerance) {
    const middle = (low + high) / 2.0;
    if (responsibilities(geometry, u, middle)[0] < 0.5) low = middle;
    else high = middle;
  }
  return (low + high) / 2.0;
}
