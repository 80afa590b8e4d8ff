// A line diff for the side-by-side view: the longest common subsequence of the two texts' lines,
// then the rows of a two-column view, a removed line facing an added one where they pair up.

/** → `[{op: "same"|"removed"|"added", line}]` turning `before` into `after`. */
export function diffLines(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  // lcs[i][j]: the common lines of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const ops = [];
  let [i, j] = [0, 0];
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ op: "same", line: a[i] });
      i++; j++;
    } else if (i < a.length && (j === b.length || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push({ op: "removed", line: a[i++] });
    } else {
      ops.push({ op: "added", line: b[j++] });
    }
  }
  return ops;
}

/**
 * The rows of a side-by-side view: `[{left, right}]`, each side `{op, line}` or `null` (blank).
 * Within a run of changes, removed lines face added ones in order.
 */
export function sideBySide(ops) {
  const rows = [];
  let removed = [];
  let added = [];
  const flush = () => {
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      rows.push({ left: removed[k] ?? null, right: added[k] ?? null });
    }
    removed = [];
    added = [];
  };
  for (const op of ops) {
    if (op.op === "same") {
      flush();
      rows.push({ left: op, right: op });
    } else (op.op === "removed" ? removed : added).push(op);
  }
  flush();
  return rows;
}
