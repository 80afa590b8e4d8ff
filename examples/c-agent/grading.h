/* Grading a reply: the last number in free text ("1,200", "-3", "4.5") compared numerically
 * with the expected answer. The same rules as examples/math-agent's grading.rs. */
#ifndef C_AGENT_GRADING_H
#define C_AGENT_GRADING_H

#include <stdbool.h>
#include <stddef.h>

/* The last number written in `text` (`len` bytes). Thousands separators are dropped ("1,200"
 * is 1200), a `-` directly before the digits makes it negative unless it follows a letter or
 * digit ("3-2" reads 3 and 2), and a trailing full stop is not a decimal point ("19." is 19).
 * Returns false when there is no number. */
bool last_number(const char *text, size_t len, double *out);

/* Whether `value` is the number `expected` says (surrounding spaces and commas allowed, e.g.
 * " 1,200 "); false when `expected` is not a finite number. */
bool same_number(double value, const char *expected);

#endif
