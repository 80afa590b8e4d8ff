// Grading a reply: find the last number in free text ("1,200", "-3", "4.5") and compare it with
// the expected answer numerically. The same rules as examples/math-agent/src/grading.rs; pure
// functions, tested under Node (`npm test`).

const isDigit = (text, i) => i < text.length && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57;
const isAsciiAlnum = (c) => /^[A-Za-z0-9]$/.test(c);

/**
 * The last number written in `text`, or undefined. Thousands separators are dropped ("1,200" is
 * 1200), a `-` directly before the digits makes it negative unless it follows a letter or digit
 * ("3-2" reads 3 and 2), and a trailing full stop is not a decimal point ("19." is 19).
 */
export function lastNumber(text) {
  let last;
  let i = 0;
  while (i < text.length) {
    if (!isDigit(text, i)) {
      i += 1;
      continue;
    }
    const negative = i > 0 && text[i - 1] === '-' && (i < 2 || !isAsciiAlnum(text[i - 2]));
    let number = negative ? '-' : '';
    while (isDigit(text, i) || (text[i] === ',' && isDigit(text, i + 1))) {
      if (text[i] !== ',') {
        number += text[i];
      }
      i += 1;
    }
    if (text[i] === '.' && isDigit(text, i + 1)) {
      number += '.';
      i += 1;
      while (isDigit(text, i)) {
        number += text[i];
        i += 1;
      }
    }
    last = Number(number);
  }
  return last;
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Whether `value` is the number `expected` says (commas allowed, e.g. "1,200"). */
export function sameNumber(value, expected) {
  const want = String(expected).trim().replaceAll(',', '');
  return DECIMAL.test(want) && Math.abs(value - Number(want)) < 1e-9;
}
