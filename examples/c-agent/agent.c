/* Example agent in C: solves a grade-school word problem with one LLM call and grades itself by
 * the last number of the reply, like examples/math-agent. The prompt is the tunable `prompt`
 * resource (a template with a `{question}` placeholder, filled by the host), so a
 * prompt-optimisation algorithm can improve it.
 *
 * `agent.h`/`agent.c` of the bindings are generated from wit/agent.wit at build time
 * (`agl-c-guest build`); this file implements their one export, `exports_agent_rollout`.
 *
 * Ownership (wit-bindgen's C conventions): the export owns its arguments and frees them; what it
 * returns in `err` must come from malloc (the bindings free it after the host has read it);
 * arguments of imports stay ours; what imports return is ours to free. */
#include "agent.h"
#include "grading.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Used when the rollout's resources have no `prompt` template. */
static const char FALLBACK_PROMPT[] = "Solve the problem and end with the number.\nProblem: {question}";

/* A borrowed WIT string of a C string (for import arguments: nothing is freed). */
static agent_string_t borrow(const char *s) {
    agent_string_t out;
    agent_string_set(&out, s);
    return out;
}

/* A NUL-terminated malloc'd copy of a WIT string (NULL when out of memory). */
static char *to_c_string(const agent_string_t *s) {
    char *out = malloc(s->len + 1);
    if (out) {
        memcpy(out, s->ptr, s->len);
        out[s->len] = '\0';
    }
    return out;
}

/* Sets the export's error (malloc'd, formatted like printf) and returns false. */
static bool fail(agent_string_t *err, const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    agent_string_dup(err, message);
    return false;
}

static void log_at(agl_agent_trace_level_t level, const char *message) {
    agent_string_t text = borrow(message);
    agl_agent_trace_log(level, &text);
}

/* `template` with every `{question}` replaced by `question` (the fallback prompt is filled
 * here; a resource template is filled by the host, which records its version). */
static char *fill_fallback(const char *template, const char *question) {
    static const char placeholder[] = "{question}";
    size_t count = 0;
    for (const char *p = strstr(template, placeholder); p; p = strstr(p + 1, placeholder)) {
        count++;
    }
    size_t size = strlen(template) + count * strlen(question) + 1;
    char *out = malloc(size);
    if (!out) {
        return NULL;
    }
    char *w = out;
    const char *r = template;
    for (const char *p = strstr(r, placeholder); p; p = strstr(r, placeholder)) {
        memcpy(w, r, (size_t)(p - r));
        w += p - r;
        memcpy(w, question, strlen(question));
        w += strlen(question);
        r = p + strlen(placeholder);
    }
    strcpy(w, r);
    return out;
}

static const char *resource_kind(const agl_agent_resources_resource_t *resource) {
    switch (resource->tag) {
    case AGL_AGENT_RESOURCES_RESOURCE_PROMPT_TEMPLATE: return "a prompt template";
    case AGL_AGENT_RESOURCES_RESOURCE_LLM: return "an LLM endpoint";
    case AGL_AGENT_RESOURCES_RESOURCE_PROXY_LLM: return "a proxy LLM endpoint";
    }
    return "an unknown resource";
}

/* The prompt for `question` (malloc'd), or NULL with `err` set. */
static char *build_prompt(const char *question, agent_string_t *err) {
    agent_string_t name = borrow("prompt");
    agl_agent_resources_resource_t resource;
    if (!agl_agent_resources_get(&name, &resource)) {
        char *prompt = fill_fallback(FALLBACK_PROMPT, question);
        if (!prompt) {
            fail(err, "out of memory");
        }
        return prompt;
    }
    const char *kind = resource_kind(&resource);
    bool is_template = resource.tag == AGL_AGENT_RESOURCES_RESOURCE_PROMPT_TEMPLATE;
    agl_agent_resources_resource_free(&resource);
    if (!is_template) {
        fail(err, "resource `prompt` is %s, not a prompt template", kind);
        return NULL;
    }

    agent_tuple2_string_string_t var = {borrow("question"), borrow(question)};
    agent_list_tuple2_string_string_t vars = {&var, 1};
    agent_string_t filled, error;
    if (!agl_agent_resources_format_prompt(&name, &vars, &filled, &error)) {
        fail(err, "formatting the prompt: %.*s", (int)error.len, (const char *)error.ptr);
        agent_string_free(&error);
        return NULL;
    }
    char *prompt = to_c_string(&filled);
    agent_string_free(&filled);
    if (!prompt) {
        fail(err, "out of memory");
    }
    return prompt;
}

/* The model's reply to `prompt` as one user message (malloc'd), or NULL with `err` set. */
static char *ask(const char *prompt, agent_string_t *err) {
    agl_agent_llm_message_t message = {
        .role = AGL_AGENT_LLM_ROLE_USER,
        .content = borrow(prompt),
        .tool_call_id = {.is_some = false},
        .tool_calls = {NULL, 0},
    };
    agl_agent_llm_chat_request_t request = {
        .messages = {&message, 1},
        .model = {.is_some = false},
        .temperature = {.is_some = false},
        .max_tokens = {.is_some = false},
        .stop = {NULL, 0},
        .tools = {NULL, 0},
    };
    agl_agent_llm_chat_response_t response;
    agl_agent_llm_llm_error_t error;
    if (!agl_agent_llm_chat(&request, &response, &error)) {
        const agent_string_t *detail = NULL;
        const char *what = "LLM error";
        switch (error.tag) {
        case AGL_AGENT_LLM_LLM_ERROR_MODEL_NOT_ALLOWED: what = "model not allowed"; detail = &error.val.model_not_allowed; break;
        case AGL_AGENT_LLM_LLM_ERROR_BUDGET_EXCEEDED: what = "LLM budget exceeded"; detail = &error.val.budget_exceeded; break;
        case AGL_AGENT_LLM_LLM_ERROR_TIMEOUT: what = "LLM timeout"; break;
        case AGL_AGENT_LLM_LLM_ERROR_INVALID_REQUEST: what = "invalid LLM request"; detail = &error.val.invalid_request; break;
        case AGL_AGENT_LLM_LLM_ERROR_BACKEND: what = "LLM backend error"; detail = &error.val.backend; break;
        }
        if (detail) {
            fail(err, "%s: %.*s", what, (int)detail->len, (const char *)detail->ptr);
        } else {
            fail(err, "%s", what);
        }
        agl_agent_llm_llm_error_free(&error);
        return NULL;
    }
    char *reply = to_c_string(&response.content);
    agl_agent_llm_chat_response_free(&response);
    if (!reply) {
        fail(err, "out of memory");
    }
    return reply;
}

/* One line of data/train.jsonl or data/val.jsonl: {"question": "...", "answer": "19"}. */
static bool read_task(const agent_string_t *task_json, char **question, char **answer, agent_string_t *err) {
    const char *text = (const char *)task_json->ptr;
    json_status status = json_member_text(text, task_json->len, "question", question);
    if (status != JSON_OK) {
        return fail(err, "task member `question`: %s", json_status_text(status));
    }
    status = json_member_text(text, task_json->len, "answer", answer);
    if (status != JSON_OK) {
        free(*question);
        return fail(err, "task member `answer`: %s", json_status_text(status));
    }
    return true;
}

/* One attempt: prompt, one LLM call, the last number of the reply against the answer. */
static bool rollout(const agent_string_t *task_json, agent_option_f64_t *ret, agent_string_t *err) {
    char *question, *answer;
    if (!read_task(task_json, &question, &answer, err)) {
        return false;
    }
    char *prompt = build_prompt(question, err);
    char *reply = prompt ? ask(prompt, err) : NULL;
    bool ok = reply != NULL;
    if (ok) {
        /* Exact match of the final number: "... so she has 27 left." -> 27. */
        double extracted;
        bool has_number = last_number(reply, strlen(reply), &extracted);
        bool correct = has_number && same_number(extracted, answer);
        char line[256];
        if (has_number) {
            snprintf(line, sizeof line, "extracted answer: %.15g (expected %.64s)", extracted, answer);
        } else {
            snprintf(line, sizeof line, "extracted answer: no number (expected %.64s)", answer);
        }
        log_at(AGL_AGENT_TRACE_LEVEL_INFO, line);
        if (!correct) {
            /* Textual feedback beside the reward (agl:agent 0.3.0), for algorithms that learn from
               text: what went wrong on this task, worded as the Rust, Python and JS agents word it. */
            char said[160];
            if (has_number) {
                snprintf(said, sizeof said, "expected %.64s, got %.15g", answer, extracted);
            } else {
                snprintf(said, sizeof said, "expected %.64s, got no number", answer);
            }
            agent_string_t feedback = borrow(said);
            agl_agent_reward_feedback(&feedback);
        }
        /* The final reward; an algorithm reads it from the rollout. */
        ret->is_some = true;
        ret->val = correct ? 1.0 : 0.0;
    }
    free(reply);
    free(prompt);
    free(question);
    free(answer);
    return ok;
}

bool exports_agent_rollout(agent_rollout_context_t *ctx, agent_string_t *task_json, agent_option_f64_t *ret,
                           agent_string_t *err) {
    bool ok = rollout(task_json, ret, err);
    agent_rollout_context_free(ctx);
    agent_string_free(task_json);
    return ok;
}
