/*
 * dqctl_infer.h: `dqctl diagram --infer`, the pure part: an outcome diagram (.dq text) from
 * the parent/child span trees dqd kept (GET /api/v1/otlp/spans).
 *
 * For every probe whose spans have children, its instances are grouped by the set of
 * children's probes. One set: the children, ordered by start, form *stages* (a child that
 * starts before the stage's children have all ended joins it); a stage of one child is that
 * child, a stage of several is all-to-finish when the parent (or the next stage) waits for
 * the last of them, first-to-finish when it goes on after the first. Stages follow one
 * another (a sequence). Several sets: a probabilistic choice between them, weighted by how
 * often each was seen. A probe with children of its own is referenced as `s:NAME`. What the
 * spans cannot settle (the order of children varies, the parent ends far from any child's
 * end, much untraced time, few instances) is written as a `#` comment next to the line.
 */
#ifndef DQCTL_INFER_H
#define DQCTL_INFER_H

#include <stddef.h>

#include <jansson.h>

/*
 * Infers the diagram from spans (the API's list: objects with "trace_id", "span_id",
 * "parent_id", "probe", "start_ns", "end_ns"). Returns a malloc'ed NUL-terminated .dq
 * text, or NULL with a message in err: no span has a child, the list is malformed, or
 * memory ran out.
 */
char *dqctl_infer(const json_t *spans, const char *service, char *err, size_t err_cap);

#endif /* DQCTL_INFER_H */
