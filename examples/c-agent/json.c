/* A strict JSON reader that walks one object and extracts one member as text (see json.h). */
#include "json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    const char *end;
} cursor;

/* A growable byte buffer for decoded strings. */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
} buffer;

static bool buffer_push(buffer *b, const char *bytes, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        char *grown = realloc(b->data, cap);
        if (!grown) {
            return false;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
        c->p++;
    }
}

static bool eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Four hex digits after `\u`. */
static bool read_hex4(cursor *c, uint32_t *out) {
    if (c->end - c->p < 4) {
        return false;
    }
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(c->p[i]);
        if (digit < 0) {
            return false;
        }
        value = value * 16 + (uint32_t)digit;
    }
    c->p += 4;
    *out = value;
    return true;
}

static size_t utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string starting at `"`. With `out`, its decoded bytes are appended there. Sets *has_nul
 * when it holds a \u0000. */
static json_status read_string(cursor *c, buffer *out, bool *has_nul) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '"') {
        return JSON_INVALID;
    }
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') {
            if (out && !out->data && !buffer_push(out, "", 0)) {
                return JSON_NO_MEMORY;
            }
            return JSON_OK;
        }
        if (ch < 0x20) {
            return JSON_INVALID;
        }
        if (ch != '\\') {
            if (out && !buffer_push(out, (const char *)&ch, 1)) {
                return JSON_NO_MEMORY;
            }
            continue;
        }
        if (c->p >= c->end) {
            return JSON_INVALID;
        }
        char escape = *c->p++;
        char decoded[4];
        size_t n = 1;
        switch (escape) {
        case '"': decoded[0] = '"'; break;
        case '\\': decoded[0] = '\\'; break;
        case '/': decoded[0] = '/'; break;
        case 'b': decoded[0] = '\b'; break;
        case 'f': decoded[0] = '\f'; break;
        case 'n': decoded[0] = '\n'; break;
        case 'r': decoded[0] = '\r'; break;
        case 't': decoded[0] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!read_hex4(c, &cp)) {
                return JSON_INVALID;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t low;
                if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u') {
                    return JSON_INVALID;
                }
                c->p += 2;
                if (!read_hex4(c, &low) || low < 0xDC00 || low > 0xDFFF) {
                    return JSON_INVALID;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return JSON_INVALID;
            }
            if (cp == 0) {
                *has_nul = true;
            }
            n = utf8_encode(cp, decoded);
            break;
        }
        default:
            return JSON_INVALID;
        }
        if (out && !buffer_push(out, decoded, n)) {
            return JSON_NO_MEMORY;
        }
    }
    return JSON_INVALID;
}

static bool is_digit(cursor *c) {
    return c->p < c->end && *c->p >= '0' && *c->p <= '9';
}

/* A number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static json_status read_number(cursor *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (!is_digit(c)) return JSON_INVALID;
    if (*c->p == '0') {
        c->p++;
    } else {
        while (is_digit(c)) c->p++;
    }
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (!is_digit(c)) return JSON_INVALID;
        while (is_digit(c)) c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (!is_digit(c)) return JSON_INVALID;
        while (is_digit(c)) c->p++;
    }
    return JSON_OK;
}

static bool read_literal(cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) {
        return false;
    }
    c->p += n;
    return true;
}

static json_status skip_value(cursor *c, int depth);

/* The members of an object after its `{`; `visit` (may be NULL) sees each key and is
 * responsible for reading its value. */
typedef json_status (*member_visitor)(cursor *c, const char *key, size_t key_len, void *state);

static json_status read_object(cursor *c, int depth, member_visitor visit, void *state) {
    if (eat(c, '}')) {
        return JSON_OK;
    }
    for (;;) {
        buffer key = {0};
        bool has_nul = false;
        json_status status = read_string(c, &key, &has_nul);
        if (status == JSON_OK && !eat(c, ':')) {
            status = JSON_INVALID;
        }
        if (status == JSON_OK) {
            /* A key holding \u0000 matches no C string key. */
            status = visit ? visit(c, has_nul ? NULL : key.data, key.len, state) : skip_value(c, depth + 1);
        }
        free(key.data);
        if (status != JSON_OK) {
            return status;
        }
        if (eat(c, '}')) {
            return JSON_OK;
        }
        if (!eat(c, ',')) {
            return JSON_INVALID;
        }
    }
}

static json_status skip_value(cursor *c, int depth) {
    if (depth > JSON_MAX_DEPTH) {
        return JSON_INVALID;
    }
    skip_ws(c);
    if (c->p >= c->end) {
        return JSON_INVALID;
    }
    bool has_nul = false;
    switch (*c->p) {
    case '"':
        return read_string(c, NULL, &has_nul);
    case '{':
        c->p++;
        return read_object(c, depth, NULL, NULL);
    case '[':
        c->p++;
        if (eat(c, ']')) {
            return JSON_OK;
        }
        for (;;) {
            json_status status = skip_value(c, depth + 1);
            if (status != JSON_OK) {
                return status;
            }
            if (eat(c, ']')) {
                return JSON_OK;
            }
            if (!eat(c, ',')) {
                return JSON_INVALID;
            }
        }
    case 't':
        return read_literal(c, "true") ? JSON_OK : JSON_INVALID;
    case 'f':
        return read_literal(c, "false") ? JSON_OK : JSON_INVALID;
    case 'n':
        return read_literal(c, "null") ? JSON_OK : JSON_INVALID;
    default:
        return read_number(c);
    }
}

typedef struct {
    const char *key;
    /* The value of the last member named `key`, or NULL; its status when it was no text. */
    char *found;
    json_status found_status;
    bool seen;
} member_search;

static json_status visit_member(cursor *c, const char *key, size_t key_len, void *state) {
    member_search *search = state;
    if (!key || key_len != strlen(search->key) || memcmp(key, search->key, key_len) != 0) {
        return skip_value(c, 1);
    }
    free(search->found);
    search->found = NULL;
    search->seen = true;
    skip_ws(c);
    const char *start = c->p;
    if (c->p < c->end && *c->p == '"') {
        buffer value = {0};
        bool has_nul = false;
        json_status status = read_string(c, &value, &has_nul);
        if (status != JSON_OK) {
            free(value.data);
            return status;
        }
        if (has_nul) {
            free(value.data);
            search->found_status = JSON_WRONG_TYPE;
            return JSON_OK;
        }
        search->found = value.data;
        search->found_status = JSON_OK;
        return JSON_OK;
    }
    if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) {
        json_status status = read_number(c);
        if (status != JSON_OK) {
            return status;
        }
        size_t n = (size_t)(c->p - start);
        search->found = malloc(n + 1);
        if (!search->found) {
            return JSON_NO_MEMORY;
        }
        memcpy(search->found, start, n);
        search->found[n] = '\0';
        search->found_status = JSON_OK;
        return JSON_OK;
    }
    search->found_status = JSON_WRONG_TYPE;
    return skip_value(c, 1);
}

json_status json_member_text(const char *text, size_t len, const char *key, char **out) {
    cursor c = {text, text + len};
    member_search search = {key, NULL, JSON_MISSING, false};
    json_status status = eat(&c, '{') ? read_object(&c, 0, visit_member, &search) : JSON_INVALID;
    skip_ws(&c);
    if (status == JSON_OK && c.p != c.end) {
        status = JSON_INVALID;
    }
    if (status == JSON_OK && !search.seen) {
        status = JSON_MISSING;
    }
    if (status == JSON_OK) {
        status = search.found_status;
    }
    if (status != JSON_OK) {
        free(search.found);
        return status;
    }
    *out = search.found;
    return JSON_OK;
}

const char *json_status_text(json_status status) {
    switch (status) {
    case JSON_OK: return "ok";
    case JSON_MISSING: return "no such member";
    case JSON_WRONG_TYPE: return "not a string or number";
    case JSON_INVALID: return "not a JSON object";
    case JSON_NO_MEMORY: return "out of memory";
    }
    return "unknown status";
}
