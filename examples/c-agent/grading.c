/* The last number of a reply and its comparison with the answer (see grading.h). */
#include "grading.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool digit_at(const char *text, size_t len, size_t i) {
    return i < len && text[i] >= '0' && text[i] <= '9';
}

static bool is_alnum(char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* Appends `ch` to `number` (capacity `cap`, NUL kept); false when it is full. */
static bool push(char *number, size_t *n, size_t cap, char ch) {
    if (*n + 1 >= cap) {
        return false;
    }
    number[(*n)++] = ch;
    number[*n] = '\0';
    return true;
}

bool last_number(const char *text, size_t len, double *out) {
    bool found = false;
    size_t i = 0;
    while (i < len) {
        if (!digit_at(text, len, i)) {
            i++;
            continue;
        }
        /* Digits longer than this are no answer anyone grades; they still end the number. */
        char number[128];
        size_t n = 0;
        bool fits = true;
        number[0] = '\0';
        if (i > 0 && text[i - 1] == '-' && (i < 2 || !is_alnum(text[i - 2]))) {
            fits = push(number, &n, sizeof number, '-');
        }
        while (digit_at(text, len, i) || (i < len && text[i] == ',' && digit_at(text, len, i + 1))) {
            if (text[i] != ',') {
                fits = fits && push(number, &n, sizeof number, text[i]);
            }
            i++;
        }
        if (i < len && text[i] == '.' && digit_at(text, len, i + 1)) {
            fits = fits && push(number, &n, sizeof number, '.');
            i++;
            while (digit_at(text, len, i)) {
                fits = fits && push(number, &n, sizeof number, text[i]);
                i++;
            }
        }
        if (fits) {
            char *end;
            double value = strtod(number, &end);
            if (*end == '\0' && isfinite(value)) {
                *out = value;
                found = true;
            }
        }
    }
    return found;
}

bool same_number(double value, const char *expected) {
    char number[128];
    size_t n = 0;
    for (const char *p = expected; *p; p++) {
        if (*p == ',') {
            continue;
        }
        /* Decimal notation only: strtod would also take "0x13", "inf" and "nan". */
        if (n + 1 >= sizeof number || !strchr("0123456789+-.eE \t\n\r", *p)) {
            return false;
        }
        number[n++] = *p;
    }
    number[n] = '\0';
    char *end;
    double want = strtod(number, &end);
    if (end == number) {
        return false;
    }
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r') {
        end++;
    }
    return *end == '\0' && isfinite(want) && fabs(value - want) < 1e-9;
}
