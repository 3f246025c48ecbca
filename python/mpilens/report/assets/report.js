/* mpilens report: the charts of the HTML report, hand-written so the page stays one small file
 * that works offline and draws thousands of ranks fast (canvas for anything large).
 * Every chart reads its data from the JSON block <script id="ml-data">; each section element
 * names its chart with data-chart and its data key with data-key. */
"use strict";

const ML = (() => {
  const data = JSON.parse(document.getElementById("ml-data").textContent);
  const tip = document.createElement("div");
  tip.className = "ml-tip";
  document.body.appendChild(tip);

  /* 3 significant digits without trailing zeros, like Python's "%.3g" (the text report) */
  const g3 = v => String(parseFloat(v.toPrecision(3)));
  const fmt = {
    s(v) {
      if (v === null || v === undefined) return "n/a";
      const a = Math.abs(v);
      if (a >= 100) return v.toFixed(0) + " s";
      if (a >= 1) return g3(v) + " s";
      if (a >= 1e-3) return g3(v * 1e3) + " ms";
      if (a >= 1e-6) return g3(v * 1e6) + " us";
      return g3(v * 1e9) + " ns";
    },
    bytes(v) {
      if (v === null || v === undefined) return "n/a";
      const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return (i === 0 || v >= 100 ? v.toFixed(0) : g3(v)) + " " + u[i];
    },
    n(v) { return v === null || v === undefined ? "n/a" : Math.round(v).toLocaleString("en-US"); },
    pct(v) { return v === null || v === undefined ? "n/a" : (100 * v).toFixed(1) + "%"; },
  };

  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.style.display = "block";
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  function canvasFor(el, width, height) {
    const c = document.createElement("canvas");
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    c.style.width = width + "px";
    c.style.height = height + "px";
    el.appendChild(c);
    const g = c.getContext("2d");
    g.scale(dpr, dpr);
    return [c, g];
  }

  /* Stacked bars per rank: {labels, series: [{name, color, values}], unit} */
  function bars(el, d) {
    const n = d.labels.length;
    const width = Math.max(320, el.clientWidth || 900), height = 220, left = 64, bottom = 28, top = 8;
    const [c, g] = canvasFor(el, width, height);
    const total = d.labels.map((_, i) => d.series.reduce((a, s) => a + (s.values[i] || 0), 0));
    const max = Math.max(...total, 1e-30);
    const w = (width - left - 8) / n;
    g.font = "11px sans-serif";
    g.fillStyle = "#555";
    g.strokeStyle = "#ddd";
    for (let k = 0; k <= 4; k++) {
      const y = top + (height - top - bottom) * (1 - k / 4);
      g.beginPath(); g.moveTo(left, y); g.lineTo(width - 8, y); g.stroke();
      g.fillText(fmt[d.unit](max * k / 4), 2, y + 4);
    }
    for (let i = 0; i < n; i++) {
      let y = height - bottom;
      for (const s of d.series) {
        const h = (s.values[i] || 0) / max * (height - top - bottom);
        g.fillStyle = s.color;
        g.fillRect(left + i * w, y - h, Math.max(w - (w > 4 ? 1 : 0), 0.5), h);
        y -= h;
      }
    }
    const step = Math.ceil(n / Math.max(1, Math.floor((width - left) / 40)));
    g.fillStyle = "#555";
    g.textAlign = "center";
    for (let i = 0; i < n; i += step) g.fillText(d.labels[i], left + (i + 0.5) * w, height - bottom + 14);
    g.textAlign = "start";
    c.addEventListener("mousemove", ev => {
      const r = c.getBoundingClientRect();
      const i = Math.floor((ev.clientX - r.left - left) / w);
      if (i < 0 || i >= n) return hideTip();
      showTip(ev, `<b>rank ${d.labels[i]}</b><br>` +
        d.series.map(s => `${s.name}: ${fmt[d.unit](s.values[i])}`).join("<br>"));
    });
    c.addEventListener("mouseleave", hideTip);
  }

  /* Heatmap of a (possibly block-aggregated) matrix: {n, block, cells: [[src, dst, bytes, msgs]]} */
  function heat(el, d) {
    const size = Math.min(560, Math.max(240, el.clientWidth - 80));
    const margin = 40;
    const [c, g] = canvasFor(el, size + margin + 110, size + 50);
    const cells = d.cells;
    let metric = 2;
    const pick = el.parentElement.querySelector("select.ml-metric");
    const cell = size / d.n;
    const lookup = new Map(cells.map(x => [x[0] * d.n + x[1], x]));
    function color(t) { /* white -> dark red */
      const r = 255 - Math.round(t * 120), gb = 245 - Math.round(t * 245);
      return `rgb(${r},${Math.max(gb, 0)},${Math.max(gb - 10, 0)})`;
    }
    function draw() {
      g.clearRect(0, 0, size + margin + 110, size + 50);
      g.fillStyle = "#fafafa";
      g.fillRect(margin, 0, size, size);
      /* log scale from the smallest to the largest non-empty cell, so that close values of big
         messages still differ; empty cells stay background */
      const vals = cells.map(x => x[metric]).filter(v => v > 0);
      const lo = Math.log(Math.min(...vals, 1e300)), hi = Math.log(Math.max(...vals, 1));
      const t = v => hi > lo ? 0.15 + 0.85 * (Math.log(v) - lo) / (hi - lo) : 1;
      for (const x of cells) {
        if (x[metric] <= 0) continue;
        g.fillStyle = color(t(x[metric]));
        g.fillRect(margin + x[1] * cell, x[0] * cell, Math.max(cell, 1), Math.max(cell, 1));
      }
      g.strokeStyle = "#999";
      g.strokeRect(margin, 0, size, size);
      /* colour legend: log scale from the smallest to the largest cell */
      const lx = margin + size + 14;
      for (let y = 0; y < size; y++) {
        g.fillStyle = color(0.15 + 0.85 * (1 - y / size));
        g.fillRect(lx, y, 12, 1);
      }
      g.strokeRect(lx, 0, 12, size);
      g.fillStyle = "#555";
      g.font = "10px sans-serif";
      const show = metric === 2 ? fmt.bytes : fmt.n;
      g.fillText(show(Math.exp(hi)), lx + 16, 10);
      g.fillText(show(Math.exp((lo + hi) / 2)), lx + 16, size / 2 + 4);
      g.fillText(show(Math.exp(lo)), lx + 16, size);
      if (d.n <= 32 && d.block === 1) { /* rank numbers when they fit */
        g.fillStyle = "#555";
        g.font = "10px sans-serif";
        for (let k = 0; k < d.n; k++) {
          g.fillText(String(k), margin + (k + 0.5) * cell - 3, size + 28);
          g.fillText(String(k), margin - 14, (k + 0.5) * cell + 3);
        }
      }
      g.fillStyle = "#555";
      g.font = "11px sans-serif";
      g.fillText("destination rank \u2192", margin, size + 16 + (d.n <= 32 ? 22 : 0));
      g.save(); g.translate(12, size); g.rotate(-Math.PI / 2); g.fillText("source rank \u2192", 0, 0); g.restore();
    }
    draw();
    if (pick) pick.addEventListener("change", () => { metric = pick.value === "messages" ? 3 : 2; draw(); });
    function label(k) {
      const lo = k * d.block, hi = Math.min(d.ranks, lo + d.block) - 1;
      return lo === hi ? `${lo}` : `${lo}\u2013${hi}`;
    }
    c.addEventListener("mousemove", ev => {
      const r = c.getBoundingClientRect();
      const j = Math.floor((ev.clientX - r.left - margin) / cell), i = Math.floor((ev.clientY - r.top) / cell);
      if (i < 0 || j < 0 || i >= d.n || j >= d.n) return hideTip();
      const x = lookup.get(i * d.n + j);
      showTip(ev, `<b>${label(i)} \u2192 ${label(j)}</b><br>` +
        (x ? `${fmt.bytes(x[2])} in ${fmt.n(x[3])} messages` : "no point-to-point traffic"));
    });
    c.addEventListener("mouseleave", hideTip);
  }

  /* Histogram: {bins: [{label, calls, time}]} */
  function hist(el, d) {
    const width = Math.max(320, el.clientWidth || 700), height = 200, left = 64, bottom = 40, top = 8;
    const [c, g] = canvasFor(el, width, height);
    const n = d.bins.length, max = Math.max(...d.bins.map(b => b.calls), 1);
    const w = (width - left - 8) / Math.max(n, 1);
    g.font = "11px sans-serif";
    for (let k = 0; k <= 4; k++) {
      const y = top + (height - top - bottom) * (1 - k / 4);
      g.strokeStyle = "#ddd"; g.beginPath(); g.moveTo(left, y); g.lineTo(width - 8, y); g.stroke();
      g.fillStyle = "#555"; g.fillText(fmt.n(max * k / 4), 2, y + 4);
    }
    d.bins.forEach((b, i) => {
      const h = b.calls / max * (height - top - bottom);
      g.fillStyle = "#4878a8";
      g.fillRect(left + i * w + 2, height - bottom - h, w - 4, h);
      g.fillStyle = "#555";
      g.save(); g.translate(left + i * w + w / 2, height - bottom + 6); g.rotate(0.6);
      g.fillText(b.label, 0, 6); g.restore();
    });
    c.addEventListener("mousemove", ev => {
      const r = c.getBoundingClientRect();
      const i = Math.floor((ev.clientX - r.left - left) / w);
      if (i < 0 || i >= n) return hideTip();
      const b = d.bins[i];
      showTip(ev, `<b>${b.label}</b><br>${fmt.n(b.calls)} transfers<br>blocking time ${fmt.s(b.time)}`);
    });
    c.addEventListener("mouseleave", hideTip);
  }

  /* Sortable tables: click a header; cells carry data-v with the raw value. */
  function sortable(table) {
    table.querySelectorAll("th").forEach((th, col) => {
      th.addEventListener("click", () => {
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const dir = th.dataset.dir === "desc" ? 1 : -1;
        table.querySelectorAll("th").forEach(h => delete h.dataset.dir);
        th.dataset.dir = dir === 1 ? "asc" : "desc";
        rows.sort((a, b) => {
          const x = a.cells[col].dataset.v ?? a.cells[col].textContent;
          const y = b.cells[col].dataset.v ?? b.cells[col].textContent;
          const nx = parseFloat(x), ny = parseFloat(y);
          const cmp = !isNaN(nx) && !isNaN(ny) ? nx - ny : String(x).localeCompare(String(y));
          return dir * cmp;
        });
        rows.forEach(r => body.appendChild(r));
      });
    });
  }

  /* Timeline: {end, rows, bars: [[row, t0, t1, class, fn]], arrows: [[row0, t0, row1, t1, bytes]],
     classes, colors, functions, bins}. bins (a trace with more calls than bars): {n, width, shares:
     per row, base64 of [class][bin] bytes, 255 = the whole bin in that class}; while more than
     BIN_VIEW bins are in view they are drawn (stacked shares per bin), closer in the bars (the
     longest calls). Drag to zoom into a time window, double-click to zoom out. */
  const BIN_VIEW = 64;
  function timeline(el, d) {
    const nc = d.classes.length;
    const shares = d.bins ? d.bins.shares.map(b => Uint8Array.from(atob(b), ch => ch.charCodeAt(0))) : null;
    const rowH = Math.max(18, Math.min(40, Math.floor(320 / Math.max(d.rows.length, 1)))), left = 90, top = 4, axis = 22;
    const width = Math.max(400, el.clientWidth || 900), height = top + rowH * d.rows.length + axis;
    const [c, g] = canvasFor(el, width, height);
    let t0 = 0, t1 = d.end || 1, dragFrom = null;
    const x = t => left + (t - t0) / (t1 - t0) * (width - left - 8);
    function draw(sel) {
      g.clearRect(0, 0, width, height);
      g.font = "11px sans-serif";
      g.fillStyle = "#555";
      d.rows.forEach((name, i) => g.fillText(name, 4, top + i * rowH + rowH / 2 + 4));
      if (binned()) {
        const n = d.bins.n, w = d.bins.width;
        const k0 = Math.max(0, Math.floor(t0 / w)), k1 = Math.min(n - 1, Math.ceil(t1 / w));
        shares.forEach((sh, row) => {
          const base = top + row * rowH + rowH - 2, h = rowH - 4;
          for (let k = k0; k <= k1; k++) {
            const xa = Math.max(x(k * w), left), xb = x((k + 1) * w);
            let y = base;
            for (let c = 0; c < nc; c++) {
              const v = sh[c * n + k];
              if (!v) continue;
              const hh = v / 255 * h;
              g.fillStyle = d.colors[c];
              g.fillRect(xa, y - hh, Math.max(xb - xa, 0.6), hh);
              y -= hh;
            }
          }
        });
      } else for (const [row, a, b, cls] of d.bars) {
        if (b < t0 || a > t1) continue;
        g.fillStyle = d.colors[cls];
        const xa = Math.max(x(a), left);
        g.fillRect(xa, top + row * rowH + 2, Math.max(x(b) - xa, 0.6), rowH - 4);
      }
      g.strokeStyle = "rgba(30,30,30,0.45)";
      g.lineWidth = 0.8;
      // per time bin, arrows would hide the shares: they come with the calls, zoomed in
      if (!binned()) for (const [r0, a, r1, b] of d.arrows) {
        if (b < t0 || a > t1) continue;
        const xa = x(a), xb = x(b), ya = top + r0 * rowH + rowH / 2, yb = top + r1 * rowH + rowH / 2;
        g.beginPath(); g.moveTo(xa, ya); g.lineTo(xb, yb); g.stroke();
        const ang = Math.atan2(yb - ya, xb - xa);
        g.beginPath(); g.moveTo(xb, yb);
        g.lineTo(xb - 5 * Math.cos(ang - 0.4), yb - 5 * Math.sin(ang - 0.4));
        g.lineTo(xb - 5 * Math.cos(ang + 0.4), yb - 5 * Math.sin(ang + 0.4));
        g.fillStyle = "rgba(30,30,30,0.6)"; g.fill();
      }
      g.fillStyle = "#555";
      for (let k = 0; k <= 5; k++) {
        const t = t0 + (t1 - t0) * k / 5;
        g.fillText(fmt.s(t), Math.min(x(t), width - 50), height - 6);
      }
      if (sel) { g.fillStyle = "rgba(72,120,168,0.15)"; g.fillRect(Math.min(sel[0], sel[1]), 0, Math.abs(sel[1] - sel[0]), height - axis); }
    }
    function binned() { return shares !== null && (t1 - t0) / d.bins.width > BIN_VIEW; }
    draw();
    const tAt = px => t0 + (px - left) / (width - left - 8) * (t1 - t0);
    c.addEventListener("mousedown", ev => { dragFrom = ev.offsetX; });
    c.addEventListener("mouseup", ev => {
      if (dragFrom !== null && Math.abs(ev.offsetX - dragFrom) > 4) {
        const a = tAt(Math.min(dragFrom, ev.offsetX)), b = tAt(Math.max(dragFrom, ev.offsetX));
        t0 = Math.max(a, 0); t1 = b;
      }
      dragFrom = null; draw();
    });
    c.addEventListener("dblclick", () => { t0 = 0; t1 = d.end || 1; draw(); });
    c.addEventListener("mousemove", ev => {
      if (dragFrom !== null) return draw([dragFrom, ev.offsetX]);
      const row = Math.floor((ev.offsetY - top) / rowH), t = tAt(ev.offsetX), tol = 3 * (t1 - t0) / width;
      if (binned() && row >= 0 && row < d.rows.length && t >= 0) {
        const n = d.bins.n, k = Math.min(n - 1, Math.floor(t / d.bins.width)), sh = shares[row];
        const parts = d.classes.map((c, i) => [c, sh[i * n + k]]).filter(p => p[1] > 0)
          .map(p => `${p[0]} ${Math.round(p[1] / 2.55)}%`);
        return showTip(ev, `<b>${d.rows[row]}</b>, the ${fmt.s(d.bins.width)} from ${fmt.s(k * d.bins.width)}<br>` +
          (parts.length ? `in MPI: ${parts.join(", ")}` : "no MPI call"));
      }
      const hit = d.bars.find(b => b[0] === row && b[1] - tol <= t && t <= b[2] + tol);
      if (!hit) return hideTip();
      showTip(ev, `<b>${d.functions[hit[4]]}</b> (${d.rows[row]})<br>at ${fmt.s(hit[1])}, ${fmt.s(hit[2] - hit[1])}`);
    });
    c.addEventListener("mouseleave", hideTip);
  }

  const charts = { bars, heat, hist, timeline };
  function render() {
    document.querySelectorAll("[data-chart]").forEach(el => charts[el.dataset.chart](el, data[el.dataset.key]));
    document.querySelectorAll("table.ml-sortable").forEach(sortable);
    document.body.dataset.renderMs = String(Math.round(performance.now()));
    document.body.dataset.rendered = "true";
  }
  return { render, fmt, charts, data };
})();

window.addEventListener("DOMContentLoaded", () => ML.render());
