// Incremental Server-Sent Events parser (the WHATWG event-stream rules that matter for the OpenAI API):
// lines end in \n, \r\n or \r; "data:" lines of one event are joined by \n; a blank line dispatches; lines
// starting with ':' are comments. Bytes arrive in arbitrary pieces, so a line or a UTF-8 sequence split
// across reads must be carried over, never parsed half.

export class SseParser {
  constructor() {
    this.decoder = new TextDecoder('utf-8');
    this.buffer = '';
    this.pendingCr = false;
    this.data = [];
    this.event = '';
  }

  // Returns the events completed by this piece of bytes: [{event, data}].
  push(bytes) {
    return this.#consume(this.decoder.decode(bytes, { stream: true }));
  }

  // The stream ended: a final event without its blank line is not dispatched (as the spec says).
  end() {
    const out = this.#consume(this.decoder.decode());
    return out;
  }

  #consume(text) {
    const events = [];
    let s = text;
    if (this.pendingCr && s.startsWith('\n')) s = s.slice(1);
    this.pendingCr = false;
    this.buffer += s;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.buffer.slice(start, i);
      if (c === 13) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
      const ev = this.#line(line);
      if (ev) events.push(ev);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  #line(line) {
    if (line === '') {
      if (this.data.length === 0) {
        this.event = '';
        return null;
      }
      const ev = { event: this.event || 'message', data: this.data.join('\n') };
      this.data = [];
      this.event = '';
      return ev;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    return null;
  }
}
