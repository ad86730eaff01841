/**
 * TLS for the stand-ins, signed by a throwaway certificate authority made with `openssl` at test
 * time: an internal CA as most GitHub Enterprise Server installs have. {@link startTlsProxy} puts a
 * TLS listener in front of any loopback HTTP stand-in (the GHES stand-in with its git smart HTTP,
 * the scripted SGLang server), so they are reached over `https://127.0.0.1:PORT` exactly as before.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';

/** A throwaway CA and one server certificate it signed (for `127.0.0.1` and `localhost`). */
export interface ThrowawayCa {
  /** Path of the CA certificate (PEM): what NODE_EXTRA_CA_CERTS / GIT_SSL_CAINFO point at. */
  caFile: string;
  /** Server certificate and key (PEM text). */
  cert: string;
  key: string;
  /** Remove the files. */
  remove(): void;
}

/**
 * Make a CA (RSA 2048, 1 day) and a server certificate with subjectAltName IP:127.0.0.1 and
 * DNS:localhost, with the `openssl` command line (Debian's openssl package).
 *
 * @throws Error when openssl is missing or fails.
 */
export function createThrowawayCa(): ThrowawayCa {
  const dir = mkdtempSync(join(tmpdir(), 'throwaway-ca-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
    '-subj', '/CN=FrogNano test internal CA', '-keyout', at('ca.key'), '-out', at('ca.pem'),
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ); // prettier-ignore
  openssl(
    'req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1',
    '-keyout', at('server.key'), '-out', at('server.csr'),
  ); // prettier-ignore
  writeFileSync(
    at('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
  );
  openssl(
    'x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'),
    '-CAcreateserial', '-days', '1', '-extfile', at('server.ext'), '-out', at('server.pem'),
  ); // prettier-ignore
  return {
    caFile: at('ca.pem'),
    cert: readFileSync(at('server.pem'), 'utf8'),
    key: readFileSync(at('server.key'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A TLS listener on 127.0.0.1 forwarding every connection to a plain TCP port. */
export interface TlsProxy {
  /** `127.0.0.1:PORT` of the TLS side. */
  host: string;
  port: number;
  close(): Promise<void>;
}

/** Listen with TLS (`cert`/`key`) on a random loopback port and forward to `127.0.0.1:targetPort`. */
export async function startTlsProxy(options: {
  targetPort: number;
  cert: string;
  key: string;
}): Promise<TlsProxy> {
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ cert: options.cert, key: options.key }, (client) => {
    const upstream = net.connect(options.targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  });
  // A client that rejects the certificate aborts the handshake: not an error of the proxy.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
