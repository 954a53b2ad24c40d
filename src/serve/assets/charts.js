// Hand-written SVG charts: lines (best speedup over attempts), bars (distributions, tokens) and
// scatter plots (roofline position). Each returns a <div class="chart"> holding one <svg>.
'use strict';

kope.charts = (function () {
  const W = 460, H = 240, M = { l: 52, r: 14, t: 12, b: 34 };
  const s = kope.svg;

  function ticks(lo, hi, n = 5) {
    if (!(hi > lo)) return [lo];
    const step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((st) => (hi - lo) / st <= n) || step * 10;
    const out = [];
    for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-12; v += nice) out.push(+v.toPrecision(10));
    return out;
  }

  // A frame with axes; returns {svg, x(v), y(v)}.
  function frame(x0, x1, y0, y1, xLabel, yLabel, cls, xTicks = true) {
    const x = (v) => M.l + ((v - x0) / (x1 - x0 || 1)) * (W - M.l - M.r);
    const y = (v) => H - M.b - ((v - y0) / (y1 - y0 || 1)) * (H - M.t - M.b);
    const svg = s('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'plot ' + (cls || '') });
    for (const t of ticks(y0, y1)) {
      svg.appendChild(s('line', { class: 'grid', x1: M.l, x2: W - M.r, y1: y(t), y2: y(t) }));
      svg.appendChild(s('text', { x: M.l - 6, y: y(t) + 4, 'text-anchor': 'end' }, String(t)));
    }
    for (const t of xTicks ? ticks(x0, x1, 6) : []) {
      svg.appendChild(s('text', { x: x(t), y: H - M.b + 14, 'text-anchor': 'middle' }, String(t)));
    }
    svg.appendChild(s('line', { class: 'axis', x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }));
    svg.appendChild(s('line', { class: 'axis', x1: M.l, x2: M.l, y1: M.t, y2: H - M.b }));
    svg.appendChild(s('text', { x: (M.l + W - M.r) / 2, y: H - 4, 'text-anchor': 'middle' }, xLabel));
    svg.appendChild(s('text', { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, 'text-anchor': 'middle' }, yLabel));
    return { svg, x, y };
  }

  function wrap(title, svg, name) {
    return kope.el('div', { class: 'chart', 'data-chart': name }, kope.el('div', { class: 'title', text: title }), svg);
  }

  function empty(title, name) {
    return kope.el('div', { class: 'chart', 'data-chart': name }, kope.el('div', { class: 'title', text: title }),
      kope.el('p', { class: 'muted', text: 'no data yet' }));
  }

  // series: [{name, color, points: [[x, y]], step, dots}]
  function line(title, name, series, xLabel, yLabel) {
    const all = series.flatMap((se) => se.points);
    if (all.length === 0) return empty(title, name);
    const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
    const f = frame(Math.min(...xs), Math.max(...xs), 0, Math.max(...ys) * 1.08, xLabel, yLabel, 'line');
    for (const se of series) {
      let d = '';
      se.points.forEach((p, i) => {
        const px = f.x(p[0]), py = f.y(p[1]);
        if (i === 0) d += `M${px},${py}`;
        else d += se.step ? `H${px}V${py}` : `L${px},${py}`;
      });
      f.svg.appendChild(s('path', { d, fill: 'none', stroke: se.color, 'stroke-width': 2, class: 'series' }));
      if (se.dots) {
        for (const p of se.points) f.svg.appendChild(s('circle', { cx: f.x(p[0]), cy: f.y(p[1]), r: 2.5, fill: se.color }));
      }
    }
    return wrap(title, f.svg, name);
  }

  // bars: [{label, value, color}]; a few bars are labelled under the axis and with their value,
  // many only in their tooltips. `ref`: a value marked across the chart (e.g. a speedup of 1).
  function bars(title, name, data, xLabel, yLabel, ref) {
    if (data.length === 0 || data.every((b) => !b.value)) return empty(title, name);
    const labelled = data.length <= 8;
    const top = Math.max(...data.map((b) => b.value), ref || 0) * 1.12;
    const f = frame(0, data.length, 0, top, xLabel, yLabel, 'bars', !labelled);
    const bw = (W - M.l - M.r) / data.length;
    data.forEach((b, i) => {
      const rect = s('rect', { x: f.x(i) + 1, y: f.y(b.value), width: Math.max(1, bw - 2),
        height: f.y(0) - f.y(b.value), fill: b.color || '#2f6fb3', class: 'bar' });
      rect.appendChild(s('title', {}, `${b.label}: ${b.value}`));
      f.svg.appendChild(rect);
      if (!labelled) return;
      const mid = f.x(i) + bw / 2;
      f.svg.appendChild(s('text', { x: mid, y: H - M.b + 14, 'text-anchor': 'middle', class: 'bar-label' }, b.short || b.label));
      f.svg.appendChild(s('text', { x: mid, y: f.y(b.value) - 3, 'text-anchor': 'middle' }, String(+b.value.toPrecision(3))));
    });
    if (ref !== undefined) {
      f.svg.appendChild(s('line', { x1: M.l, x2: W - M.r, y1: f.y(ref), y2: f.y(ref), stroke: '#444', 'stroke-dasharray': '4 3' }));
    }
    return wrap(title, f.svg, name);
  }

  // points: [{x, y, color, href, tip}]; hlines: [{y, label}]
  function scatter(title, name, points, xLabel, yLabel, hlines = []) {
    if (points.length === 0) return empty(title, name);
    const xs = points.map((p) => p.x), ys = points.map((p) => p.y).concat(hlines.map((h) => h.y));
    const f = frame(Math.min(...xs), Math.max(...xs) + (xs.length === 1 ? 1 : 0), 0, Math.max(...ys) * 1.08, xLabel, yLabel, 'scatter');
    for (const h of hlines) {
      f.svg.appendChild(s('line', { x1: M.l, x2: W - M.r, y1: f.y(h.y), y2: f.y(h.y), stroke: '#b31d28', 'stroke-dasharray': '4 3' }));
      f.svg.appendChild(s('text', { x: W - M.r - 2, y: f.y(h.y) - 3, 'text-anchor': 'end' }, h.label));
    }
    for (const p of points) {
      const dot = s('circle', { cx: f.x(p.x), cy: f.y(p.y), r: 3.5, fill: p.color || '#2f6fb3', class: 'point' });
      dot.appendChild(s('title', {}, p.tip || ''));
      f.svg.appendChild(p.href ? s('a', { href: p.href }, dot) : dot);
    }
    return wrap(title, f.svg, name);
  }

  return { line, bars, scatter };
})();
