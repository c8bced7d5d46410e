// One HTTP/1.1 request over a raw socket, so a test can send bytes no HTTP client would (invalid UTF-8,
// truncated bodies, lying Content-Length). Resolves with the status, headers and body text.
import net from 'node:net';

export function rawRequest(port, { method = 'POST', path = '/v1/chat/completions', headers = {}, body = Buffer.alloc(0),
                                   contentLength, timeoutMs = 30000 } = {}) {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const h = { Host: '127.0.0.1', 'Content-Type': 'application/json', Connection: 'close', ...headers };
  if (method !== 'GET') h['Content-Length'] = String(contentLength ?? buf.length);
  const head = `${method} ${path} HTTP/1.1\r\n` + Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n';
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('connect', () => {
      sock.write(head);
      // Large bodies go in slices so the socket's buffer does not hold 64 MB at once.
      const slice = 1 << 20;
      let off = 0;
      const pump = () => {
        while (off < buf.length) {
          const ok = sock.write(buf.subarray(off, off + slice));
          off += slice;
          if (!ok) return sock.once('drain', pump);
        }
      };
      pump();
    });
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (e) => {
      // The server may answer and close before reading a body it refuses; what it sent still counts.
      if (chunks.length === 0) {
        clearTimeout(timer);
        reject(e);
      }
    });
    sock.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf('\r\n\r\n');
      const headerText = raw.subarray(0, split < 0 ? raw.length : split).toString('latin1');
      const m = headerText.match(/^HTTP\/1\.[01] (\d{3})/);
      if (!m || split < 0) return reject(new Error(`not an HTTP response: ${JSON.stringify(headerText.slice(0, 200))}`));
      let bodyBuf = raw.subarray(split + 4);
      if (/transfer-encoding:\s*chunked/i.test(headerText)) bodyBuf = dechunk(bodyBuf);
      const bodyText = bodyBuf.toString('utf8');
      resolve({ status: Number(m[1]), headers: headerText, body: bodyText });
    });
  });
}

function dechunk(b) {
  const parts = [];
  let i = 0;
  while (i < b.length) {
    const nl = b.indexOf('\r\n', i);
    if (nl < 0) break;
    const n = parseInt(b.subarray(i, nl).toString('latin1'), 16);
    if (!n) break;
    parts.push(b.subarray(nl + 2, nl + 2 + n));
    i = nl + 2 + n + 2;
  }
  return Buffer.concat(parts);
}
