// A member's objects, read through the cluster proxy as the user
// (clusters/NAME/proxy): its namespaces, then a few kinds in one.

import {collection, proxy} from '../api.js';
import {liveList} from '../live.js';
import {h, readError, table} from '../dom.js';

const KINDS = [
  {label: 'Deployments', group: 'apps', resource: 'deployments',
    cols: ['Ready', 'Up to date'], row: (o) => [`${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 0}`, o.status?.updatedReplicas ?? 0]},
  {label: 'Pods', resource: 'pods', cols: ['Phase'], row: (o) => [o.status?.phase || 'unknown']},
  {label: 'Services', resource: 'services', cols: ['Type', 'Cluster IP'], row: (o) => [o.spec?.type || '', o.spec?.clusterIP || '']},
  {label: 'ConfigMaps', resource: 'configmaps', cols: ['Keys'], row: (o) => [Object.keys(o.data || {}).length]},
];

const managed = (o) => (o.metadata.labels || {})['federation.kubernetes.io/managed'] === 'true' ? 'yes' : 'no';

export function render(main, cluster, namespace) {
  const base = proxy(cluster);
  const crumbs = h('p', {}, h('a', {href: '#/clusters'}, '← Clusters'),
    namespace ? [' · ', h('a', {href: `#/clusters/${encodeURIComponent(cluster)}`}, `Namespaces of ${cluster}`)] : null);
  main.append(crumbs, h('h1', {}, namespace ? `${cluster}: namespace ${namespace}` : `Cluster ${cluster}`),
    h('p', {class: 'help'}, 'Read in the member through the federation\'s cluster proxy, as you: the member\'s RBAC decides.'));
  const watches = [];
  if (!namespace) {
    const box = h('div', {'aria-live': 'polite'}, h('p', {}, 'Loading namespaces…'));
    main.append(box);
    watches.push(liveList(`${base}/api/v1/namespaces`, ({items, error}) => {
      if (error) { box.replaceChildren(readError(error, `namespaces of ${cluster}`)); return; }
      box.replaceChildren(table(`Namespaces in ${cluster}`, ['Namespace', 'Status'],
        items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((ns) => [
          h('a', {href: `#/clusters/${encodeURIComponent(cluster)}/${encodeURIComponent(ns.metadata.name)}`}, ns.metadata.name),
          ns.status?.phase || ''])));
    }));
  } else {
    for (const kind of KINDS) {
      const box = h('section', {'aria-live': 'polite'}, h('h2', {}, kind.label), h('p', {}, 'Loading…'));
      main.append(box);
      watches.push(liveList(base + collection(kind, namespace), ({items, error}) => {
        if (error) { box.replaceChildren(h('h2', {}, kind.label), readError(error, `${kind.label} in ${cluster}`)); return; }
        box.replaceChildren(h('h2', {}, kind.label), items.length === 0 ? h('p', {}, `No ${kind.label}.`)
          : table(`${kind.label} in ${cluster}/${namespace}`, ['Name', ...kind.cols, 'From the federation'],
            items.map((o) => [o.metadata.name, ...kind.row(o), managed(o)])));
      }));
    }
  }
  return {stop() { watches.forEach((w) => w.stop()); }};
}
