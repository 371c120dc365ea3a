// Live lists: list, then follow a watch (`?watch=1&resourceVersion=…`, the
// streamed body read line by line). A 410 Gone re-lists; a dropped stream
// watches again from the last resourceVersion; errors retry with backoff
// (0.5 s doubling to 10 s). No polling loop.

import {check, headers, request} from './api.js';

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/**
 * Follows the collection at `path` (with `query`, e.g. a label selector);
 * calls `onUpdate({items, error})` after the list and each event. A 401
 * stops it (the page signs out), a 403 or 404 too (reported once).
 * Returns {stop}.
 */
export function liveList(path, onUpdate, query = '') {
  const ctl = new AbortController();
  const items = new Map();
  let rv = '';
  let stopped = false;
  const key = (o) => `${o.metadata.namespace || ''}/${o.metadata.name}`;
  const emit = (error) => { if (!stopped) onUpdate({items: [...items.values()], error: error || null}); };
  const q = (extra) => [query, extra].filter(Boolean).join('&');

  async function list() {
    const l = await request(`${path}?${q('')}`, {signal: ctl.signal});
    items.clear();
    for (const o of (l && l.items) || []) items.set(key(o), o);
    rv = (l && l.metadata && l.metadata.resourceVersion) || '';
    emit();
  }

  // Resolves 'gone' (re-list) or 'ended' (watch again); throws on errors.
  async function watch() {
    const url = `${path}?${q(`watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`)}`;
    const r = await check(await fetch(url, {headers: headers(), signal: ctl.signal, cache: 'no-store'}));
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return 'ended';
      buf += value;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        const o = ev.object || {};
        if (ev.type === 'ERROR') {
          if (o.code === 410) return 'gone';
          const err = new Error(o.message || 'watch error');
          err.status = o.code;
          throw err;
        }
        if (o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') items.delete(key(o));
        else items.set(key(o), o);
        emit();
      }
    }
  }

  (async () => {
    let relist = true;
    let delay = 500;
    while (!stopped) {
      const started = Date.now();
      try {
        if (relist) { await list(); relist = false; }
        if ((await watch()) === 'gone') relist = true;
        if (Date.now() - started > 5000) delay = 500;
        else { await sleep(delay); delay = Math.min(delay * 2, 10000); }
      } catch (err) {
        if (stopped || err.name === 'AbortError') return;
        emit(err);
        if (err.status === 401 || err.status === 403 || err.status === 404) return;
        relist = true;
        await sleep(delay);
        delay = Math.min(delay * 2, 10000);
      }
    }
  })();
  return {stop() { stopped = true; ctl.abort(); }};
}

/** Several live lists stopped together. */
export class Watches {
  constructor() { this.all = new Map(); }
  /** Starts `key`'s list unless it runs already. */
  ensure(key, start) { if (!this.all.has(key)) this.all.set(key, start()); }
  /** Stops the lists whose key `keep` refuses. */
  retain(keep) {
    for (const [k, w] of this.all) if (!keep(k)) { w.stop(); this.all.delete(k); }
  }
  stop() { this.retain(() => false); }
}
