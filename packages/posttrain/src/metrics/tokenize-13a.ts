// The `13a` tokenizer of sacreBLEU (mteval-v13a.pl as used by WMT), the default for BLEU.
//
//   1. drop `<skipped>`, join `-\n` line breaks, turn remaining `\n` into spaces;
//   2. if the line has an `&`: unescape &quot; &amp; &lt; &gt; (in that order);
//   3. pad the line with one space on each side and apply, in order,
//      a. a space around every ASCII symbol in  { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
//      b. a space after `.`/`,` that follows a non-digit, and before it,
//      c. a space before `.`/`,` that precedes a non-digit, and after it,
//      d. a space after `-` that follows a digit, and before it;
//   4. collapse whitespace runs (Python `split()`/`join`) and trim.

import { pySplit } from './python-text';

const SYMBOLS = /([{-~[-` -&(-+:-@/])/g;
const PERIOD_COMMA_AFTER_NON_DIGIT = /([^0-9])([.,])/g;
const PERIOD_COMMA_BEFORE_NON_DIGIT = /([.,])([^0-9])/g;
const DASH_AFTER_DIGIT = /([0-9])(-)/g;

/** Tokenize one segment exactly as sacreBLEU's `13a` tokenizer (returns tokens joined by single spaces). */
export function tokenize13a(line: string): string {
  let s = line.replaceAll('<skipped>', '').replaceAll('-\n', '').replaceAll('\n', ' ');
  if (s.includes('&')) {
    s = s.replaceAll('&quot;', '"').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>');
  }
  s = ` ${s} `;
  s = s.replace(SYMBOLS, ' $1 ');
  s = s.replace(PERIOD_COMMA_AFTER_NON_DIGIT, '$1 $2 ');
  s = s.replace(PERIOD_COMMA_BEFORE_NON_DIGIT, ' $1 $2');
  s = s.replace(DASH_AFTER_DIGIT, '$1 $2 ');
  return pySplit(s).join(' ');
}
