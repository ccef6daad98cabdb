// Validates generated documents against their JSON Schemas with ajv (JSON Schema 2020-12, ajv-formats for
// date, time, date-time, uuid): the independent validator of the structured-output tests.
//
//   node tests/tools/validate_json.js CASES.json   (a list of {"schema": ..., "text": "..."})
//   → one JSON line: {"checked": N, "failures": [{"index", "text", "why"}]}
"use strict";
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020");
const addFormats = require("ajv-formats");

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const failures = [];
cases.forEach((c, index) => {
  let doc;
  try {
    doc = JSON.parse(c.text);
  } catch (e) {
    failures.push({ index, text: c.text, why: "not JSON: " + e.message });
    return;
  }
  const validate = ajv.compile(c.schema);
  if (!validate(doc)) failures.push({ index, text: c.text, why: ajv.errorsText(validate.errors) });
});
console.log(JSON.stringify({ checked: cases.length, failures }));
