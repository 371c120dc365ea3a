// One federated object: its propagation record per cluster (state,
// replicas scheduled vs ready, wave, drift as a diff), placement,
// overrides, its Events (the federation's and the members' mirrored ones),
// and the write buttons the user may use (SelfSubjectAccessReview).

import {can, collection, request} from '../api.js';
import {liveList, Watches} from '../live.js';
import {alertBox, condText, h, prettyJson, readError, replaceKeepingFocus, since, table} from '../dom.js';
import {FED, KINDS, clusterRows, counts, followCopies, recordName, rolloutText} from './workloads.js';

const ANNOTATIONS = [
  ['federation.alpha.kubernetes.io/cluster-selector', 'Placement (cluster selector)', 'every cluster (no selector)'],
  ['federation.kubernetes.io/overrides', 'Overrides per cluster', 'none'],
  ['federation.kubernetes.io/deployment-preferences', 'Replica preferences', 'weight 1 on every cluster (the default)'],
  ['federation.kubernetes.io/replica-set-preferences', 'Replica preferences', null],
  ['federation.kubernetes.io/rollout-strategy', 'Rollout strategy', 'none (every cluster at once)'],
  ['federation.kubernetes.io/drift-policy', 'Drift policy', 'Repair (the default)'],
];

function actions(k, obj, box) {
  const ns = obj.metadata.namespace; const name = obj.metadata.name;
  const path = `${collection(k, ns)}/${encodeURIComponent(name)}`;
  const attrs = {group: k.group, namespace: ns, name};
  const status = h('p', {role: 'status', class: 'action-status'});
  const run = (label, patch) => async () => {
    status.textContent = `${label}…`;
    try { await request(path, {method: 'PATCH', body: patch}); status.textContent = `${label}: done.`; }
    catch (err) { status.textContent = `${label} failed: ${err.message}`; }
  };
  const buttons = [];
  Promise.all([can('patch', k.resource, attrs), can('patch', k.resource, {...attrs, subresource: 'scale'})]).then(([patch, scale]) => {
    if (k.kind === 'Deployment' && patch) {
      const paused = Boolean(obj.spec && obj.spec.paused);
      buttons.push(h('button', {type: 'button', 'data-write': 'pause', onclick: run(paused ? 'Resume rollout' : 'Pause rollout', {spec: {paused: !paused}})},
        paused ? 'Resume rollout' : 'Pause rollout'));
    }
    if (k.kind !== 'DaemonSet' && k.kind !== 'Job' && patch && scale) {
      const n = obj.spec?.replicas ?? 1;
      buttons.push(h('button', {type: 'button', 'data-write': 'scale-up', onclick: run(`Scale to ${n + 1}`, {spec: {replicas: n + 1}})}, `Scale up to ${n + 1}`));
      if (n > 0) buttons.push(h('button', {type: 'button', 'data-write': 'scale-down', onclick: run(`Scale to ${n - 1}`, {spec: {replicas: n - 1}})}, `Scale down to ${n - 1}`));
    }
    box.replaceChildren(h('h2', {}, 'Actions'), buttons.length ? h('div', {class: 'actions'}, buttons)
      : h('p', {}, 'You may not change this object (read only).'), status);
  });
}

export function render(main, group, version, resource, namespace, name) {
  const k = KINDS.find((x) => x.group === group && x.resource === resource)
    || {kind: resource, group, version, resource};
  main.append(h('p', {}, h('a', {href: '#/workloads'}, '← Workloads')), h('h1', {}, `${k.kind} ${namespace}/${name}`));
  const summary = h('section', {'aria-live': 'polite'}, h('p', {}, 'Loading…'));
  const actionBox = h('section', {}); const clustersBox = h('section', {'aria-live': 'polite'});
  const settings = h('section', {}); const eventsBox = h('section', {'aria-live': 'polite'});
  main.append(summary, actionBox, clustersBox, settings, eventsBox);
  let obj = null; let record = null; let recordErr = null; let events = []; let eventsErr = null;
  const copies = new Map(); const clusterReady = new Map();
  const watches = new Watches();
  let lastActions = '';
  const byName = `fieldSelector=metadata.name%3D${encodeURIComponent(name)}`;
  const draw = () => {
    if (!obj) return;
    const total = counts(k.kind, obj);
    summary.replaceChildren(
      h('p', {class: 'total'}, `${total.ready} ready of ${total.want} wanted in the federation.`),
      h('p', {}, h('strong', {}, 'Conditions: '), (obj.status?.conditions || []).map((c) =>
        `${c.type} ${condText(c.status)}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}`).join('; ') || 'none reported'),
      h('p', {}, h('strong', {}, 'Rollout: '), rolloutText(record)));
    const key = `${obj.metadata.resourceVersion}`;
    if (key !== lastActions) { lastActions = key; actions(k, obj, actionBox); }
    const per = clusterRows(k, obj, record, copies, clusterReady);
    const drifted = per.filter((p) => p.drift);
    replaceKeepingFocus(clustersBox, [h('h2', {}, 'Per cluster'),
      recordErr ? readError(recordErr, 'its propagation record') : null,
      !recordErr && !record ? h('p', {}, 'No propagation record yet.') : null,
      per.length ? table('Propagation per cluster', ['Cluster', 'State', 'Replicas', 'Wave', 'Drift', 'Message'],
        per.map((p) => [p.name, p.state, p.bar, p.wave || '-', p.drift ? `${p.drift} field(s)` : 'none', p.message || ''])) : null,
      drifted.length ? [h('h3', {}, 'Drift (the member\'s values differ)'), drifted.map((p) =>
        h('div', {class: 'diff', 'aria-label': `Drift in ${p.name}`}, h('h4', {}, p.name), p.driftList.map((d) =>
          h('pre', {}, h('span', {class: 'del'}, `- ${d.path}: ${d.ours}  (federation)\n`),
            h('span', {class: 'add'}, d.theirs === undefined || d.theirs === null
              ? `+ ${d.path}: removed in the member` : `+ ${d.path}: ${d.theirs}  (member)`)))))] : null]);
    const ann = obj.metadata.annotations || {};
    settings.replaceChildren(h('h2', {}, 'Placement and overrides'), h('dl', {}, ANNOTATIONS
      .filter(([a, , dflt]) => ann[a] !== undefined || dflt !== null)
      .map(([a, label, dflt]) => [h('dt', {}, label), h('dd', {}, ann[a] !== undefined ? h('pre', {}, prettyJson(ann[a])) : dflt)])));
    const mine = events.filter((e) => !e.involvedObject || !e.involvedObject.kind || e.involvedObject.kind === k.kind)
      .sort((a, b) => String(b.lastTimestamp || b.eventTime || '').localeCompare(String(a.lastTimestamp || a.eventTime || '')));
    eventsBox.replaceChildren(h('h2', {}, 'Events'), eventsErr ? readError(eventsErr, 'Events')
      : mine.length === 0 ? h('p', {}, 'No events.') : table('Events of this object', ['Type', 'Reason', 'Message', 'From', 'Count', 'Last seen'],
        mine.map((e) => [e.type === 'Warning' ? '⚠ Warning' : e.type || '', e.reason || '', e.message || '',
          e.source?.component || e.reportingComponent || '', e.count ?? 1, since(e.lastTimestamp || e.eventTime)])));
  };
  watches.ensure('obj', () => liveList(collection(k, namespace), ({items, error}) => {
    if (error) { summary.replaceChildren(readError(error, `${k.kind}s in ${namespace}`)); return; }
    obj = items[0] || null;
    if (!obj) summary.replaceChildren(alertBox(`${k.kind} ${namespace}/${name} does not exist (any more).`, 'note'));
    draw();
  }, byName));
  watches.ensure('record', () => liveList(`${FED}/namespaces/${encodeURIComponent(namespace)}/propagationrecords`, ({items, error}) => {
    recordErr = error; record = error ? null : items[0] || null;
    followCopies(watches, ((record && record.status && record.status.clusters) || []).map((c) => c.name),
      [k], copies, draw, byName);
    draw();
  }, `fieldSelector=metadata.name%3D${encodeURIComponent(recordName(k, name))}`));
  watches.ensure('events', () => liveList(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, ({items, error}) => {
    eventsErr = error; events = items; draw();
  }, `fieldSelector=involvedObject.name%3D${encodeURIComponent(name)}`));
  watches.ensure('clusters', () => liveList(`${FED}/clusters`, ({items, error}) => {
    if (error) return;
    clusterReady.clear();
    for (const c of items) {
      const cond = (c.status?.conditions || []).find((x) => x.type === 'Ready');
      clusterReady.set(c.metadata.name, Boolean(cond && cond.status === 'True'));
    }
    draw();
  }));
  return {stop() { watches.stop(); }};
}
