// Workloads: every federated Deployment, StatefulSet, DaemonSet and Job the
// user may list, with replicas per cluster (scheduled by the federation vs
// ready in the member, as bars), rollout waves, drift and conditions.

import {collection, proxy} from '../api.js';
import {liveList, Watches} from '../live.js';
import {alertBox, bar, condText, h, readError, replaceKeepingFocus} from '../dom.js';

export const FED = '/apis/federation/v1beta1';
const MANAGED = 'labelSelector=federation.kubernetes.io%2Fmanaged%3Dtrue';

/** The workload kinds the page shows. */
export const KINDS = [
  {kind: 'Deployment', group: 'apps', version: 'v1', resource: 'deployments'},
  {kind: 'StatefulSet', group: 'apps', version: 'v1', resource: 'statefulsets'},
  {kind: 'DaemonSet', group: 'apps', version: 'v1', resource: 'daemonsets'},
  {kind: 'Job', group: 'batch', version: 'v1', resource: 'jobs'},
];

/** Desired and ready counts of a workload (or of a member's copy). */
export function counts(kind, o) {
  const s = o.status || {};
  switch (kind) {
    case 'DaemonSet': return {want: s.desiredNumberScheduled ?? 0, ready: s.numberReady ?? 0};
    case 'Job': return {want: o.spec?.completions ?? o.spec?.parallelism ?? 1, ready: s.succeeded ?? 0};
    default: return {want: o.spec?.replicas ?? 1, ready: s.readyReplicas ?? 0};
  }
}

/** The PropagationRecord's name of an object. */
export const recordName = (k, name) => `${name}.${k.resource}${k.group ? `.${k.group}` : ''}`;

/** "wave 1 of 2 under way" etc. from a record's status.rollout. */
export function rolloutText(record) {
  const r = record && record.status && record.status.rollout;
  if (!r) return 'no rollout strategy (every cluster at once)';
  if (r.halted) return `halted in wave ${r.wave} of ${r.waves}: ${r.halted}`;
  if (r.wave >= r.waves && r.healthySince) return `done: ${r.waves} of ${r.waves} waves`;
  return `wave ${r.wave} of ${r.waves} under way${r.waveStarted ? '' : ' (paused)'}`;
}

/** One row per cluster of the record: scheduled vs ready, state, wave, drift. */
export function clusterRows(k, obj, record, copies, clusterReady) {
  const rows = [];
  for (const c of (record && record.status && record.status.clusters) || []) {
    const copy = copies.get(`${c.name}/${obj.metadata.namespace || ''}/${obj.metadata.name}`);
    const scheduled = c.replicas ?? (copy ? counts(k.kind, copy).want : null);
    const readyN = copy ? counts(k.kind, copy).ready : null;
    const down = clusterReady && clusterReady.get(c.name) === false;
    const text = `${readyN ?? '?'} ready of ${scheduled ?? '?'} scheduled${down ? ' (cluster not Ready)' : ''}`;
    rows.push({
      name: c.name, state: c.state, message: c.message, scheduled, ready: readyN,
      bar: bar(readyN ?? 0, scheduled ?? 0, text),
      wave: c.wave ? `wave ${c.wave}: ${c.waveState || ''}` : '',
      drift: (c.drift || []).length, driftList: c.drift || [],
    });
  }
  return rows;
}

/**
 * Member copies of `kinds` in every cluster, through the proxy as the
 * user, kept in `copies` (key "cluster/namespace/name"); `redraw` on change.
 */
export function followCopies(watches, clusterNames, kinds, copies, redraw, scope = MANAGED) {
  const keep = new Set();
  for (const cluster of clusterNames) {
    for (const k of kinds) {
      const key = `${cluster}|${k.kind}`;
      keep.add(key);
      watches.ensure(key, () => liveList(proxy(cluster) + collection(k), ({items, error}) => {
        if (error) return; // the cluster is away or unreadable: the rows say '?'
        for (const ck of [...copies.keys()]) if (ck.startsWith(`${cluster}/`) && copies.get(ck).kind === k.kind) copies.delete(ck);
        for (const o of items) copies.set(`${cluster}/${o.metadata.namespace || ''}/${o.metadata.name}`, {...o, kind: k.kind});
        redraw();
      }, scope));
    }
  }
  watches.retain((key) => !key.includes('|') || keep.has(key));
}

export function render(main) {
  const body = h('div', {'aria-live': 'polite'});
  main.append(h('h1', {}, 'Workloads'), body);
  const lists = new Map(); const errors = new Map();
  let records = new Map(); let recordsErr = null;
  const copies = new Map(); const clusterReady = new Map();
  const watches = new Watches();
  let scheduled = false;
  const redraw = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; draw(); }); } };
  const draw = () => {
    const out = [];
    for (const [kind, err] of errors) out.push(readError(err, `${kind}s`));
    if (recordsErr) out.push(alertBox(`Per-cluster placement is not shown: ${recordsErr.message}`, 'note'));
    const rows = [];
    for (const k of KINDS) for (const o of lists.get(k.kind) || []) rows.push([k, o]);
    if (rows.length === 0 && errors.size < KINDS.length) out.push(h('p', {}, 'No federated workload yet.'));
    rows.sort((a, b) => `${a[1].metadata.namespace}/${a[1].metadata.name}`.localeCompare(`${b[1].metadata.namespace}/${b[1].metadata.name}`));
    for (const [k, o] of rows) {
      const ns = o.metadata.namespace; const name = o.metadata.name;
      const record = records.get(`${ns}/${recordName(k, name)}`);
      const total = counts(k.kind, o);
      const per = clusterRows(k, o, record, copies, clusterReady);
      const conds = (o.status?.conditions || []).map((c) => `${c.type} ${condText(c.status)}${c.reason ? ` (${c.reason})` : ''}`);
      const drift = per.filter((p) => p.drift).map((p) => `${p.name}: ${p.drift} field(s)`);
      out.push(h('article', {class: 'workload', 'data-workload': `${ns}/${name}`},
        h('h2', {}, h('a', {href: `#/object/${k.group}/${k.version}/${k.resource}/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`},
          `${k.kind} ${ns}/${name}`)),
        h('p', {class: 'total'}, `${total.ready} ready of ${total.want} wanted in the federation`),
        per.length ? h('ul', {class: 'per-cluster', 'aria-label': 'Replicas per cluster'}, per.map((p) =>
          h('li', {'data-cluster': p.name}, h('span', {class: 'cname'}, `${p.name} (${p.state})`), p.bar)))
          : h('p', {}, record ? 'Placed on no cluster.' : 'Not propagated yet (or its record is unreadable).'),
        h('p', {}, h('strong', {}, 'Rollout: '), rolloutText(record),
          per.some((p) => p.wave) ? ` — ${per.filter((p) => p.wave).map((p) => `${p.name} ${p.wave}`).join(', ')}` : ''),
        h('p', {}, h('strong', {}, 'Drift: '), drift.length ? drift.join(', ') : 'none'),
        h('p', {}, h('strong', {}, 'Conditions: '), conds.length ? conds.join('; ') : 'none reported')));
    }
    replaceKeepingFocus(body, out);
  };
  for (const k of KINDS) {
    watches.ensure(k.kind, () => liveList(collection(k), ({items, error}) => {
      if (error) errors.set(k.kind, error); else { errors.delete(k.kind); lists.set(k.kind, items); }
      redraw();
    }));
  }
  watches.ensure('records', () => liveList(`${FED}/propagationrecords`, ({items, error}) => {
    recordsErr = error;
    if (!error) records = new Map(items.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r]));
    redraw();
  }));
  watches.ensure('clusters', () => liveList(`${FED}/clusters`, ({items, error}) => {
    if (error) return;
    clusterReady.clear();
    for (const c of items) {
      const cond = (c.status?.conditions || []).find((x) => x.type === 'Ready');
      clusterReady.set(c.metadata.name, Boolean(cond && cond.status === 'True'));
    }
    followCopies(watches, [...clusterReady.keys()], KINDS, copies, redraw);
    redraw();
  }));
  draw();
  return {stop() { watches.stop(); }};
}
