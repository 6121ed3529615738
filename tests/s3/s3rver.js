// s3rver on 127.0.0.1 with bucket "data", checking AWS Signature Version 4 on every request.
// s3rver 3.7.1 checks that the access key exists but leaves SigV4 signatures unchecked
// ("unimplemented" in its authentication middleware), so this puts a verifier in front of
// its routes: it rebuilds the canonical request from what arrived (AWS's SigV4 rules for S3:
// path segments and query encoded once, RFC 3986; the headers the client listed as signed;
// the payload hash it declared), signs it with the account's secret and answers 403
// SignatureDoesNotMatch (AWS's XML) when the signatures differ. Header and presigned-query
// forms are both checked. tests/s3/s3rver_test.sh proves the verifier accepts botocore's
// signatures (aws CLI) and refuses a tampered one.
// Usage: node tests/s3/s3rver.js PORT DIRECTORY   (S3RVER_DIR: where npm installed s3rver)
'use strict';
const crypto = require('crypto');
const path = require('path');

const s3rverDir = process.env.S3RVER_DIR || path.join(__dirname, '..', '..', '.cache', 's3rver');
const S3rver = require(require.resolve('s3rver', { paths: [s3rverDir] }));

const SECRETS = { S3RVER: 'S3RVER' };  // s3rver's built-in account

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const hmac = (key, s) => crypto.createHmac('sha256', key).update(s).digest();
// RFC 3986 encoding as SigV4 wants it: everything but A-Z a-z 0-9 - . _ ~ as %XX (uppercase).
const uriEncode = (s) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
const decode = (s) => decodeURIComponent(s.replace(/\+/g, '%20'));

function canonicalQuery(rawQuery, skip) {
  if (!rawQuery) return '';
  return rawQuery
    .split('&')
    .filter((p) => p.length > 0)
    .map((p) => {
      const eq = p.indexOf('=');
      const k = decode(eq < 0 ? p : p.slice(0, eq));
      const v = eq < 0 ? '' : decode(p.slice(eq + 1));
      return [uriEncode(k), uriEncode(v)];
    })
    .filter(([k]) => k !== skip)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/// null when the request's SigV4 signature is right (or it carries none), else why not.
function checkSignature(req) {
  const [rawPath, rawQuery = ''] = req.url.split(/\?(.*)/s);
  const query = new URLSearchParams(rawQuery);
  let credential, signedHeaders, signature, amzDate, payloadHash;
  const auth = req.headers.authorization || '';
  if (auth.startsWith('AWS4-HMAC-SHA256 ')) {
    const fields = Object.fromEntries(
      auth.slice(17).split(',').map((f) => f.trim().split('=')).map(([k, ...v]) => [k, v.join('=')]),
    );
    credential = fields.Credential;
    signedHeaders = fields.SignedHeaders;
    signature = fields.Signature;
    amzDate = req.headers['x-amz-date'];
    payloadHash = req.headers['x-amz-content-sha256'];
    if (!payloadHash) return 'x-amz-content-sha256 is missing';
  } else if (query.get('X-Amz-Algorithm') === 'AWS4-HMAC-SHA256') {
    credential = query.get('X-Amz-Credential');
    signedHeaders = query.get('X-Amz-SignedHeaders');
    signature = query.get('X-Amz-Signature');
    amzDate = query.get('X-Amz-Date');
    payloadHash = 'UNSIGNED-PAYLOAD';
  } else {
    return null;  // not SigV4: s3rver's own checks apply
  }
  if (!credential || !signedHeaders || !signature || !amzDate) return 'incomplete SigV4 fields';
  const [accessKey, date, region, service, terminator] = credential.split('/');
  const secret = SECRETS[accessKey];
  if (secret === undefined) return null;  // s3rver answers InvalidAccessKeyId itself
  if (terminator !== 'aws4_request' || service !== 's3') return `bad credential scope ${credential}`;
  const headerNames = signedHeaders.split(';');
  if (!headerNames.includes('host')) return 'host is not signed';
  const canonicalHeaders = headerNames
    .map((h) => `${h}:${String(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const canonicalUri = rawPath.split('/').map((seg) => uriEncode(decodeURIComponent(seg))).join('/');
  const canonicalRequest = [
    req.method,
    canonicalUri,
    canonicalQuery(rawQuery, 'X-Amz-Signature'),
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/${terminator}`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  let key = hmac('AWS4' + secret, date);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const expected = crypto.createHmac('sha256', key).update(stringToSign).digest('hex');
  if (expected === signature) return null;
  return `signature mismatch; canonical request was:\n${canonicalRequest}`;
}

const [port, directory] = process.argv.slice(2);
if (!port || !directory) {
  console.error('usage: node s3rver.js PORT DIRECTORY');
  process.exit(2);
}
const server = new S3rver({
  port: Number(port),
  address: '127.0.0.1',
  silent: true,
  directory,
  configureBuckets: [{ name: 'data' }],
});
// First in line, before s3rver's own middleware (Koa composes the array when it listens).
server.middleware.unshift(async (ctx, next) => {
  let problem;
  try {
    problem = checkSignature(ctx.req);
  } catch (e) {  // e.g. a malformed %-escape: refused like any unverifiable request
    problem = `cannot rebuild the canonical request: ${e.message}`;
  }
  if (problem === null) return next();
  if (process.env.S3RVER_LOG_MISMATCH) console.error(`s3rver.js: ${ctx.method} ${ctx.url}: ${problem}`);
  ctx.status = 403;
  ctx.type = 'application/xml';
  ctx.body =
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>' +
    '<Message>The request signature we calculated does not match the signature you provided. ' +
    'Check your key and signing method.</Message></Error>';
});
server.run().catch((e) => {
  console.error(`s3rver.js: ${e.message}`);
  process.exit(1);
});
