// Clusters: grouped by region and zone; Ready and since when; version;
// push or pull; objects in sync / pending / failed (from the propagation
// records); a link to the cluster's objects (the member view).

import {liveList} from '../live.js';
import {alertBox, h, readError, replaceKeepingFocus, since} from '../dom.js';

const FED = '/apis/federation/v1beta1';

function ready(c) {
  const cond = ((c.status && c.status.conditions) || []).find((x) => x.type === 'Ready');
  if (!cond) return {text: '? Not probed yet', cls: 'unknown', cond: {}};
  if (cond.status === 'True') return {text: '✔ Ready', cls: 'ok', cond};
  if (cond.status === 'False') return {text: `✖ Not ready (${cond.reason || 'no reason'})`, cls: 'bad', cond};
  return {text: `? Not ready: unknown (${cond.reason || 'no answer'})`, cls: 'unknown', cond};
}

/** Per cluster: {InSync, Pending, Failed} counted over the records. */
function counts(records) {
  const by = new Map();
  for (const r of records) {
    for (const c of (r.status && r.status.clusters) || []) {
      const n = by.get(c.name) || {InSync: 0, Pending: 0, Failed: 0};
      n[c.state] = (n[c.state] || 0) + 1;
      by.set(c.name, n);
    }
  }
  return by;
}

function card(c, perCluster, recordsError) {
  const r = ready(c);
  const st = c.status || {};
  const name = c.metadata.name;
  const n = perCluster && perCluster.get(name);
  const objects = recordsError
    ? `${st.objectsInSync ?? '?'} in sync of ${st.objectsPlaced ?? '?'} placed`
    : n ? `${n.InSync} in sync, ${n.Pending} pending, ${n.Failed} failed` : '0 objects placed';
  return h('article', {class: `cluster ${r.cls}`, 'data-cluster': name, 'aria-labelledby': `cl-${name}`},
    h('h4', {id: `cl-${name}`}, name),
    h('dl', {},
      h('dt', {}, 'Health'), h('dd', {class: 'state', 'data-ready': r.cond.status || 'Unknown'}, r.text),
      r.cond.message && r.cond.status !== 'True' ? [h('dt', {}, 'Why'), h('dd', {}, r.cond.message)] : null,
      h('dt', {}, 'Since'), h('dd', {}, since(r.cond.lastTransitionTime)),
      h('dt', {}, 'Kubernetes'), h('dd', {}, st.kubernetesVersion || 'unknown'),
      h('dt', {}, 'Mode'), h('dd', {}, (c.spec && c.spec.syncMode) ? String(c.spec.syncMode).toLowerCase() : 'push'),
      h('dt', {}, 'Zones'), h('dd', {}, (st.zones || []).join(', ') || 'none reported'),
      h('dt', {}, 'Objects'), h('dd', {class: 'objects'}, objects)),
    h('a', {href: `#/clusters/${encodeURIComponent(name)}`}, `Objects in ${name} →`));
}

export function render(main) {
  const body = h('div', {'aria-live': 'polite'});
  main.append(h('h1', {}, 'Clusters'), body);
  let clusters = null; let errC = null; let records = []; let errR = null;
  const draw = () => {
    const out = [];
    if (errC) out.push(readError(errC, 'clusters (clusters.federation)'));
    if (errR && !errC) {
      out.push(alertBox(`Per-object sync counts are not shown: ${errR.status === 403
        ? `you may not read propagation records (${errR.message})` : errR.message}. The clusters' own counts are.`, 'note'));
    }
    if (!clusters && !errC) out.push(h('p', {}, 'Loading clusters…'));
    if (clusters && clusters.length === 0) {
      out.push(h('p', {}, 'No cluster is joined yet. Join one with ubernetes join NAME --cluster-context CONTEXT.'));
    }
    if (clusters && clusters.length) {
      const total = clusters.length;
      const readyN = clusters.filter((c) => ready(c).cls === 'ok').length;
      out.push(h('p', {id: 'summary'}, `${readyN} of ${total} clusters Ready.`));
      const per = counts(records);
      const grid = h('div', {class: 'regions'});
      const regions = new Map();
      for (const c of clusters) {
        const region = (c.status && c.status.region) || '';
        const zone = ((c.status && c.status.zones) || [])[0] || '';
        if (!regions.has(region)) regions.set(region, new Map());
        const zones = regions.get(region);
        if (!zones.has(zone)) zones.set(zone, []);
        zones.get(zone).push(c);
      }
      for (const region of [...regions.keys()].sort()) {
        const sec = h('section', {class: 'region'}, h('h2', {}, region ? `Region ${region}` : 'No region reported'));
        const zones = regions.get(region);
        for (const zone of [...zones.keys()].sort()) {
          sec.append(h('h3', {}, zone ? `Zone ${zone}` : 'No zone reported'),
            h('div', {class: 'cards'}, zones.get(zone)
              .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
              .map((c) => card(c, errR ? null : per, errR))));
        }
        grid.append(sec);
      }
      out.push(grid);
    }
    replaceKeepingFocus(body, out);
  };
  const a = liveList(`${FED}/clusters`, ({items, error}) => { clusters = error ? clusters : items; errC = error; draw(); });
  const b = liveList(`${FED}/propagationrecords`, ({items, error}) => { records = items; errR = error; draw(); });
  draw();
  return {stop() { a.stop(); b.stop(); }};
}
