// A test CSD (certificado de sello digital) made with openssl at test time:
// an X.509 certificate whose subject carries the RFC in
// x500UniqueIdentifier and a branch in OU (what makes it a CSD, not an
// e.firma), and its RSA key as encrypted PKCS#8 DER, like the SAT's .key.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export type TestCsd = { cerPath: string; keyPath: string; password: string; rfc: string; cer: Buffer; key: Buffer };

const made = new Map<string, TestCsd>();

export function testCsd(rfc = 'EKU9003173C9', name = 'ESCUELA KEMPER URGATE', password = '12345678a'): TestCsd {
  const cached = made.get(rfc);
  if (cached) return cached;
  const dir = mkdtempSync(path.join(tmpdir(), 'csd-'));
  // The files are read by path while the test process lives (wsctl is given them); gone when it ends.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const pem = path.join(dir, 'key.pem');
  const cerPem = path.join(dir, 'cert.pem');
  const cerPath = path.join(dir, 'csd.cer');
  const keyPath = path.join(dir, 'csd.key');
  const subject = `/CN=${name}/name=${name}/O=${name}/x500UniqueIdentifier=${rfc} \\/ XAXX010101000/serialNumber= \\/ XAXX010101HDFXXX00/OU=Matriz`;
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-keyout', pem, '-passout', `pass:${password}`, '-days', '730', '-subj', subject, '-addext', 'keyUsage=critical,digitalSignature,nonRepudiation', '-out', cerPem], { stdio: 'ignore' });
  execFileSync('openssl', ['x509', '-in', cerPem, '-outform', 'DER', '-out', cerPath], { stdio: 'ignore' });
  execFileSync('openssl', ['pkcs8', '-topk8', '-in', pem, '-passin', `pass:${password}`, '-outform', 'DER', '-out', keyPath, '-passout', `pass:${password}`, '-v2', 'aes256'], { stdio: 'ignore' });
  const csd = { cerPath, keyPath, password, rfc, cer: readFileSync(cerPath), key: readFileSync(keyPath) };
  made.set(rfc, csd);
  return csd;
}
