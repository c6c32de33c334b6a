// The dashboard renderer. Pages are static HTML plus data files that set H0.site (data/site.js)
// and H0.runs[i] (data/run-<id>.js, i = the run's index in H0.site.runs, oldest first; the index
// and check pages load these here, so no page repeats a tag per run). This file builds the
// tables and charts with DOM calls only (textContent and attributes, never innerHTML), so no
// string from the store is ever parsed as HTML.
// <body data-page> picks what to render: index (the matrix), run (its cases), check (per stack
// version table and trend charts). <body data-rendered="1"> marks a render that completed;
// each chart's <canvas data-points="N"> says how many points it drew.
(function () {
  'use strict';
  var H0 = window.H0, site = H0.site, body = document.body, root = body.dataset.root || '';
  var BAD = { F: 1, E: 1, C: 1, T: 1 }, GOOD = { P: 1, x: 1 };
  var MAX_ROWS = 1000;  // rows a run's case table shows at once; the filter narrows the rest

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { if (attrs[k] != null) e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      if (c != null) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }
  function num(v) {
    if (v == null) return '–';
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3) : String(+v.toPrecision(4));
  }
  function ns(v) {
    if (v == null) return '–';
    var units = [[1e9, ' s'], [1e6, ' ms'], [1e3, ' µs']];
    for (var i = 0; i < units.length; i++) if (v >= units[i][0]) return num(v / units[i][0]) + units[i][1];
    return num(v) + ' ns';
  }
  function statusName(code) { return site.statuses[code] || 'other'; }
  function badge(code) { var s = statusName(code); return el('span', { 'class': 'st st-' + s }, [s]); }
  function casePage(ci) { return root + 'checks/' + site.cases[ci][2] + '.html'; }
  function runLink(ri) { var r = site.runs[ri]; return el('a', { href: root + r.page }, ['#' + r.id]); }
  // The run's data with its case indices expanded from [first, count] ranges.
  function runData(ri) {
    var d = H0.runs[ri];
    if (!d || d.expanded) return d;
    var c = [];
    d.c.forEach(function (r) { for (var i = 0; i < r[1]; i++) c.push(r[0] + i); });
    d.c = c;
    d.expanded = true;
    return d;
  }
  // Loads every run's data file, then calls done().
  function loadRuns(done) {
    var pending = 1;
    function loaded() { if (--pending === 0) done(); }
    site.runs.forEach(function (run, ri) {
      if (H0.runs[ri]) return;
      pending++;
      var s = document.createElement('script');
      s.src = root + run.data;
      s.onload = s.onerror = loaded;
      document.body.appendChild(s);
    });
    loaded();
  }
  function table(headers, rows, cls) {
    var t = el('table', { 'class': 'grid ' + (cls || '') });
    t.appendChild(el('tr', null, headers.map(function (h) { return el('th', null, [h]); })));
    rows.forEach(function (cells) {
      t.appendChild(el('tr', null, cells.map(function (c) { return el('td', null, [c]); })));
    });
    return t;
  }

  // ---- index: the matrix ----

  // cells[case][column] = [run index, position]: the latest run of that column having the case.
  function matrixCells() {
    var cells = [];
    site.runs.forEach(function (run, ri) {
      var d = runData(ri);
      if (!d) return;
      for (var i = 0; i < d.c.length; i++) (cells[d.c[i]] = cells[d.c[i]] || [])[run.col] = [ri, i];
    });
    return cells;
  }

  // A regression: failing here, passing in the previous column of the same platform.
  function matrixRow(ci, cells) {
    var c = site.cases[ci], key = c[3], last = {}, anyReg = false;
    var tr = el('tr', { 'data-case': c[0], 'data-href': casePage(ci) });
    tr.appendChild(el('th', null, [el('a', { href: casePage(ci) }, [c[0]])]));
    site.cols.forEach(function (col, k) {
      var ref = (cells[ci] || [])[k];
      if (!ref) { tr.appendChild(el('td', { 'class': 'cell none' })); return; }
      var d = H0.runs[ref[0]], code = d.s[ref[1]], prev = last[col.platform];
      var reg = !!(prev && GOOD[prev] && BAD[code]);
      last[col.platform] = code;
      var title = c[0] + '\n' + col.label + ' on ' + col.platform + ', run #' + site.runs[ref[0]].id + ': ' +
        statusName(code) + (key ? '\n' + key + ' = ' + num(d.k[ref[1]]) : '') + (reg ? '\nregression' : '');
      tr.appendChild(el('td', {
        'class': 'cell s-' + statusName(code) + (reg ? ' reg' : ''), 'data-status': statusName(code),
        'data-regression': reg ? '1' : null, title: title
      }));
      anyReg = anyReg || reg;
    });
    // Failing or regressed: failing in the latest column of a platform, or a regression anywhere.
    var bad = anyReg || Object.keys(last).some(function (p) { return BAD[last[p]]; });
    tr.setAttribute('data-bad', bad ? '1' : '0');
    return tr;
  }

  function renderMatrix() {
    var host = document.getElementById('matrix'), cells = matrixCells();
    var t = el('table', { 'class': 'matrix-table' });
    var head = el('tr', null, [el('th', null, ['check'])]);
    site.cols.forEach(function (col) {
      head.appendChild(el('th', { 'class': 'col', title: col.fp }, [col.label, el('br'), el('small', null, [col.platform])]));
    });
    t.appendChild(el('thead', null, [head]));
    var groups = site.groups.map(function () { return []; });
    site.cases.forEach(function (c, ci) { groups[c[1]].push(ci); });
    var fills = [];
    groups.forEach(function (members, g) {
      var tbody = el('tbody', { 'data-group': site.groups[g].join(' · ') });
      var header = el('tr', { 'class': 'group' }, [el('th', { colspan: String(site.cols.length + 1) },
        [site.groups[g][0] + ' · ' + site.groups[g][1] + ' (' + members.length + ')'])]);
      tbody.appendChild(header);
      var filled = false;
      function fill() {
        if (filled) return;
        filled = true;
        members.forEach(function (ci) { tbody.appendChild(matrixRow(ci, cells)); });
      }
      fills.push(function () { fill(); tbody.classList.remove('closed'); });
      header.addEventListener('click', function () { if (filled) tbody.classList.toggle('closed'); else fill(); });
      if (site.cases.length <= 2000) fill(); else tbody.classList.add('closed');
      t.appendChild(tbody);
    });
    t.addEventListener('click', function (e) {
      var td = e.target.closest('td.cell');
      if (td && !td.classList.contains('none')) location.href = td.parentNode.dataset.href;
    });
    host.appendChild(t);
    var text = document.getElementById('matrix-filter'), badOnly = document.getElementById('matrix-bad');
    function applyFilter() {
      var q = text.value.toLowerCase(), onlyBad = badOnly.checked;
      if (q || onlyBad) fills.forEach(function (f) { f(); });
      t.querySelectorAll('tr[data-case]').forEach(function (tr) {
        tr.hidden = (q !== '' && tr.dataset.case.toLowerCase().indexOf(q) < 0) || (onlyBad && tr.dataset.bad !== '1');
      });
    }
    text.addEventListener('input', applyFilter);
    badOnly.addEventListener('change', applyFilter);
  }

  // ---- run page: the cases, filterable ----

  function renderRun() {
    var d = runData(+body.dataset.run), host = document.getElementById('cases');
    var input = document.getElementById('case-filter'), select = document.getElementById('status-filter');
    var seen = {};
    for (var i = 0; i < d.s.length; i++) seen[d.s[i]] = (seen[d.s[i]] || 0) + 1;
    Object.keys(seen).forEach(function (code) {
      select.appendChild(el('option', { value: code }, [statusName(code) + ' (' + seen[code] + ')']));
    });
    function row(i) {
      var ci = d.c[i], key = site.cases[ci][3];
      return [el('a', { href: casePage(ci) }, [site.cases[ci][0]]), badge(d.s[i]),
        key ? key + ' = ' + num(d.k[i]) : '–', d.t[i] >= 0 ? d.tol[d.t[i]] : '–', ns(d.m[i]), ns(d.p[i]),
        el('span', { 'class': 'message' }, [d.msg[i] || ''])];
    }
    function draw() {
      var q = input.value.toLowerCase(), want = select.value, rows = [], total = 0;
      for (var i = 0; i < d.c.length; i++) {
        if (want && d.s[i] !== want) continue;
        var text = site.cases[d.c[i]][0] + '\n' + (d.msg[i] || '');
        if (q && text.toLowerCase().indexOf(q) < 0) continue;
        if (++total <= MAX_ROWS) rows.push(row(i));
      }
      host.textContent = '';
      host.appendChild(el('p', { id: 'case-count', 'class': 'muted' },
        [total > MAX_ROWS ? 'showing ' + MAX_ROWS + ' of ' + total + ' cases: refine the filter' : total + ' cases']));
      host.appendChild(table(['case', 'status', 'key metric', 'tolerance', 'median', 'p99', 'message'],
        rows, 'cases'));
    }
    input.addEventListener('input', draw);
    select.addEventListener('change', draw);
    draw();
  }

  // ---- check page: one case across runs ----

  function chart(id, labels, datasets, yTitle) {
    var canvas = document.getElementById(id);
    canvas.setAttribute('data-points', String(datasets[0].data.filter(function (v) { return v != null; }).length));
    new window.Chart(canvas, {
      type: 'line',
      data: { labels: labels, datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false, spanGaps: true,
        plugins: { title: { display: true, text: yTitle } },
        scales: { y: { title: { display: true, text: yTitle } } }
      }
    });
  }

  function renderCheck() {
    var ci = +body.dataset.case, key = site.cases[ci][3], points = [], byCol = {};
    site.runs.forEach(function (run, ri) {
      var d = runData(ri), i = d ? d.c.indexOf(ci) : -1;
      if (i >= 0) { points.push([ri, i]); byCol[run.col] = [ri, i]; }
    });
    var rows = [];
    site.cols.forEach(function (col, k) {
      var p = byCol[k];
      if (!p) return;
      var d = H0.runs[p[0]], i = p[1];
      rows.push([col.label, col.platform, runLink(p[0]), site.runs[p[0]].started, badge(d.s[i]), num(d.k[i]),
        d.t[i] >= 0 ? d.tol[d.t[i]] : '–', ns(d.m[i]), ns(d.p[i])]);
    });
    document.getElementById('stack-table').appendChild(table(['stack', 'platform', 'run', 'started', 'status',
      key || 'key metric', 'tolerance', 'median', 'p99'], rows, 'per-stack'));
    if (!window.Chart) {
      document.getElementById('trends').appendChild(el('p', { 'class': 'muted' },
        ['Charts need Chart.js (Debian package libjs-chart.js) when the site is generated.']));
      return;
    }
    var labels = points.map(function (p) { var r = site.runs[p[0]]; return '#' + r.id + ' ' + site.cols[r.col].label; });
    var value = function (field) { return points.map(function (p) { return H0.runs[p[0]][field][p[1]]; }); };
    var colors = points.map(function (p) { return BAD[H0.runs[p[0]].s[p[1]]] ? '#c62828' : '#1565c0'; });
    chart('chart-key', labels, [{ label: key || 'key metric', data: value('k'), borderColor: '#1565c0',
      pointBackgroundColor: colors, pointBorderColor: colors, pointRadius: 4 }], key || 'key metric');
    chart('chart-latency', labels, [
      { label: 'median (ns)', data: value('m'), borderColor: '#2e7d32', backgroundColor: '#2e7d32' },
      { label: 'p99 (ns)', data: value('p'), borderColor: '#a5d6a7', backgroundColor: 'rgba(46,125,50,0.15)', fill: '-1' }
    ], 'latency (ns)');
  }

  function rendered() { body.setAttribute('data-rendered', '1'); }
  var pages = {
    index: function () { loadRuns(function () { renderMatrix(); rendered(); }); },
    run: function () { renderRun(); rendered(); },
    check: function () { loadRuns(function () { renderCheck(); rendered(); }); }
  };
  if (!site) throw new Error('data/site.js did not load');
  (pages[body.dataset.page] || rendered)();
})();
