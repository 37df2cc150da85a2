/*
 * dq_internal.h: functions shared between the engine's own files, not part of its API.
 */
#ifndef DQ_INTERNAL_H
#define DQ_INTERNAL_H

/* Destroys every cached FFT plan and buffer (dq_engine_cleanup calls it). */
void dq_conv__cleanup(void);

#endif /* DQ_INTERNAL_H */
