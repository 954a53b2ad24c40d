// A run: its summary, the episode as a tree (nodes coloured by verdict, labelled by speedup,
// numbered in decision order; a click opens the attempt), its charts and its attempts.
'use strict';

(function () {
  // Layout: depth across, leaves down in depth-first order; a parent sits at its children's middle.
  function layout(nodes) {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const roots = nodes.filter((n) => !n.parent_in_run);
    let row = 0;
    function place(n) {
      const kids = n.children.map((c) => byId.get(c)).filter(Boolean);
      kids.forEach(place);
      n.row = kids.length ? (kids[0].row + kids[kids.length - 1].row) / 2 : row++;
    }
    roots.forEach(place);
    return { rows: Math.max(row, 1), depth: Math.max(0, ...nodes.map((n) => n.depth)) + 1, byId };
  }

  function radius(n) {
    const s = n.outcome && n.outcome.speedup;
    return s ? Math.max(7, Math.min(16, 7 + 4 * Math.log2(1 + s))) : 7;
  }

  kope.episodeTree = function (tree) {
    const nodes = tree.nodes;
    const { rows, depth, byId } = layout(nodes);
    const DX = 120, DY = 38, PAD = 30;
    const x = (n) => PAD + n.depth * DX, y = (n) => PAD + n.row * DY;
    const svg = kope.svg('svg', { class: 'tree', width: PAD * 2 + (depth - 1) * DX + 200,
      height: PAD * 2 + (rows - 1) * DY, 'data-nodes': nodes.length });
    for (const n of nodes) {
      const p = byId.get(n.parent);
      if (!p || !n.parent_in_run) continue;
      svg.appendChild(kope.svg('path', { class: 'edge',
        d: `M${x(p)},${y(p)} C${x(p) + DX / 2},${y(p)} ${x(n) - DX / 2},${y(n)} ${x(n)},${y(n)}` }));
    }
    const best = tree.best && tree.best.attempt;
    for (const n of nodes) {
      const o = n.outcome;
      const g = kope.svg('a', { href: '/attempts/' + n.id, class: 'node' + (n.id === best ? ' best' : ''),
        'data-attempt': n.id, 'data-verdict': o ? o.verdict : 'none' });
      g.appendChild(kope.svg('circle', { cx: x(n), cy: y(n), r: radius(n), fill: kope.verdictColor(o) }));
      g.appendChild(kope.svg('text', { x: x(n), y: y(n) + 3.5, 'text-anchor': 'middle', fill: '#fff' }, String(n.order)));
      g.appendChild(kope.svg('text', { x: x(n) + radius(n) + 4, y: y(n) + 4 },
        (o && o.speedup ? kope.fmt.speedup(o.speedup) : (o ? o.verdict : 'none'))));
      g.appendChild(kope.svg('title', {}, `#${n.order} a${n.id}: ${kope.fmt.firstLine(n.decision, 200)}`));
      svg.appendChild(g);
    }
    return svg;
  };

  function charts(data) {
    const progress = data.progress.filter((p) => p.best !== null);
    let spent = 0;
    const cost = data.tokens.map((t) => [t.order, (spent += t.cost_usd)]);
    const tried = data.progress.filter((p) => p.speedup !== null);
    return kope.el('div', { class: 'charts' },
      kope.charts.line('best speedup over attempts', 'progress', [
        { name: 'attempt', color: '#9fb7d3', points: tried.map((p) => [p.order, p.speedup]), dots: true },
        { name: 'best', color: '#2e8b57', points: progress.map((p) => [p.order, p.best]), step: true }], 'attempt', 'speedup'),
      kope.charts.bars('speedup distribution (valid attempts)', 'distribution',
        data.histogram.map((b) => ({ label: `${b.from.toFixed(2)}-${b.to.toFixed(2)}x`, value: b.count })), 'speedup bin', 'attempts'),
      kope.charts.bars('tokens per attempt', 'tokens',
        data.tokens.map((t) => ({ label: 'a' + t.attempt, value: t.prompt + t.completion, color: '#8e7cc3' })), 'attempt', 'tokens'),
      spent > 0 ? kope.charts.line('cost of the run so far', 'cost', [{ name: 'cost', color: '#b8860b', points: cost, step: true }], 'attempt', 'US$')
        : kope.el('div', { class: 'chart', 'data-chart': 'cost' }, kope.el('div', { class: 'title', text: 'cost of the run so far' }),
          kope.el('p', { class: 'muted', text: 'no priced model calls (the offline proposer, or no [prices] for the model)' })));
  }

  kope.route(/^\/runs\/(\d+)$/, async (main, m) => {
    const id = m[1];
    const [run, tree, chartData] = await Promise.all([
      kope.api('/api/runs/' + id), kope.api(`/api/runs/${id}/tree`), kope.api(`/api/runs/${id}/charts`)]);
    const s = run.summary;
    main.replaceChildren(
      kope.el('h1', {}, `Run r${run.id}: `, kope.link('/tasks/' + run.task, run.task_name), ` on ${run.device}`),
      kope.kv([
        ['family', run.op_family], ['proposer', run.proposer], ['label', run.label],
        ['compiler', run.compiler], ['started', kope.fmt.date(run.started_at)],
        ['attempts', `${s.attempts} (` + Object.entries(s.verdicts).map(([v, n]) => `${n} ${v}`).join(', ') + ')'],
        ['best', s.best ? kope.el('span', {}, kope.fmt.speedup(s.best.speedup), ', ', kope.fmt.pct(s.best.roofline), ' of the roofline, ', kope.attemptLink(s.best.attempt)) : '-'],
        ['tokens', `${s.prompt_tokens} prompt + ${s.completion_tokens} completion`],
        ['cost', kope.fmt.usd(s.cost_usd)],
        ['live', kope.link(`/runs/${id}/live`, 'follow this run')]]),
      kope.el('h2', { text: 'Episode tree' }), kope.legend(),
      kope.el('div', { class: 'tree-box' }, kope.episodeTree(tree)),
      kope.el('h2', { text: 'Charts' }), charts(chartData),
      kope.el('h2', { text: 'Attempts in decision order' }),
      kope.table([
        ['#', (n) => n.order, 'num'], ['attempt', (n) => kope.attemptLink(n.id)],
        ['parent', (n) => kope.attemptLink(n.parent)], ['proposer', (n) => n.proposer],
        ['verdict', (n) => kope.verdictBadge(n.outcome)],
        ['speedup', (n) => kope.fmt.speedup(n.outcome && n.outcome.speedup), 'num'],
        ['roofline', (n) => kope.fmt.pct(n.outcome && n.outcome.roofline), 'num'],
        ['alternatives', (n) => n.children.length, 'num'],
        ['decision', (n) => kope.fmt.firstLine(n.decision)]], tree.nodes));
  });
})();
