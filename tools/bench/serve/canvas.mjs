// An RGB raster with the few primitives a line chart needs: filled rectangles, thick lines, and text in the
// built-in bitmap font (horizontal, or turned a quarter left for a y-axis title).
import { glyph, ADVANCE, GLYPH_H, GLYPH_W } from './font.mjs';

export class Canvas {
  constructor(width, height, background = [255, 255, 255]) {
    this.width = width;
    this.height = height;
    this.rgb = new Uint8Array(width * height * 3);
    this.rect(0, 0, width, height, background);
  }

  set(x, y, c) {
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const i = (y * this.width + x) * 3;
    this.rgb[i] = c[0];
    this.rgb[i + 1] = c[1];
    this.rgb[i + 2] = c[2];
  }

  get(x, y) {
    const i = (y * this.width + x) * 3;
    return [this.rgb[i], this.rgb[i + 1], this.rgb[i + 2]];
  }

  rect(x, y, w, h, c) {
    for (let yy = Math.max(0, Math.round(y)); yy < Math.min(this.height, Math.round(y + h)); yy++)
      for (let xx = Math.max(0, Math.round(x)); xx < Math.min(this.width, Math.round(x + w)); xx++) this.set(xx, yy, c);
  }

  // Thickness is a square brush stamped along the line; dashed lines skip every other `dash` pixels.
  line(x0, y0, x1, y1, c, thickness = 1, dash = 0) {
    const steps = Math.max(1, Math.ceil(Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0))));
    const r = (thickness - 1) / 2;
    for (let s = 0; s <= steps; s++) {
      if (dash > 0 && Math.floor(s / dash) % 2 === 1) continue;
      const x = x0 + ((x1 - x0) * s) / steps;
      const y = y0 + ((y1 - y0) * s) / steps;
      for (let dy = -Math.floor(r); dy <= Math.ceil(r); dy++)
        for (let dx = -Math.floor(r); dx <= Math.ceil(r); dx++) this.set(x + dx, y + dy, c);
    }
  }

  text(x, y, str, c, scale = 1) {
    let cx = Math.round(x);
    for (const ch of str) {
      const rows = glyph(ch);
      for (let gy = 0; gy < GLYPH_H; gy++)
        for (let gx = 0; gx < GLYPH_W; gx++)
          if (rows[gy][gx]) this.rect(cx + gx * scale, Math.round(y) + gy * scale, scale, scale, c);
      cx += ADVANCE * scale;
    }
  }

  // Reads bottom to top, starting at (x, y) = bottom-left of the text.
  textUp(x, y, str, c, scale = 1) {
    let cy = Math.round(y);
    for (const ch of str) {
      const rows = glyph(ch);
      for (let gy = 0; gy < GLYPH_H; gy++)
        for (let gx = 0; gx < GLYPH_W; gx++)
          if (rows[gy][gx]) this.rect(Math.round(x) + gy * scale, cy - (gx + 1) * scale, scale, scale, c);
      cy -= ADVANCE * scale;
    }
  }
}
