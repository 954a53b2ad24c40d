// An attempt: its decision, outcome with evidence, highlighted source, diff to its parent, the
// context it was shown, the insights it supports or contradicts, its lineage and alternatives.
'use strict';

(function () {
  function diffView(diff) {
    const pre = kope.el('pre', { class: 'diff', id: 'diff' });
    for (const line of diff.split('\n')) {
      const cls = line.startsWith('@@') ? 'hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'add'
        : line.startsWith('-') && !line.startsWith('---') ? 'del' : null;
      pre.appendChild(cls ? kope.el('span', { class: cls, text: line }) : document.createTextNode(line + '\n'));
    }
    return pre;
  }

  function sourceView(source, language) {
    const code = kope.el('code', { class: 'language-' + language, text: source });
    const hljs = window.hljs;  // highlight.js 11 has highlightElement, older ones highlightBlock
    if (hljs) (hljs.highlightElement || hljs.highlightBlock).call(hljs, code);
    return kope.el('pre', { id: 'source' }, code);
  }

  function timing(label, t) {
    if (!t) return null;
    return [label, `median ${kope.fmt.seconds(t.median_s)} (p20 ${kope.fmt.seconds(t.p20_s)}, p80 ${kope.fmt.seconds(t.p80_s)}, min ${kope.fmt.seconds(t.min_s)}), ${t.samples} samples, spread ${(100 * t.spread).toFixed(1)}%`];
  }

  function outcomeView(o) {
    const e = o.evidence || {};
    const m = e.mismatch;
    const diags = (e.diagnostics || []).map((d) => `${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}`);
    const profile = e.profile ? Object.entries(e.profile.metrics || {}).map(([k, v]) => `${k}=${v}`).join(', ') : '';
    return kope.el('div', { class: 'outcome', 'data-outcome': o.id },
      kope.el('h2', {}, `Outcome o${o.id} (${o.stage}) `, kope.verdictBadge(o)),
      kope.kv([
        ['speedup', kope.fmt.speedup(o.speedup)],
        ['roofline', `${kope.fmt.pct(o.roofline)} of the floor ${kope.fmt.seconds(e.roofline_floor_s)} (baseline ${kope.fmt.pct(e.baseline_roofline_fraction)})`],
        timing('candidate', e.candidate_time), timing('baseline', e.baseline_time),
        ['flags', (e.flags || []).join(', ') || '-'],
        e.timing_policy ? ['timing policy', e.timing_policy] : null,
        m ? ['first wrong element', `${m.reason} at ${m.size_set}, trial ${m.trial}: ${m.tensor}[${(m.position || []).join(', ')}] expected ${m.expected}, got ${m.actual} (${m.mismatches} of ${m.elements} wrong; max abs err ${m.max_abs_error}, max rel err ${m.max_rel_error})`] : null,
        profile ? ['profile', profile + (e.profile.limiter ? '; limited by ' + e.profile.limiter : '')] : null,
        o.error_message ? ['error', kope.el('pre', { text: o.error_message })] : null,
        diags.length ? ['diagnostics', kope.el('pre', { class: 'diagnostics', text: diags.join('\n') })] : null,
        e.runtime_detail ? ['runtime', kope.el('pre', { text: e.runtime_detail })] : null]));
  }

  const brief = (rows) => kope.table([
    ['attempt', (a) => kope.attemptLink(a.id)], ['verdict', (a) => kope.verdictBadge(a.outcome)],
    ['speedup', (a) => kope.fmt.speedup(a.outcome && a.outcome.speedup), 'num'],
    ['proposer', (a) => a.proposer], ['decision', (a) => kope.fmt.firstLine(a.decision)]], rows);

  kope.route(/^\/attempts\/(\d+)$/, async (main, m) => {
    const a = await kope.api('/api/attempts/' + m[1]);
    const language = a.task_node.attrs.language === 'cuda' ? 'cpp' : (a.task_node.attrs.language === 'python' ? 'python' : 'cpp');
    main.replaceChildren(
      kope.el('h1', {}, `Attempt a${a.id} of `, kope.link('/tasks/' + a.task, a.task_node.name), ' in ', kope.link('/runs/' + a.run, 'r' + a.run)),
      kope.kv([
        ['decision', a.decision], ['classes', a.classes.join(', ') || '-'], ['proposer', a.proposer],
        ['parent', a.parent ? kope.attemptLink(a.parent) : '(root)'],
        ['hardware', `${a.hardware_node.device} (${a.hardware_node.arch})`],
        ['tokens', `${a.prompt_tokens} prompt + ${a.completion_tokens} completion`],
        ['cost', kope.fmt.usd(a.cost_usd)],
        ['created', kope.fmt.date(a.created_at)]]),
      ...(a.outcomes.length ? a.outcomes.map(outcomeView) : [kope.el('p', { class: 'muted', text: 'no outcome recorded' })]),
      kope.el('h2', { text: a.parent ? `Diff to its parent a${a.parent}` : 'Diff (a root: its whole source)' }),
      a.diff ? diffView(a.diff) : kope.el('p', { class: 'muted', text: 'no change' }),
      kope.el('h2', { text: 'Source' }), sourceView(a.source, language),
      kope.el('h2', { text: 'Context it was shown (used)' }),
      a.used.length ? kope.table([
        ['item', (u) => (u.kind === 'insight' ? kope.link('/insights/' + u.id, u.target) : kope.attemptLink(u.id))],
        ['section', (u) => u.section], ['score', (u) => u.score.toFixed(3), 'num'], ['tokens', (u) => u.tokens, 'num'],
        ['credit', (u) => (u.credit === null ? '-' : u.credit.toFixed(3)), 'num'], ['text', (u) => kope.fmt.firstLine(u.text, 120)]], a.used)
        : kope.el('p', { class: 'muted', text: 'none recorded' }),
      kope.el('h2', { text: 'Insights it supports or contradicts' }),
      a.insights.length ? kope.table([
        ['insight', (r) => kope.link('/insights/' + r.insight.id, 'i' + r.insight.id)], ['relation', (r) => r.relation],
        ['effect', (r) => r.effect.toFixed(3), 'num'], ['text', (r) => r.insight.text]], a.insights)
        : kope.el('p', { class: 'muted', text: 'none' }),
      kope.el('h2', { text: 'Lineage (root first)' }), brief(a.lineage),
      kope.el('h2', { text: 'Alternatives tried from here (children)' }),
      a.children.length ? brief(a.children) : kope.el('p', { class: 'muted', text: 'none' }));
  });
})();
