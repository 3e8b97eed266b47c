// GPU page: draws the price history (data embedded as JSON by the server) with uPlot.
"use strict";
(function () {
  var holder = document.getElementById("chart");
  var source = document.getElementById("chart-data");
  if (!holder || !source || typeof uPlot === "undefined") return;
  var data = JSON.parse(source.textContent);
  var palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  var ink = dark ? "#d4d4d8" : "#27272a";
  var grid = dark ? "#3f3f46" : "#e4e4e7";
  var series = [{}];
  data.labels.forEach(function (label, i) {
    series.push({
      label: label,
      stroke: palette[i % palette.length],
      dash: data.spot[i] ? [6, 4] : undefined,
      width: 2,
      points: { show: false },
      spanGaps: false,
      value: function (u, v) { return v == null ? "—" : "$" + v.toFixed(2); }
    });
  });
  function size() {
    return { width: Math.max(280, holder.clientWidth), height: Math.min(360, Math.max(220, holder.clientWidth * 0.5)) };
  }
  var axis = { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } };
  var opts = Object.assign(size(), {
    series: series,
    axes: [axis, Object.assign({}, axis, { size: 64, values: function (u, vals) { return vals.map(function (v) { return "$" + v.toFixed(2); }); } })],
    legend: { live: false }
  });
  var plot = new uPlot(opts, [data.x].concat(data.series), holder);
  holder.dataset.series = String(data.labels.length);
  window.addEventListener("resize", function () { plot.setSize(size()); });
})();
