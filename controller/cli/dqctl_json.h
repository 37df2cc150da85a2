/*
 * dqctl_json.h: the getters dqctl's parts read the API's JSON answers with. Each takes an
 * object (or anything: a NULL or a non-object is an object without the key) and a key,
 * and returns the field, or a stated fallback when the field is absent, null or of
 * another type, so a renderer can print "-" for what dqd did not send. Header-only, as
 * dqctl_set_err.h: the parts compiled on their own need no other file for them.
 */
#ifndef DQCTL_JSON_H
#define DQCTL_JSON_H

#include <math.h>

#include <jansson.h>

/* A number field (integer or real); NAN otherwise. */
static inline double jnum(const json_t *obj, const char *key) {
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A string field; dflt otherwise. */
static inline const char *jstr(const json_t *obj, const char *key, const char *dflt) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

/* An integer field as long long; dflt otherwise (a real is not an integer). */
static inline long long jint(const json_t *obj, const char *key, long long dflt) {
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

#endif /* DQCTL_JSON_H */
