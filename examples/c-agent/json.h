/* Reading the task: one member of a JSON object, as text. A small, strict reader (RFC 8259
 * syntax) so that the agent needs no library beyond libc. */
#ifndef C_AGENT_JSON_H
#define C_AGENT_JSON_H

#include <stddef.h>

typedef enum {
    JSON_OK = 0,
    /* The object has no member of that name. */
    JSON_MISSING,
    /* The member is there but is not a string or a number. */
    JSON_WRONG_TYPE,
    /* The text is not one JSON object (or nests deeper than JSON_MAX_DEPTH). */
    JSON_INVALID,
    /* malloc failed. */
    JSON_NO_MEMORY,
} json_status;

#define JSON_MAX_DEPTH 64

/* Finds the member `key` of the JSON object `text` (`len` bytes, need not end with NUL).
 * A string value is decoded (escapes, \uXXXX and surrogate pairs to UTF-8; a \u0000 is refused
 * as JSON_WRONG_TYPE, it cannot live in a C string); a number is copied as written. On JSON_OK,
 * `*out` is a NUL-terminated string from malloc for the caller to free. The last member of a
 * name wins, as in most JSON readers. */
json_status json_member_text(const char *text, size_t len, const char *key, char **out);

/* A short English description of a status, for error messages. */
const char *json_status_text(json_status status);

#endif
