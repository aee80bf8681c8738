// Preloaded into the mcpb CLI by scripts/mcpb.sh: `mcpb pack` stamps every zip entry with
// `new Date()`; with this, "now" is SOURCE_DATE_EPOCH, so the same files give the same bundle
// (reproducible-builds.org's convention).
"use strict";
const epoch = Number(process.env.SOURCE_DATE_EPOCH) * 1000;
if (Number.isFinite(epoch)) {
  const RealDate = Date;
  globalThis.Date = class extends RealDate {
    constructor(...args) {
      super(...(args.length ? args : [epoch]));
    }
    static now() {
      return epoch;
    }
  };
}
