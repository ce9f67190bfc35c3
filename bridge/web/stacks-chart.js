// The merged stacks as an icicle chart (d3-flame-graph, inverted): outermost frames on top, each
// frame as wide as the number of ranks in it. Hovering names the ranks (and their locals, when
// read with them); a click lists the ranks, each to open; the stragglers of a hang verdict are
// red (a frame only they are in: the frames they share with the others stay as they are). The
// text tree beside it stays, for screen readers and for copying.
'use strict';

const RANKS_NAMED = 16; // ranks named on hover; the rest are counted

function rankNames(ids) {
  const names = ids.slice(0, RANKS_NAMED).map((id) => {
    const record = records.get(id);
    return record && record.rank !== null && record.rank !== undefined ? `rank ${record.rank}` : id;
  });
  return ids.length > RANKS_NAMED ? `${names.join(', ')} and ${ids.length - RANKS_NAMED} more` : names.join(', ');
}

// {worker: {name: repr}}, each worker's locals in this frame (read with "with locals").
function localsText(node) {
  if (!node.locals) return '';
  const lines = Object.entries(node.locals).slice(0, RANKS_NAMED).map(([id, names]) =>
    `${rankNames([id])}: ${Object.entries(names).slice(0, 8).map(([name, value]) => `${name}=${value}`).join(', ')}`);
  return lines.length ? `\n${lines.join('\n')}` : '';
}

// The merged tree as the chart takes it: a name, a value (its ranks) and children.
function chartNode(node, stragglers) {
  return {
    name: frameLabel(node),
    value: node.workers.length,
    node,
    stragglers: node.workers.filter((id) => stragglers.has(id)),
    children: node.children.map((child) => chartNode(child, stragglers)),
  };
}

function onlyStragglers(data) {
  return data.stragglers.length > 0 && data.stragglers.length === data.value;
}

function drawStacksChart(tree, stragglers) {
  const box = $('stacks-chart');
  box.replaceChildren();
  if (!window.flamegraph || !tree.children.length) return;
  const workers = new Set(tree.children.flatMap((child) => child.workers));
  const root = { name: `${workers.size} worker${workers.size === 1 ? "" : "s"}`, value: workers.size,
    node: { function: '', path: '', line: 0, workers: [...workers], children: tree.children },
    stragglers: [...workers].filter((id) => stragglers.has(id)),
    children: tree.children.map((child) => chartNode(child, stragglers)) };
  const chart = flamegraph.default() // the UMD build's one export
    .width(Math.max(box.clientWidth, 600))
    .cellHeight(20)
    .inverted(true)
    .transitionDuration(0)
    .minFrameSize(1)
    .setColorMapper((d, color) => (onlyStragglers(d.data) ? '#cf222e' : color))
    .label((d) => `${d.data.name}: ${d.data.value} worker${d.data.value === 1 ? '' : 's'} (${rankNames(d.data.node.workers)})` +
      (onlyStragglers(d.data) ? `; straggler: ${rankNames(d.data.stragglers)}` : '') + localsText(d.data.node))
    .onClick((d) => showWorkersOf(d.data.node));
  d3.select(box).datum(root).call(chart);
  chart.update(); // frames drawn at their widths at once: the first drawing grows them in 250 ms
}
