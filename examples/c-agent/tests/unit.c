/* Host-side tests of the agent's pure parts (JSON task reading, grading), compiled natively:
 *   clang -std=c11 -Wall -Wextra -Werror -I. tests/unit.c json.c grading.c -lm -o unit && ./unit
 * (runtime/host/tests/cli/c_agent.rs runs them). Prints each failed check; exits 1 if any failed. */
#include "grading.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* Whether `last_number(text)` finds `want` (or nothing, when `none`). */
static int last_is(const char *text, double want) {
    double got;
    return last_number(text, strlen(text), &got) && got == want;
}

static int no_number(const char *text) {
    double got;
    return !last_number(text, strlen(text), &got);
}

/* Whether member `key` of `json` reads as `want` (NULL: the status must be `status`). */
static int member_is(const char *json, const char *key, json_status status, const char *want) {
    char *out = NULL;
    json_status got = json_member_text(json, strlen(json), key, &out);
    int ok = got == status && (want == NULL || (out && strcmp(out, want) == 0));
    if (!ok) {
        fprintf(stderr, "  %s [%s]: got %s \"%s\"\n", json, key, json_status_text(got), out ? out : "");
    }
    free(out);
    return ok;
}

static void grading_tests(void) {
    CHECK(last_is("12 + 7 = 19. The answer is 19", 19));
    CHECK(last_is("She had 45, gave 18, so 27 are left.", 27));
    CHECK(last_is("It costs $1,200.", 1200));
    CHECK(last_is("about 4.5 km", 4.5));
    CHECK(last_is("the change is -3", -3));
    CHECK(last_is("3-2", 2));
    CHECK(last_is("list: 1, 2, 3", 3));
    CHECK(last_is("19.", 19));
    CHECK(no_number("I do not know."));
    CHECK(no_number(""));
    /* `len` bounds the text: the digits after it are not read. */
    double got;
    CHECK(last_number("7 and 8", 1, &got) && got == 7);

    CHECK(same_number(19, "19"));
    CHECK(same_number(19, " 19.0 "));
    CHECK(same_number(1200, "1,200"));
    CHECK(!same_number(18, "19"));
    CHECK(!same_number(19, "nineteen"));
    CHECK(!same_number(19, "0x13"));
    CHECK(!same_number(19, ""));
    CHECK(!same_number(19, "19 apples"));
}

static void json_tests(void) {
    const char *task = "{\"question\": \"Tom has 12 apples.\", \"answer\": \"19\"}";
    CHECK(member_is(task, "question", JSON_OK, "Tom has 12 apples."));
    CHECK(member_is(task, "answer", JSON_OK, "19"));
    CHECK(member_is(task, "missing", JSON_MISSING, NULL));
    /* Numbers are returned as written. */
    CHECK(member_is("{\"answer\": -1.5e3}", "answer", JSON_OK, "-1.5e3"));
    /* Escapes, \u escapes to UTF-8, surrogate pairs. */
    CHECK(member_is("{\"q\": \"a\\\"b\\\\c\\/d\\n\\t\"}", "q", JSON_OK, "a\"b\\c/d\n\t"));
    CHECK(member_is("{\"q\": \"caf\\u00e9 \\u20ac \\ud83d\\ude00\"}", "q", JSON_OK, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(member_is("{\"q\": \"\"}", "q", JSON_OK, ""));
    /* Other members of any kind are skipped; the last of a name wins; keys are decoded. */
    CHECK(member_is("{\"a\": [1, {\"q\": \"inner\"}, null, true, false, \"x\"], \"q\": \"outer\"}", "q", JSON_OK, "outer"));
    CHECK(member_is("{\"q\": \"first\", \"q\": \"second\"}", "q", JSON_OK, "second"));
    CHECK(member_is("{\"\\u0071\": \"escaped key\"}", "q", JSON_OK, "escaped key"));
    /* Wrong types. */
    CHECK(member_is("{\"q\": [1]}", "q", JSON_WRONG_TYPE, NULL));
    CHECK(member_is("{\"q\": null}", "q", JSON_WRONG_TYPE, NULL));
    CHECK(member_is("{\"q\": \"a\\u0000b\"}", "q", JSON_WRONG_TYPE, NULL));
    /* Not one JSON object. */
    CHECK(member_is("", "q", JSON_INVALID, NULL));
    CHECK(member_is("[\"q\"]", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"open", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"x\"} trailing", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"x\",}", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": 01}", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"\\ud83d\"}", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"bad \\x escape\"}", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"q\": \"raw\ncontrol\"}", "q", JSON_INVALID, NULL));
    CHECK(member_is("{\"a\": tru}", "q", JSON_INVALID, NULL));
    /* Nesting deeper than JSON_MAX_DEPTH is refused, not recursed into without bound. */
    char deep[2 * (JSON_MAX_DEPTH + 10) + 32];
    size_t n = (size_t)sprintf(deep, "{\"a\": ");
    for (int i = 0; i < JSON_MAX_DEPTH + 5; i++) deep[n++] = '[';
    for (int i = 0; i < JSON_MAX_DEPTH + 5; i++) deep[n++] = ']';
    strcpy(deep + n, "}");
    CHECK(member_is(deep, "q", JSON_INVALID, NULL));
    /* The length bounds the text: a NUL-free buffer without terminator is fine. */
    const char bounded[] = {'{', '"', 'q', '"', ':', '"', 'x', '"', '}', 'G', 'A', 'R', 'B'};
    char *out = NULL;
    CHECK(json_member_text(bounded, 9, "q", &out) == JSON_OK && out && strcmp(out, "x") == 0);
    free(out);
}

int main(void) {
    grading_tests();
    json_tests();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("c-agent unit tests: all checks passed\n");
    return 0;
}
