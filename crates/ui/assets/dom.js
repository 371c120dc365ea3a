// Building the page with DOM calls only (never innerHTML): text from the
// API cannot become markup.

/** h('a', {href: '#/x', class: 'c'}, 'text', child…): a new element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** "12:03:04 (3 min ago)" from an RFC 3339 time; "unknown" without one. */
export function since(time) {
  if (!time) return 'unknown';
  const t = new Date(time);
  const s = Math.max(0, Math.round((Date.now() - t.getTime()) / 1000));
  const ago = s < 60 ? `${s} s ago` : s < 3600 ? `${Math.floor(s / 60)} min ago`
    : s < 86400 ? `${Math.floor(s / 3600)} h ago` : `${Math.floor(s / 86400)} d ago`;
  return `${t.toLocaleString()} (${ago})`;
}

/** A message box: role alert, text first (never colour alone). */
export function alertBox(text, kind = 'error') {
  return h('p', {class: `msg ${kind}`, role: kind === 'error' ? 'alert' : 'status'},
    h('strong', {}, kind === 'error' ? 'Error: ' : 'Note: '), text);
}

/**
 * What to show for a failed read of `what` ("clusters", "Deployments"): a
 * 403 names what the user may not read, with the server's Status message.
 */
export function readError(err, what) {
  if (err.status === 403) {
    return alertBox(`You may not read ${what}. The server said: ${err.message}`);
  }
  if (err.status === 404) {
    return alertBox(`${what} are not served here (404): ${err.message}`, 'note');
  }
  return alertBox(`Reading ${what} failed (${err.status || 'network'}): ${err.message}. Retrying…`);
}

/** A table from a header row and rows of cells. */
export function table(caption, head, rows) {
  return h('div', {class: 'table-wrap'},
    h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, head.map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) =>
        i === 0 ? h('th', {scope: 'row'}, c) : h('td', {}, c)))))));
}

/** A bar of `value` out of `max`, with its text beside it. */
export function bar(value, max, text) {
  const fill = h('span', {class: 'fill'});
  const pct = max > 0 && Number.isFinite(value) ? Math.min(100, (100 * value) / max) : 0;
  fill.style.width = `${pct}%`;
  return h('span', {class: 'bar-row'},
    h('span', {class: 'bar', role: 'img', 'aria-label': text}, fill),
    h('span', {class: 'bar-text'}, text));
}

/** A condition's status as words and a symbol (not colour alone). */
export function condText(status) {
  if (status === 'True') return '✔ True';
  if (status === 'False') return '✖ False';
  return '? Unknown';
}

/** Pretty JSON of an annotation (its string parsed when it is JSON). */
export function prettyJson(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

// What identifies a link or button across redraws.
const focusKey = (el) => el.getAttribute('href') || el.dataset.write || el.id || null;

/**
 * Replaces `container`'s children (a live page redraws on every watch
 * event) and gives the focus back to the same link or button, so keyboard
 * users do not lose their place.
 */
export function replaceKeepingFocus(container, children) {
  const active = document.activeElement;
  const key = active && container.contains(active) ? focusKey(active) : null;
  container.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  if (!key) return;
  const again = [...container.querySelectorAll('a, button')].find((el) => focusKey(el) === key);
  if (again) again.focus({preventScroll: true});
}
