// Loopback proxy for the conformance suite, which cannot send a bearer
// token: adds Authorization to every request and passes the rest through.
import http from 'node:http';
const [listen, target, token] = process.argv.slice(2);
const t = new URL(target);
http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: 'Bearer ' + token };
  const p = http.request({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  p.on('error', () => { res.writeHead(502); res.end(); });
  req.pipe(p);
  res.on('close', () => p.destroy());
}).listen(Number(listen), '127.0.0.1');
