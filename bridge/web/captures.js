// The page's Captures tab: capture points (set, listed, cleared), the captures they took and
// the post-mortem ones, one opened as its worker was (frames, source, locals), and one
// expression over a point's captures rank by rank. Loaded after page.js, whose helpers
// (`$`, `el`, `api`, `setStatus`, `currentFilter`) it uses; page.js hands it the events feed's
// capture messages (`capturesChanged`). Captured values are shown as text only: they are the
// program's strings.
'use strict';

const captureList = { points: [], captures: [] };
let captureShown = null;
let capturesLoading = null;

function whereText(path, line) {
  return `${path.split('/').pop()}:${line}`;
}

function timeText(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString();
}

function pointOnly(point) {
  const only = [];
  if (point.job) only.push(`job ${point.job}`);
  if (point.rank !== null && point.rank !== undefined) only.push(`rank ${point.rank}`);
  if (point.condition) only.push(`if ${point.condition}`);
  return only.join(', ');
}

function pointState(point) {
  if (point.disabled) return `off: ${point.disabled}`;
  if (point.expired) return 'expired';
  return point.most && point.captures >= point.most ? 'done' : 'on';
}

function pointRow(point) {
  const label = `${point.id} at ${whereText(point.path, point.line)}`;
  return el('tr', { 'data-point': point.id },
    el('td', { class: 'mono', text: point.id }),
    el('td', { class: 'mono', text: whereText(point.path, point.line), title: point.path }),
    el('td', { text: point.owner }),
    el('td', { text: pointOnly(point) }),
    el('td', { text: String(point.captures) }),
    el('td', { class: point.disabled ? 'error' : '', text: pointState(point) }),
    el('td', {},
      el('button', { type: 'button', text: 'Compare', 'aria-label': `Compare ranks at ${label}`,
        onclick: () => { $('compare-point').value = point.id; $('compare-expression').focus(); } }),
      el('button', { type: 'button', text: 'Clear', 'aria-label': `Clear ${label}`,
        onclick: (e) => clearPoint(e.target, point.id) })));
}

function captureRow(capture) {
  const what = capture.exception || (capture.point ? `${capture.point}, hit ${capture.hit ?? '?'}` : '');
  const who = capture.rank === null || capture.rank === undefined ? capture.worker : `rank ${capture.rank}`;
  return el('tr', { 'data-capture': capture.id },
    el('td', { text: timeText(capture.time) }),
    el('td', { text: capture.kind }),
    el('td', { text: who }),
    el('td', { class: 'mono', text: whereText(capture.path, capture.line), title: capture.path }),
    el('td', { text: capture.function }),
    el('td', { class: capture.exception ? 'exception' : 'mono', text: what + (capture.truncated ? ' (cut short)' : '') }),
    el('td', {}, el('button', { type: 'button', text: 'Open', 'aria-label': `Open ${capture.id}`,
      onclick: () => openCapture(capture.id) }),
    el('button', { type: 'button', text: 'Debug view', 'aria-label': `Debug view of ${capture.id}`,
      onclick: () => openCaptureView(capture) }))); // worker.js
}

function table(label, columns, rows) {
  return el('table', { 'aria-label': label },
    el('thead', {}, el('tr', {}, ...columns.map((name) => el('th', { scope: 'col', text: name })))),
    el('tbody', {}, ...rows));
}

function renderCaptures() {
  const job = $('job-filter').value;
  const points = captureList.points;
  $('capture-points').replaceChildren(points.length
    ? table('Capture points', ['Point', 'Where', 'Set by', 'Only', 'Captures', 'State', ''], points.map(pointRow))
    : el('p', { text: 'No capture point. Set one above, or with "Capture (no stop)" on an editor breakpoint.' }));
  const compare = $('compare-point');
  const chosen = compare.value;
  compare.replaceChildren(...points.map((p) => el('option', { value: p.id, text: `${p.id} (${whereText(p.path, p.line)})` })));
  if (points.some((p) => p.id === chosen)) compare.value = chosen;
  const shown = captureList.captures.filter((c) => !job || c.job === job).slice(-200).reverse();
  $('capture-list').replaceChildren(shown.length
    ? table('Captures', ['Time', 'Kind', 'Rank', 'Where', 'Function', 'Point or exception', ''], shown.map(captureRow))
    : el('p', { text: 'No capture yet.' }));
}

async function loadCaptures() {
  // One load at a time: a burst of capture messages while loading asks for one more after it.
  if (capturesLoading) return capturesLoading;
  capturesLoading = (async () => {
    try {
      const [points, captures] = await Promise.all([api('GET', '/api/v1/capture-points'), api('GET', '/api/v1/captures')]);
      captureList.points = points.points;
      captureList.captures = captures.captures;
      renderCaptures();
    } catch (error) {
      $('capture-list').replaceChildren(el('p', { class: 'error', text: error.message }));
    } finally {
      capturesLoading = null;
    }
  })();
  return capturesLoading;
}

// The events feed's capture messages: a new capture is listed at once, a point that turned
// itself off is read again (with its reason).
function capturesChanged(change) {
  if (change.kind === 'capture') {
    captureList.captures.push(change.capture);
    const point = captureList.points.find((p) => p.id === change.capture.point);
    if (point) point.captures += 1;
  } else if (change.kind === 'capture_point_disabled') {
    setStatus(`capture point ${change.point} turned itself off: ${change.reason || 'no reason given'}`);
    loadCaptures();
    return;
  }
  if (!$('panel-captures').hidden) renderCaptures();
}

async function clearPoint(button, id) {
  button.disabled = true;
  try {
    await api('DELETE', `/api/v1/capture-points/${encodeURIComponent(id)}`);
    await loadCaptures();
  } catch (error) {
    setStatus(`Clear ${id}: ${error.message}`);
    button.disabled = false;
  }
}

$('set-point').addEventListener('submit', async (event) => {
  event.preventDefault();
  const asked = { path: $('point-path').value, line: Number($('point-line').value) };
  if ($('point-rank').value !== '') asked.rank = Number($('point-rank').value);
  if ($('job-filter').value) asked.job = $('job-filter').value;
  try {
    const point = await api('POST', '/api/v1/capture-points', asked);
    setStatus(`capture point ${point.id} set at ${whereText(point.path, point.line)}`);
    await loadCaptures();
  } catch (error) {
    setStatus(`Set a capture point: ${error.message}`);
  }
});

// -- one expression across a point's ranks ----------------------------------------------------

function valueText(value) {
  const shape = value.shape ? ` shape ${JSON.stringify(value.shape)} ${value.dtype} on ${value.device}` : '';
  return `${value.value}${shape}${value.cut ? ` (${value.cut})` : ''}`;
}

$('compare').addEventListener('submit', async (event) => {
  event.preventDefault();
  const point = $('compare-point').value;
  const expression = $('compare-expression').value;
  const out = $('compare-results');
  try {
    const query = new URLSearchParams({ expression });
    const rows = (await api('GET', `/api/v1/capture-points/${encodeURIComponent(point)}/show?${query}`)).ranks;
    out.replaceChildren(rows.length
      ? table(`Captured ${expression} at ${point}`, ['Rank', 'Capture', expression], rows.map((row) =>
        el('tr', {},
          el('td', { text: row.rank === null ? row.worker : String(row.rank) }),
          el('td', { class: 'mono', text: row.capture }),
          el('td', { class: `value mono${row.error ? ' error' : ''}`, text: row.error || valueText(row.value) }))))
      : el('p', { text: `No capture of ${point} yet.` }));
    const chart = numbersChart(expression, rows);
    if (chart) out.append(chart);
  } catch (error) {
    out.replaceChildren(el('p', { class: 'error', text: error.message }));
  }
});

// The numbers among a compare's values as bars by rank (d3), beside the table that says them
// all: a rank whose loss ran away shows at a glance.
function numbersChart(expression, rows) {
  const numbers = rows
    .map((row) => ({ who: row.rank === null ? row.worker : `rank ${row.rank}`, n: row.value ? Number(row.value.value) : NaN }))
    .filter((point) => Number.isFinite(point.n));
  if (!window.d3 || numbers.length < 2) return null;
  const width = Math.min(900, 60 + numbers.length * 28), height = 160, left = 50, bottom = 24;
  const x = d3.scaleBand().domain(numbers.map((p) => p.who)).range([left, width - 10]).padding(0.2);
  const low = Math.min(0, ...numbers.map((p) => p.n)), high = Math.max(0, ...numbers.map((p) => p.n));
  const y = d3.scaleLinear().domain([low, high === low ? low + 1 : high]).nice().range([height - bottom, 10]);
  const box = el('figure', { class: 'numbers-chart', 'aria-hidden': 'true' });
  const svg = d3.select(box).append('svg').attr('width', width).attr('height', height);
  svg.append('g').attr('transform', `translate(${left},0)`).call(d3.axisLeft(y).ticks(4));
  svg.append('g').attr('transform', `translate(0,${y(0)})`).call(d3.axisBottom(x).tickSize(0).tickFormat(() => ''));
  svg.selectAll('rect').data(numbers).join('rect')
    .attr('x', (p) => x(p.who)).attr('width', x.bandwidth())
    .attr('y', (p) => y(Math.max(0, p.n))).attr('height', (p) => Math.abs(y(p.n) - y(0)))
    .attr('class', 'bar')
    .append('title').text((p) => `${p.who}: ${expression} = ${p.n}`);
  box.append(el('figcaption', { text: `${expression} by rank` }));
  return box;
}

// -- one capture, opened --------------------------------------------------------------------

function valueNode(value) {
  const text = `${value.name} = ${valueText(value)}`;
  const type = el('span', { class: 'type', text: value.type ? `  ${value.type}` : '' });
  if (!value.children || !value.children.length) return el('li', { class: 'mono' }, text, type);
  return el('li', { class: 'mono' }, el('details', {}, el('summary', {}, text, type),
    el('ul', {}, ...value.children.map(valueNode))));
}

function sourceOf(frame) {
  if (!frame.source) return el('p', { text: 'Its source was not captured.' });
  return el('ol', { class: 'source mono', start: String(frame.source.first), 'aria-label': `Source of ${frame.function}` },
    ...frame.source.lines.map((text, i) => {
      const here = frame.source.first + i === frame.line;
      return el('li', here ? { 'aria-current': 'true', class: 'here' } : {}, text || ' ');
    }));
}

function showFrame(index) {
  const frame = captureShown.frames[index];
  for (const [i, button] of [...document.querySelectorAll('#capture-frames button')].entries()) {
    button.setAttribute('aria-pressed', String(i === index));
  }
  const locals = frame.locals
    ? el('ul', { class: 'locals', 'aria-label': `Locals of ${frame.function}` }, ...frame.locals.map(valueNode))
    : el('p', { text: frame.cut || 'Its locals were not captured (only the innermost frames\' are).' });
  $('capture-frame').replaceChildren(el('h4', { text: `${frame.function} (${whereText(frame.path, frame.line)})` }),
    sourceOf(frame), el('h4', { text: 'Locals' }), locals);
}

async function openCapture(id) {
  const view = $('capture-view');
  try {
    captureShown = await api('GET', `/api/v1/captures/${encodeURIComponent(id)}`);
  } catch (error) {
    view.replaceChildren(el('p', { class: 'error', text: error.message }));
    return;
  }
  const c = captureShown;
  const who = c.rank === null ? c.worker : `rank ${c.rank}`;
  view.replaceChildren(
    el('h3', { text: `Capture ${c.id}: ${who}, ${timeText(c.time)}` }),
    el('p', { class: c.exception ? 'exception' : '', text: c.exception ||
      `capture point ${c.point}, hit ${c.hit ?? '?'}; the worker ran on` }),
    c.truncated ? el('p', { class: 'muted', text: 'Cut short by its bounds: each cut is marked where it was made.' }) : '',
    el('div', { class: 'capture-body' },
      el('ul', { id: 'capture-frames', 'aria-label': 'Captured frames' }, ...c.frames.map((frame, i) =>
        el('li', {}, el('button', { type: 'button', class: 'frame', 'aria-pressed': 'false',
          onclick: () => showFrame(i) }, `${frame.function} (${whereText(frame.path, frame.line)})`)))),
      el('div', { id: 'capture-frame' })));
  showFrame(0);
  view.scrollIntoView({ block: 'start' });
}

$('refresh-captures').addEventListener('click', loadCaptures);
