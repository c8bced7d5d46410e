// The latency picture: two panels, TTFT and ITL, each with p50 and p99 against concurrency. They get their
// own y axes because TTFT is often ten times ITL and a shared axis would flatten the ITL lines to zero.
import { Canvas } from './canvas.mjs';
import { textWidth, GLYPH_H } from './font.mjs';
import { encodePng } from './png.mjs';

const INK = [30, 30, 30];
const GRID = [225, 225, 225];
const P50 = [31, 119, 180];
const P99 = [214, 39, 40];
const S = 2; // font scale

// A step of 1, 2 or 5 times a power of ten giving about `target` intervals up to max.
export function niceStep(max, target = 5) {
  if (!(max > 0)) return 1;
  const raw = max / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

function label(v, step) {
  const decimals = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step)));
  return v.toFixed(decimals);
}

function panel(cv, box, title, xs, series, logX) {
  const { x, y, w, h } = box;
  const values = series.flatMap((s) => s.values).filter((v) => v !== null && Number.isFinite(v));
  const step = niceStep(values.length ? Math.max(...values) : 1);
  const top = Math.max(step, Math.ceil((values.length ? Math.max(...values) : 1) / step) * step);
  const xmin = Math.min(...xs);
  const xmax = Math.max(...xs);
  const fx = (v) => (logX ? Math.log2(v) : v);
  const px = (v) => (xmin === xmax ? x + w / 2 : x + 16 + ((fx(v) - fx(xmin)) / (fx(xmax) - fx(xmin))) * (w - 32));
  const py = (v) => y + h - (v / top) * h;

  for (let t = 0; t <= top + step / 2; t += step) {
    const yy = py(t);
    cv.line(x, yy, x + w, yy, GRID);
    const s = label(t, step);
    cv.text(x - 8 - textWidth(s, S), yy - (GLYPH_H * S) / 2, s, INK, S);
  }
  for (const v of xs) {
    const xx = px(v);
    cv.line(xx, y + h, xx, y + h + 6, INK, 2);
    const s = String(v);
    cv.text(xx - textWidth(s, S) / 2, y + h + 12, s, INK, S);
  }
  cv.line(x, y, x, y + h, INK, 2);
  cv.line(x, y + h, x + w, y + h, INK, 2);
  cv.text(x + w / 2 - textWidth(title, S) / 2, y - 26, title, INK, S);
  const xt = logX ? 'concurrency (log scale)' : 'concurrency';
  cv.text(x + w / 2 - textWidth(xt, S) / 2, y + h + 36, xt, INK, S);
  cv.textUp(x - 70, y + h / 2 + textWidth('latency (ms)', S) / 2, 'latency (ms)', INK, S);

  for (const s of series) {
    let prev = null;
    xs.forEach((xv, i) => {
      const v = s.values[i];
      if (v === null || !Number.isFinite(v)) {
        prev = null;
        return;
      }
      const pt = [px(xv), py(v)];
      if (prev) cv.line(prev[0], prev[1], pt[0], pt[1], s.color, 3, s.dash);
      cv.rect(pt[0] - 4, pt[1] - 4, 9, 9, s.color);
      prev = pt;
    });
  }
  // Legend under the panel, outside the plotted area, so no data point can hide behind it.
  let lx = x + w / 2 - (series.length * 190) / 2;
  for (const s of series) {
    const ly = y + h + 64;
    cv.line(lx, ly + 7, lx + 30, ly + 7, s.color, 3, s.dash);
    cv.text(lx + 40, ly, s.name, INK, S);
    lx += 190;
  }
}

// levels: [{concurrency, ttft_ms: {p50,p99}, itl_ms: {p50,p99}}] in any order.
export function latencyPlot(levels, heading = '') {
  const sorted = [...levels].sort((a, b) => a.concurrency - b.concurrency);
  const xs = sorted.map((l) => l.concurrency);
  const logX = xs.length > 1 && Math.min(...xs) >= 1 && Math.max(...xs) / Math.min(...xs) >= 8;
  const W = 1100;
  const H = 500;
  const cv = new Canvas(W, H);
  if (heading) cv.text(W / 2 - textWidth(heading, S) / 2, 12, heading, INK, S);
  const pick = (k, q) => sorted.map((l) => (l[k] ? l[k][q] : null));
  panel(cv, { x: 110, y: 80, w: 400, h: 300 }, 'TTFT', xs, [
    { name: 'TTFT p50', values: pick('ttft_ms', 'p50'), color: P50, dash: 0 },
    { name: 'TTFT p99', values: pick('ttft_ms', 'p99'), color: P99, dash: 6 },
  ], logX);
  panel(cv, { x: 660, y: 80, w: 400, h: 300 }, 'ITL', xs, [
    { name: 'ITL p50', values: pick('itl_ms', 'p50'), color: P50, dash: 0 },
    { name: 'ITL p99', values: pick('itl_ms', 'p99'), color: P99, dash: 6 },
  ], logX);
  return encodePng(W, H, cv.rgb);
}
