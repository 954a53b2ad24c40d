// Insights (searchable list, one with its evidence), search over the graph, a task with the
// roofline position of its attempts.
'use strict';

(function () {
  const scope = (s) => [s.op_family || 'any family', s.backend, s.device || s.arch, s.compiler].filter(Boolean).join(', ');

  kope.route(/^\/insights$/, async (main, m, params) => {
    const q = params.get('q') || '';
    const data = await kope.api('/api/insights', { q, family: params.get('family') });
    main.replaceChildren(kope.el('h1', { text: 'Insights' }),
      kope.el('form', { class: 'filters', method: 'get', action: '/insights' },
        kope.el('input', { name: 'q', value: q, placeholder: 'search insights', id: 'insight-q' }),
        kope.el('button', { type: 'submit', text: 'search' })),
      kope.el('p', { class: 'muted', text: `${data.total} insights` + (q ? ` matching "${q}"` : '') }),
      kope.table([
        ['insight', (i) => kope.link('/insights/' + i.id, 'i' + i.id)], ['kind', (i) => i.kind],
        ['text', (i) => i.text], ['scope', (i) => scope(i.scope)], ['classes', (i) => i.classes.join(', ')],
        ['support', (i) => i.support, 'num'], ['contradiction', (i) => i.contradiction, 'num'],
        ['effect', (i) => i.effect_size.toFixed(3) + 'x', 'num']], data.insights, (i) => ({ class: 'insight', 'data-insight': i.id })));
  });

  kope.route(/^\/insights\/(\d+)$/, async (main, m) => {
    const i = await kope.api('/api/insights/' + m[1]);
    main.replaceChildren(kope.el('h1', { text: `Insight i${i.id} (${i.kind})` }), kope.el('p', { text: i.text }),
      kope.kv([['scope', scope(i.scope)], ['classes', i.classes.join(', ') || '-'], ['support', i.support],
        ['contradiction', i.contradiction], ['effect size', i.effect_size.toFixed(3) + 'x'], ['updated', kope.fmt.date(i.updated_at)]]),
      kope.el('h2', { text: `Evidence (${i.evidence_total})` }),
      kope.table([['relation', (e) => e.relation], ['attempt', (e) => kope.attemptLink(e.attempt)],
        ['verdict', (e) => e.verdict || '-'], ['speedup', (e) => kope.fmt.speedup(e.speedup), 'num'],
        ['effect', (e) => e.effect.toFixed(3), 'num']], i.evidence));
  });

  kope.route(/^\/search$/, async (main, m, params) => {
    const q = params.get('q') || '';
    main.replaceChildren(kope.el('h1', { text: `Search: ${q}` }));
    if (!q.trim()) return;
    const data = await kope.api('/api/search', { q, kinds: params.get('kinds'), any: params.get('any') });
    const target = (h) => (h.kind === 'insight' ? kope.link('/insights/' + h.id, h.node)
      : h.kind === 'task' ? kope.link('/tasks/' + h.id, h.node) : kope.attemptLink(h.attempt));
    main.appendChild(data.hits.length ? kope.table([['kind', (h) => h.kind], ['node', target],
      ['relevance', (h) => h.relevance.toFixed(2), 'num'], ['text', (h) => h.text]], data.hits, () => ({ class: 'hit' }))
      : kope.el('p', { class: 'muted', text: 'no matches' }));
  });

  kope.route(/^\/tasks\/(\d+)$/, async (main, m) => {
    const data = await kope.api('/api/tasks/' + m[1]);
    const t = data.task;
    const points = data.roofline_points.map((p, k) => ({ x: k + 1, y: p.roofline, href: '/attempts/' + p.attempt,
      color: p.flagged ? '#d9822b' : '#2e8b57', tip: `a${p.attempt}: ${kope.fmt.pct(p.roofline)}, ${kope.fmt.speedup(p.speedup)}` }));
    main.replaceChildren(kope.el('h1', { text: `Task ${t.name} (${t.op_family})` }),
      kope.el('p', { text: t.description }), kope.kv([['size', t.size], ['language', t.attrs.language || '-']]),
      kope.el('h2', { text: 'Roofline position of its valid attempts' }),
      kope.el('div', { class: 'charts' }, kope.charts.scatter('fraction of the speed of light, attempts in order', 'roofline', points,
        'attempt (in order)', 'fraction of roofline', [{ y: 1, label: 'roofline' }])),
      kope.el('h2', { text: 'Runs' }),
      kope.table([['run', (r) => kope.link('/runs/' + r.id, 'r' + r.id)], ['label', (r) => r.label],
        ['proposer', (r) => r.proposer], ['started', (r) => kope.fmt.date(r.started_at)]], data.runs));
  });
})();
