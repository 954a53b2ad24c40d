// The run list with its filters, the suites (`kope bench`) with their runs, and the live view of
// a run (polls for new attempts).
'use strict';

(function () {
  const FILTERS = ['task', 'family', 'hardware', 'proposer', 'label', 'since', 'until'];

  function select(name, values, current) {
    return kope.el('select', { name }, kope.el('option', { value: '', text: 'any' }),
      values.map(([v, text]) => kope.el('option', { value: v, text, selected: String(v) === current ? 'selected' : null })));
  }

  function filterForm(facets, params) {
    const field = (label, input) => kope.el('label', {}, label, input);
    const text = (name, placeholder) => kope.el('input', { name, placeholder, value: params.get(name) || '' });
    return kope.el('form', { class: 'filters', method: 'get', action: '/' },
      field('task', select('task', facets.tasks.map((t) => [t.name, t.name]), params.get('task'))),
      field('family', select('family', facets.families.map((f) => [f, f]), params.get('family'))),
      field('hardware', select('hardware', facets.hardware.map((h) => [String(h.id), `${h.device} (${h.arch})`]), params.get('hardware'))),
      field('proposer', select('proposer', facets.proposers.map((p) => [p, p]), params.get('proposer'))),
      field('label', select('label', facets.labels.map((l) => [l, l]), params.get('label'))),
      field('since', text('since', 'YYYY-MM-DD')),
      field('until', text('until', 'YYYY-MM-DD')),
      kope.el('button', { type: 'submit', text: 'filter' }));
  }

  function verdicts(summary) {
    return Object.entries(summary.verdicts).map(([v, n]) => `${n} ${v}`).join(', ');
  }

  kope.route(/^\/$/, async (main, m, params) => {
    const query = {};
    for (const f of FILTERS) query[f] = params.get(f);
    query.offset = params.get('offset');
    const [facets, runs] = await Promise.all([kope.api('/api/facets'), kope.api('/api/runs', query)]);
    const table = kope.table([
      ['run', (r) => kope.link('/runs/' + r.id, 'r' + r.id)],
      ['task', (r) => kope.link('/tasks/' + r.task, r.task_name)],
      ['family', (r) => r.op_family],
      ['hardware', (r) => r.device],
      ['proposer', (r) => r.proposer],
      ['label', (r) => r.label],
      ['started', (r) => kope.fmt.date(r.started_at)],
      ['attempts', (r) => r.summary.attempts, 'num'],
      ['verdicts', (r) => verdicts(r.summary)],
      ['best', (r) => (r.summary.best ? kope.el('span', {}, kope.fmt.speedup(r.summary.best.speedup), ' ', kope.attemptLink(r.summary.best.attempt)) : '-'), 'num'],
      ['tokens', (r) => r.summary.prompt_tokens + r.summary.completion_tokens, 'num'],
      ['cost', (r) => kope.fmt.usd(r.summary.cost_usd), 'num'],
      ['', (r) => kope.link(`/runs/${r.id}/live`, 'live')],
    ], runs.runs, (r) => ({ 'data-run': r.id, class: 'run' }));
    const more = runs.total > runs.offset + runs.runs.length;
    const next = new URLSearchParams(params);
    next.set('offset', runs.offset + runs.runs.length);
    main.replaceChildren(kope.el('h1', { text: 'Runs' }), filterForm(facets, params),
      kope.el('p', { class: 'muted', text: `${runs.total} runs` + (runs.total ? `, showing ${runs.offset + 1}-${runs.offset + runs.runs.length}` : '') }),
      table, more ? kope.link('/?' + next, 'more') : null);
  });

  kope.route(/^\/suites$/, async (main) => {
    const data = await kope.api('/api/suites');
    main.replaceChildren(kope.el('h1', { text: 'Suites' }),
      data.suites.length ? kope.table([
        ['suite', (s) => kope.link('/?' + new URLSearchParams({ label: s.label }), s.suite)],
        ['runs', (s) => s.runs, 'num'], ['tasks', (s) => s.tasks, 'num'],
        ['proposers', (s) => s.proposers.join(', ')], ['hardware', (s) => s.devices.join(', ')],
        ['first run', (s) => kope.fmt.date(s.first_started_at)], ['last run', (s) => kope.fmt.date(s.last_started_at)]],
      data.suites, (s) => ({ class: 'suite' }))
        : kope.el('p', { class: 'muted', text: 'no suites run yet (kope bench)' }));
  });

  // The live view: the run's attempts, polled; new rows are marked.
  kope.route(/^\/runs\/(\d+)\/live$/, async (main, m) => {
    const id = m[1];
    const run = await kope.api('/api/runs/' + id);
    const status = kope.el('p', { class: 'muted', id: 'live-status' });
    const tbody = kope.el('tbody', { id: 'live-rows' });
    const chart = kope.el('div', { class: 'charts' });
    main.replaceChildren(kope.el('h1', {}, 'Live: run ', kope.link('/runs/' + id, 'r' + id), ` ${run.task_name} on ${run.device}`),
      status, chart, kope.el('table', {}, kope.el('thead', {}, kope.el('tr', {},
        ['order', 'attempt', 'parent', 'proposer', 'verdict', 'speedup', 'roofline', 'decision'].map((h) => kope.el('th', { text: h })))), tbody));
    let last = 0, polls = 0, first = true;
    const progress = [];
    let best = 0;
    async function poll() {
      try {
        const data = await kope.api(`/api/runs/${id}/attempts`, { after: last });
        polls++;
        for (const a of data.attempts) {
          last = Math.max(last, a.id);
          const o = a.outcome;
          if (o && o.verdict === 'valid' && !o.flagged && o.speedup) best = Math.max(best, o.speedup);
          if (best > 0) progress.push([a.order, best]);
          tbody.appendChild(kope.el('tr', { class: first ? 'attempt' : 'attempt new', 'data-attempt': a.id },
            kope.el('td', { class: 'num', text: a.order }), kope.el('td', {}, kope.attemptLink(a.id)),
            kope.el('td', {}, kope.attemptLink(a.parent)), kope.el('td', { text: a.proposer }),
            kope.el('td', {}, kope.verdictBadge(o)), kope.el('td', { class: 'num', text: kope.fmt.speedup(o && o.speedup) }),
            kope.el('td', { class: 'num', text: kope.fmt.pct(o && o.roofline) }), kope.el('td', { text: kope.fmt.firstLine(a.decision) })));
        }
        if (data.attempts.length > 0 || first) {
          chart.replaceChildren(kope.charts.line('best speedup so far', 'live-best', [{ name: 'best', color: '#2e8b57', points: progress, step: true }], 'attempt', 'speedup'));
        }
        first = false;
        status.textContent = `${data.summary.attempts} attempts, best ${kope.fmt.speedup(data.summary.best && data.summary.best.speedup)}; updated ${new Date().toLocaleTimeString()}`;
        status.setAttribute('data-polls', polls);
      } catch (e) {
        status.textContent = 'update failed: ' + e.message;
      }
      setTimeout(poll, 1000);
    }
    await poll();
  });
})();
