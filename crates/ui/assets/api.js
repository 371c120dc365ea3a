// Every request of the page: the user's bearer token on each, so the
// server's RBAC decides what the page shows.

const KEY = 'ubernetes.dashboard.token';

export const token = () => sessionStorage.getItem(KEY);
export function signIn(t) { sessionStorage.setItem(KEY, t.trim()); }
export function signOut() { sessionStorage.removeItem(KEY); reviews.clear(); }

/** A failed API call: the HTTP status and the Status' message. */
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.reason = body && body.reason;
  }
}

let unauthorized = () => {};
/** Called with the error whenever the server answers 401. */
export function onUnauthorized(f) { unauthorized = f; }

export function headers(extra = {}) {
  return {Accept: 'application/json', Authorization: `Bearer ${token() || ''}`, ...extra};
}

/** Throws ApiError for a non-2xx answer (and reports a 401). */
export async function check(r) {
  if (r.ok) return r;
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch { body = {message: text.trim()}; }
  const err = new ApiError(r.status, body);
  if (r.status === 401) unauthorized(err);
  throw err;
}

/** A JSON request; `body` is sent as JSON (or merge patch for PATCH). */
export async function request(path, {method = 'GET', body, signal} = {}) {
  const extra = body === undefined ? {} : {
    'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
  };
  const r = await check(await fetch(path, {
    method, headers: headers(extra), signal, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
  const text = await r.text();
  return text ? JSON.parse(text) : null;
}

/** Who the token is (SelfSubjectReview). */
export async function whoAmI() {
  const r = await request('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    method: 'POST',
    body: {apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview'},
  });
  return (r && r.status && r.status.userInfo) || {};
}

const reviews = new Map();
/**
 * Whether the user may `verb` the resource (SelfSubjectAccessReview,
 * remembered for the session): write buttons are shown only when it says so.
 */
export function can(verb, resource, {group = '', namespace, name, subresource} = {}) {
  const attrs = {verb, group, resource, namespace, name, subresource};
  const key = JSON.stringify(attrs);
  if (!reviews.has(key)) {
    reviews.set(key, request('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      method: 'POST',
      body: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
        spec: {resourceAttributes: attrs},
      },
    }).then((r) => Boolean(r && r.status && r.status.allowed), () => false));
  }
  return reviews.get(key);
}

/** The URL of a collection: core (`group` '') or grouped, namespaced or not. */
export function collection({group = '', version = 'v1', resource}, namespace) {
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${base}/${resource}`;
}

/** The cluster proxy's prefix for member `cluster`. */
export const proxy = (cluster) => `/apis/federation/v1beta1/clusters/${encodeURIComponent(cluster)}/proxy`;
