// Deployment workloads (`kope deploy profile`): the tasks extracted from one by their share of
// its time, and the reports of its validations (`kope deploy`): the end-to-end speedup per
// request entry and phase, each patch's own contribution, what was rejected and why.
'use strict';

(function () {
  // A workload's model: {source, architecture, path, ...} as `kope deploy profile` records it.
  const modelName = (m) => (!m ? '-' : typeof m === 'string' ? m : m.architecture || m.path || m.source || '-');
  const figureLabel = (f) => `bs${f.batch} ${f.phase}`;
  const figureColor = (f) => (f.win ? '#2e8b57' : f.loss ? '#b31d28' : '#9aa5b1');
  const figureText = (f) => `${figureLabel(f)} ${kope.fmt.speedup(f.speedup)} (noise ${kope.fmt.pct(f.noise)})`;

  function deployment(d) {
    if (d.error) return kope.el('p', { class: 'error', text: `d${d.id}: ${d.error}` });
    const alone = d.trials.filter((t) => t.e2e.length)
      .flatMap((t) => t.e2e.map((f) => ({ label: `${t.task} ${figureText(f)}`, short: `${t.task} ${figureLabel(f)}`,
        value: f.speedup, color: figureColor(f) })));
    return kope.el('section', { class: 'deployment', 'data-deployment': d.id },
      kope.el('h2', { text: `Validation d${d.id}, ${kope.fmt.date(d.created_at)}` }),
      kope.kv([
        ['patches', d.patches.length ? d.patches.join(', ') : 'none accepted'],
        ['artifact', d.artifact || '-'],
        d.dropped.length ? ['dropped when combined', d.dropped.join('; ')] : null]),
      kope.el('div', { class: 'charts' },
        kope.charts.bars('end-to-end speedup, all patches together', 'e2e',
          d.e2e.map((f) => ({ label: figureText(f), short: figureLabel(f), value: f.speedup, color: figureColor(f) })),
          'request entry and phase', 'speedup', 1),
        kope.charts.bars('each patch alone', 'contribution', alone, 'patch, entry and phase', 'speedup', 1)),
      kope.table([
        ['task', (t) => t.task], ['attempt', (t) => (t.attempt ? kope.attemptLink(t.attempt) : '-')],
        ['kind', (t) => t.kind || '-'],
        ['gate', (t) => (!t.installed ? 'not installed' : t.passed_gate ? 'passed' : 'failed')],
        ['verdict', (t) => {
          // Coloured as its in_model outcome: valid where it passed the gate (even if it then lost
          // end to end), incorrect where it failed it, runtime_error where it was not installed.
          const badge = kope.verdictBadge({ verdict: !t.installed ? 'runtime_error' : t.passed_gate ? 'valid' : 'incorrect' });
          badge.textContent = t.accepted ? 'accepted' : 'rejected';
          return badge;
        }],
        ['alone', (t) => t.e2e.map(figureText).join('; ') || '-'],
        ['reason', (t) => t.reason]], d.trials, (t) => ({ class: 'trial ' + (t.accepted ? 'accepted' : 'rejected') })));
  }

  kope.route(/^\/workloads$/, async (main) => {
    const data = await kope.api('/api/workloads');
    main.replaceChildren(kope.el('h1', { text: 'Deployment workloads' }),
      data.workloads.length ? kope.table([['workload', (w) => kope.link('/workloads/' + w.id, w.name)],
        ['model', (w) => modelName(w.attrs.model)], ['tasks', (w) => w.tasks, 'num'],
        ['validations', (w) => w.deployments, 'num'], ['profiled', (w) => kope.fmt.date(w.created_at)]], data.workloads)
        : kope.el('p', { class: 'muted', text: 'no workloads profiled (kope deploy profile)' }));
  });

  kope.route(/^\/workloads\/(\d+)$/, async (main, m) => {
    const w = await kope.api('/api/workloads/' + m[1]);
    main.replaceChildren(kope.el('h1', { text: `Workload ${w.name}` }),
      kope.el('pre', { text: JSON.stringify(w.attrs, null, 2) }),
      kope.el('div', { class: 'charts' }, kope.charts.bars('share of the workload\'s time by task', 'weights',
        w.tasks.map((t) => ({ label: t.task.name, value: t.weight })), 'task (by weight)', 'share')),
      kope.table([['task', (t) => kope.link('/tasks/' + t.task.id, t.task.name)], ['phases', (t) => t.phases.join(', ')],
        ['weight', (t) => kope.fmt.pct(t.weight), 'num'],
        ['best', (t) => (t.best ? kope.el('span', {}, kope.fmt.speedup(t.best.outcome.speedup), ' ', kope.attemptLink(t.best.id)) : '-'), 'num']], w.tasks),
      ...(w.deployments.length ? w.deployments.map(deployment)
        : [kope.el('p', { class: 'muted', text: 'not validated yet (kope deploy)' })]));
  });
})();
