// The dashboard's shell: sign-in, the header (who, sign out), the page
// links and the hash router (#/clusters, #/clusters/NAME[/NAMESPACE],
// #/workloads, #/object/GROUP/VERSION/RESOURCE/NAMESPACE/NAME, #/dns).

import {onUnauthorized, signIn, signOut, token, whoAmI} from './api.js';
import {alertBox, h} from './dom.js';
import * as clusters from './pages/clusters.js';
import * as member from './pages/member.js';
import * as workloads from './pages/workloads.js';
import * as object from './pages/object.js';
import * as dns from './pages/dns.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const PAGES = [['clusters', 'Clusters'], ['workloads', 'Workloads'], ['dns', 'DNS']];
let current = null;

function stopPage() { if (current) current.stop(); current = null; }

function showSignIn(message) {
  stopPage();
  nav.replaceChildren();
  who.replaceChildren();
  const input = h('input', {id: 'token', name: 'token', type: 'password', autocomplete: 'off',
    required: true, 'aria-describedby': 'token-help'});
  const form = h('form', {id: 'signin', class: 'card'},
    h('h1', {}, 'Sign in'),
    message ? alertBox(message) : null,
    h('label', {for: 'token'}, 'Bearer token'),
    input,
    h('p', {id: 'token-help', class: 'help'},
      'A token the server accepts: a service account token (kubectl create token NAME -n NAMESPACE) ',
      'or one of --token-auth-file. It is kept in this tab only (sessionStorage) and sent with every request, ',
      'so the server\'s RBAC decides what you see.'),
    h('button', {type: 'submit'}, 'Sign in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    signIn(input.value);
    try {
      await whoAmI();
      // A new hash routes through hashchange; the same one does not.
      if (!location.hash || location.hash === '#/') location.hash = '#/clusters';
      else route();
    } catch (err) {
      signOut();
      showSignIn(err.status === 401
        ? 'The server did not accept this token (401 Unauthorized).'
        : `Signing in failed: ${err.message}`);
    }
  });
  main.replaceChildren(form);
  input.focus();
}

onUnauthorized(() => {
  signOut();
  showSignIn('Your token is no longer accepted (401 Unauthorized): sign in again.');
});

async function header() {
  nav.replaceChildren(...PAGES.map(([id, label]) =>
    h('a', {href: `#/${id}`, 'data-page': id}, label)));
  const out = h('button', {type: 'button', id: 'signout'}, 'Sign out');
  out.addEventListener('click', () => { signOut(); location.hash = ''; showSignIn(); });
  const name = h('span', {id: 'user'}, '…');
  who.replaceChildren(h('span', {}, 'Signed in as '), name, ' ', out);
  try {
    const user = await whoAmI();
    name.textContent = user.username || '(unknown)';
  } catch { name.textContent = '(unknown)'; }
}

function route() {
  if (!token()) { showSignIn(); return; }
  if (!nav.firstChild) header();
  stopPage();
  const parts = (location.hash.replace(/^#\/?/, '') || 'clusters').split('/').map(decodeURIComponent);
  const [page, ...args] = parts;
  for (const a of nav.querySelectorAll('a')) {
    const here = a.dataset.page === page || (page === 'object' && a.dataset.page === 'workloads');
    if (here) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  main.replaceChildren();
  if (page === 'clusters' && args.length) current = member.render(main, args[0], args[1]);
  else if (page === 'clusters') current = clusters.render(main);
  else if (page === 'workloads') current = workloads.render(main);
  else if (page === 'object' && args.length === 5) current = object.render(main, ...args);
  else if (page === 'dns') current = dns.render(main);
  else main.append(h('h1', {}, 'Not found'), h('p', {}, 'No such page. ', h('a', {href: '#/clusters'}, 'Go to Clusters')));
  main.focus({preventScroll: true});
}

window.addEventListener('hashchange', route);
route();
