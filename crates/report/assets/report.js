// storbench report charts: draws the data embedded in #report-data with uPlot.
// When done it sets data-charts-expected / data-charts-drawn / data-errors on <body>,
// which the browser test reads.
(function () {
  "use strict";
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    document.body.setAttribute("data-errors", String(errors.length));
    // For the browser test's failure message.
    document.body.setAttribute("data-error-text", errors.join(" | "));
  }
  window.addEventListener("error", function (e) { fail(e.message); });

  var data = JSON.parse(document.getElementById("report-data").textContent);
  var palette = ["#2456a6", "#d9822b", "#2a9d5c", "#b3261e", "#7b4fb0", "#3c8d9e", "#a0673a", "#5f6b7a"];
  var expected = 0, drawn = 0, gaps = 0;
  var WIDTH = 560, HEIGHT = 260;

  function color(i) { return palette[i % palette.length]; }

  function panel(containerId, title) {
    var box = document.createElement("div");
    box.className = "chart";
    var h = document.createElement("h4");
    h.textContent = title;
    box.appendChild(h);
    document.getElementById(containerId).appendChild(box);
    return box;
  }

  function empty(containerId, text) {
    var p = document.createElement("p");
    p.className = "empty";
    p.textContent = text;
    document.getElementById(containerId).appendChild(p);
  }

  function plot(box, opts, series) {
    expected++;
    try {
      opts.width = opts.width || WIDTH;
      opts.height = HEIGHT;
      // The legend names the series; live values would read "--" until hovered.
      opts.legend = { live: false };
      var u = new uPlot(opts, series, box);
      if (u.root.querySelector("canvas")) { drawn++; }
    } catch (e) {
      fail("chart '" + box.firstChild.textContent + "': " + e);
    }
  }

  // A line under a chart's title: what the chart cannot show as a bar.
  function caption(box, text) {
    var p = document.createElement("p");
    p.className = "too-fast";
    p.textContent = text;
    box.appendChild(p);
  }

  // "run — test" for each cell bonnie++ marked +++++ (finished too fast to time).
  function tooFast(chart) {
    var cells = [];
    chart.too_fast.forEach(function (row, r) {
      row.forEach(function (f, t) { if (f) { cells.push(data.runs[r] + " \u2014 " + chart.tests[t]); } });
    });
    return cells;
  }

  // Grouped bars: test t, run r sits at slot t*(R+1)+r; other runs' slots are null.
  // Rates span decades (SEQ1M next to RND4K Q1T1): those axes are logarithmic, so every
  // bar stays visible; percentages and counts that start at zero stay linear. A test
  // finished too fast to time has no bar and is named under the chart; a chart with no
  // bar at all says so instead of drawing empty axes.
  function barChart(chart) {
    var R = data.runs.length, T = chart.tests.length, slots = T * (R + 1);
    var fast = tooFast(chart);
    var any = chart.values.some(function (row) { return row.some(function (v) { return v !== null; }); });
    if (!any) {
      var only = panel("bar-charts", chart.title);
      caption(only, "too fast to measure (bonnie++'s +++++): " + (fast.join(", ") || "no figure"));
      return;
    }
    var xs = [], cols = [];
    for (var i = 0; i < slots; i++) { xs.push(i); }
    var series = [{}];
    for (var r = 0; r < R; r++) {
      var col = new Array(slots).fill(null);
      for (var t = 0; t < T; t++) { col[t * (R + 1) + r] = chart.values[r][t]; }
      cols.push(col);
      series.push({
        label: data.runs[r], fill: color(r), stroke: color(r), width: 0,
        paths: uPlot.paths.bars({ size: [0.9, 80], align: 0 }), points: { show: false }
      });
    }
    var centers = chart.tests.map(function (_, t) { return t * (R + 1) + (R - 1) / 2; });
    var positive = [], zero = false;
    chart.values.forEach(function (row) { row.forEach(function (v) { if (v > 0) { positive.push(v); } else if (v === 0) { zero = true; } }); });
    var lo = Math.min.apply(null, positive), hi = Math.max.apply(null, positive);
    var log = !zero && positive.length > 1 && hi / lo >= 20;
    var yScale = log
      ? { distr: 3, range: function () { return [Math.pow(10, Math.floor(Math.log10(lo))), Math.pow(10, Math.ceil(Math.log10(hi)))]; } }
      : { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } };
    // Slanted labels (25°, about 6.5 px a character) need room below the axis for the
    // longest and on the right for the last, which runs past the last group of bars.
    var longest = Math.max.apply(null, chart.tests.map(function (name) { return name.length; }));
    var last = chart.tests[T - 1].length;
    var below = Math.max(80, Math.ceil(longest * 6.5 * Math.sin(Math.PI * 25 / 180)) + 30);
    var right = Math.max(70, Math.ceil(last * 6.5 * Math.cos(Math.PI * 25 / 180)) - 20);
    var box = panel("bar-charts", chart.title);
    plot(box, {
      // Room for every group of bars, and on the right for the last slanted label.
      width: Math.max(WIDTH, Math.min(1180, 20 + slots * 16 + right)),
      padding: [12, right, 0, 8],
      series: series,
      scales: { x: { time: false, range: [-0.8, slots - 0.2] }, y: yScale },
      axes: [
        { splits: function () { return centers; }, values: function () { return chart.tests; }, size: below, rotate: -25, grid: { show: false } },
        { label: chart.unit + (log ? " (log scale)" : ""), size: 70 }
      ]
    }, [xs].concat(cols));
    box.setAttribute("data-scale", log ? "log" : "linear");
    if (fast.length) { caption(box, "too fast to measure (bonnie++'s +++++), no bar: " + fast.join(", ")); }
  }

  // Percentile curves on a "nines" axis: x = -log10(1 - p/100), so p99.9 is 3.
  function latencyChart(c) {
    var nines = c.ps.map(function (p) { return -Math.log10(1 - p / 100); });
    var ticks = [50, 90, 99, 99.9, 99.99];
    var series = [{}], cols = [nines];
    c.series.forEach(function (s) {
      series.push({ label: data.runs[s[0]], stroke: color(s[0]), width: 2, points: { show: true, size: 4 } });
      cols.push(s[1]);
    });
    plot(panel("latency-charts", c.test), {
      series: series,
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [
        { splits: function () { return ticks.map(function (p) { return -Math.log10(1 - p / 100); }); },
          values: function () { return ticks.map(function (p) { return "p" + p; }); } },
        { label: "µs", size: 70 }
      ]
    }, cols);
  }

  // Share of IOs per log-spaced latency bin, one stepped line per run.
  function histogramChart(h) {
    var series = [{}], cols = [h.edges_us];
    h.series.forEach(function (s) {
      series.push({ label: data.runs[s[0]], stroke: color(s[0]), width: 2,
        paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } });
      cols.push(s[1].concat([null]));
    });
    plot(panel("histogram-charts", h.test), {
      series: series,
      scales: { x: { time: false, distr: 3 } },
      axes: [{ label: "µs (log scale)" }, { label: "% of IOs", size: 70 }]
    }, cols);
  }

  // One x axis (seconds) shared by every run of the test; missing seconds are null.
  function timelineCharts(tl) {
    var times = [];
    tl.series.forEach(function (s) { s.t_s.forEach(function (t) { if (times.indexOf(t) < 0) { times.push(t); } }); });
    times.sort(function (a, b) { return a - b; });
    ["mbps", "iops"].forEach(function (key) {
      var series = [{}], cols = [times];
      tl.series.forEach(function (s) {
        var col = times.map(function (t) { var i = s.t_s.indexOf(t); return i < 0 ? null : s[key][i]; });
        // A missing value between two samples of the same run would break its line
        // (spanGaps bridges it, but the shared time base should leave none).
        var first = col.findIndex(function (v) { return v !== null; });
        for (var i = first + 1; first >= 0 && i < col.length; i++) {
          if (col[i] === null && col.slice(i).some(function (v) { return v !== null; })) { gaps++; }
        }
        series.push({ label: data.runs[s.run], stroke: color(s.run), width: 2, spanGaps: true });
        cols.push(col);
      });
      plot(panel("timeline-charts", tl.test + (key === "mbps" ? " — MB/s" : " — IOPS")), {
        series: series,
        scales: { x: { time: false } },
        axes: [{ label: "s" }, { label: key === "mbps" ? "MB/s" : "IOPS", size: 70 }]
      }, cols);
    });
  }

  try {
    data.bars.forEach(barChart);
    if (!data.bars.length) { empty("bar-charts", "These runs share no test."); }
    data.percentiles.forEach(latencyChart);
    if (!data.percentiles.length) { empty("latency-charts", "No latency histograms in these runs (bonnie++ records none)."); }
    data.histograms.forEach(histogramChart);
    if (!data.histograms.length) { empty("histogram-charts", "No latency histograms in these runs (bonnie++ records none)."); }
    data.timelines.forEach(timelineCharts);
    if (!data.timelines.length) { empty("timeline-charts", "No per-second samples in these runs (imported results carry none)."); }
  } catch (e) {
    fail(e);
  }
  document.body.setAttribute("data-charts-expected", String(expected));
  document.body.setAttribute("data-charts-drawn", String(drawn));
  document.body.setAttribute("data-timeline-gaps", String(gaps));
  document.body.setAttribute("data-errors", String(errors.length));
  document.body.setAttribute("data-ready", "1");
})();
