// kope serve: the pages' shared helpers and the router. Each page script registers its routes
// with kope.route; once every script has loaded, kope.start renders the page of the location.
'use strict';

const kope = { routes: [] };

kope.ApiError = class extends Error {
  constructor(status, message) { super(message); this.status = status; }
};

// GETs a JSON endpoint; params with empty values are left out.
kope.api = async function (path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
  }
  const res = await fetch(url, { credentials: 'same-origin' });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    throw new kope.ApiError(res.status, body && body.error ? body.error.message : res.statusText);
  }
  return body;
};

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'onclick' || k === 'onchange' || k === 'onsubmit') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return node;
}

kope.el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
kope.svg = (tag, attrs, ...children) =>
  build(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, children);

kope.verdictColors = {
  valid: '#2e8b57', incorrect: '#d9822b', compile_error: '#b31d28', runtime_error: '#8e44ad',
  crash: '#6f1d1b', timeout: '#7a7a7a', none: '#c0c6cc',
};
kope.verdictColor = (outcome) => {
  if (!outcome) return kope.verdictColors.none;
  return kope.verdictColors[outcome.verdict] || kope.verdictColors.none;
};
kope.verdictBadge = (outcome) => {
  const b = kope.el('span', { class: 'verdict', text: outcome ? outcome.verdict + (outcome.flagged ? ' (flagged)' : '') : 'none' });
  b.style.background = kope.verdictColor(outcome);
  return b;
};
kope.legend = () => kope.el('div', { class: 'legend' }, Object.entries(kope.verdictColors).map(([v, c]) => {
  const dot = kope.el('i');
  dot.style.background = c;
  return kope.el('span', {}, dot, v);
}));

kope.fmt = {
  speedup: (s) => (s === null || s === undefined ? '-' : Number(s).toFixed(2) + 'x'),
  pct: (f) => (f === null || f === undefined ? '-' : (100 * f).toFixed(1) + '%'),
  usd: (c) => (c ? '$' + c.toFixed(c < 0.1 ? 4 : 2) : '-'),
  date: (ms) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '-'),
  seconds: (s) => {
    if (s === null || s === undefined) return '-';
    if (s >= 1) return s.toFixed(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    if (s >= 1e-6) return (s * 1e6).toFixed(2) + ' us';
    return (s * 1e9).toFixed(0) + ' ns';
  },
  firstLine: (t, n = 90) => {
    const line = (t || '').split('\n')[0];
    return line.length > n ? line.slice(0, n - 1) + '…' : line;
  },
};

kope.link = (href, text) => kope.el('a', { href, text: String(text) });
kope.attemptLink = (id) => (id ? kope.link('/attempts/' + id, 'a' + id) : '-');

// A table from column specs: [header, cell(row) -> node or text, 'num' for numbers].
kope.table = (columns, rows, rowAttrs) => kope.el('table', {},
  kope.el('thead', {}, kope.el('tr', {}, columns.map(([h, , cls]) => kope.el('th', { class: cls, text: h })))),
  kope.el('tbody', {}, rows.map((r) => kope.el('tr', rowAttrs ? rowAttrs(r) : {},
    columns.map(([, cell, cls]) => {
      const v = cell(r);
      return kope.el('td', { class: cls }, v === undefined || v === null ? '' : v);
    })))));

kope.kv = (pairs) => kope.el('dl', { class: 'kv' },
  pairs.filter((p) => p).map(([k, v]) => [kope.el('dt', { text: k }), kope.el('dd', {}, v)]));

kope.route = (pattern, render) => kope.routes.push({ pattern, render });

kope.showError = (main, e) => {
  main.replaceChildren(kope.el('p', { class: 'error', 'data-status': e.status || 0,
    text: (e.status ? e.status + ': ' : '') + e.message }));
};

kope.start = async function () {
  const main = document.getElementById('main');
  const params = new URLSearchParams(location.search);
  for (const { pattern, render } of kope.routes) {
    const m = location.pathname.match(pattern);
    if (!m) continue;
    try {
      await render(main, m, params);
      main.setAttribute('data-ready', '1');
    } catch (e) {
      kope.showError(main, e);
      main.setAttribute('data-ready', 'error');
    }
    return;
  }
  kope.showError(main, { status: 404, message: 'no such page: ' + location.pathname });
  main.setAttribute('data-ready', 'error');
};

window.addEventListener('DOMContentLoaded', () => kope.start());
