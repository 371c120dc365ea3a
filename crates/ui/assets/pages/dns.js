// DNS: the names the federation serves and what each answers now, per
// Service or Ingress and its policy (the DNSEndpoint objects the DNS server
// publishes, label federation.kubernetes.io/dns=true).

import {liveList} from '../live.js';
import {alertBox, h, table} from '../dom.js';

const POLICY = 'federation.kubernetes.io/dns-policy';

export function render(main) {
  const body = h('div', {'aria-live': 'polite'}, h('p', {}, 'Loading…'));
  main.append(h('h1', {}, 'DNS'), body);
  let endpoints = null; let err = null; const services = new Map();
  const draw = () => {
    if (err && err.status === 404) {
      body.replaceChildren(alertBox('DNS is not served by this federation: start ubernetes serve with --dns-bind and --dns-zone (the DNSEndpoint kind is installed then).', 'note'));
      return;
    }
    if (err) { body.replaceChildren(alertBox(err.status === 403 ? `You may not read DNSEndpoints: ${err.message}` : err.message)); return; }
    if (!endpoints) return;
    if (endpoints.length === 0) { body.replaceChildren(h('p', {}, 'No name is served: no federated LoadBalancer Service or Ingress yet.')); return; }
    body.replaceChildren(...endpoints.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((d) => {
      const owner = (d.metadata.ownerReferences || [])[0] || {};
      const svc = owner.kind === 'Service' ? services.get(`${d.metadata.namespace}/${owner.name}`) : null;
      const policy = owner.kind === 'Service' ? ((svc && svc.metadata.annotations || {})[POLICY] || 'all') : 'all (Ingress)';
      return h('section', {class: 'dns'},
        h('h2', {}, `${owner.kind || 'Object'} ${d.metadata.namespace}/${owner.name || d.metadata.name}`),
        h('p', {}, h('strong', {}, 'Policy: '), policy),
        table(`Names of ${owner.name || d.metadata.name}`, ['Name', 'Type', 'Answers now', 'TTL'],
          (d.spec?.endpoints || []).map((e) => [e.dnsName, e.recordType, (e.targets || []).join(', ') || 'nothing (no healthy address)', e.recordTTL ?? ''])));
    }));
  };
  const a = liveList('/apis/externaldns.k8s.io/v1alpha1/dnsendpoints', ({items, error}) => { err = error; endpoints = items; draw(); },
    'labelSelector=federation.kubernetes.io%2Fdns%3Dtrue');
  const b = liveList('/api/v1/services', ({items, error}) => {
    if (error) return;
    services.clear();
    for (const s of items) services.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
    draw();
  });
  return {stop() { a.stop(); b.stop(); }};
}
