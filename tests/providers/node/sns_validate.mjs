// Runs AWS SNS messages through the published npm validator `sns-validator` (pinned in
// package.json), for tests/providers/signers/fetched.py: the test's signing shown right by a
// library the test did not write. Its certificate download (`https.get` of SigningCertURL) is
// answered with the test's certificate for that URL alone; every other check is the library's.
//
// stdin: {"certificate": PEM, "cert_url": URL, "bodies": [JSON text]}
// stdout: {"results": [null (valid) | "the library's error"]}
import https from "node:https";
import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const input = JSON.parse(readFileSync(0, "utf8"));

https.get = (url, callback) => {
  const request = new EventEmitter();
  const response = new EventEmitter();
  response.statusCode = String(url) === input.cert_url ? 200 : 404;
  process.nextTick(() => {
    callback(response);
    if (response.statusCode === 200) response.emit("data", Buffer.from(input.certificate));
    response.emit("end");
  });
  return request;
};

const MessageValidator = require("sns-validator");
const validator = new MessageValidator();
const results = [];
for (const body of input.bodies) {
  results.push(
    await new Promise((resolve) =>
      validator.validate(body, (err) => resolve(err ? String(err.message || err) : null)),
    ),
  );
}
process.stdout.write(JSON.stringify({ results }) + "\n");
