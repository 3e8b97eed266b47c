// GPU page: draws the price history (data embedded as JSON by the server) with uPlot.
// The server orders the series cheapest first and says how many to draw (`shown`): each of
// those gets its own colour; the rest, behind the toggle, are thin grey context lines.
"use strict";
(function () {
  var holder = document.getElementById("chart");
  var source = document.getElementById("chart-data");
  var toggle = document.getElementById("chart-toggle");
  if (!holder || !source || typeof uPlot === "undefined") return;
  var data = JSON.parse(source.textContent);
  // Eight hues that stay apart on white and on dark grey (Tableau 10, less grey and olive).
  var palette = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7"];
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var ink = dark ? "#d4d4d8" : "#27272a";
  var grid = dark ? "#3f3f46" : "#e4e4e7";
  var rest = dark ? "#71717a" : "#a1a1aa";
  var all = false;
  var plot = null;

  function line(label, i) {
    var own = i < palette.length && i < data.shown;
    return {
      label: label,
      stroke: own ? palette[i] : rest,
      dash: data.spot[i] ? [6, 4] : undefined,
      width: own ? 2 : 1,
      points: { show: false },
      spanGaps: false,
      value: function (u, v) { return v == null ? "—" : "$" + v.toFixed(2); }
    };
  }
  function size() {
    return { width: Math.max(280, holder.clientWidth), height: Math.min(360, Math.max(240, holder.clientWidth * 0.5)) };
  }
  function draw() {
    var count = all ? data.labels.length : data.shown;
    var axis = { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } };
    var opts = Object.assign(size(), {
      series: [{}].concat(data.labels.slice(0, count).map(line)),
      axes: [axis, Object.assign({}, axis, { size: 64, values: function (u, vals) { return vals.map(function (v) { return "$" + v.toFixed(2); }); } })],
      legend: { live: false }
    });
    if (plot) plot.destroy();
    plot = new uPlot(opts, [data.x].concat(data.series.slice(0, count)), holder);
    holder.dataset.series = String(count);
  }
  draw();
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      all = !all;
      toggle.textContent = all ? "Show the " + data.shown + " cheapest" : "Show all " + data.labels.length + " lines";
      draw();
    });
  }
  window.addEventListener("resize", function () { plot.setSize(size()); });
})();
